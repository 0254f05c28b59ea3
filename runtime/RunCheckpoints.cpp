#include "runtime/RunCheckpoints.h"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/io/Safetensors.h"

namespace plait::rt {

namespace {

/// Appends every tensor of `kind` whose plan name `keep` accepts as a world-1 run holds it:
/// a whole one as it is, a sharded one gathered from its group (every rank takes part, in
/// plan order) and split into its pieces, whose bytes `gathered` keeps.
template <typename Keep>
Status wholeTensors(const TensorStore &store, Communicator &comm, TensorKind kind, Keep keep,
                    std::deque<std::vector<uint8_t>> &gathered,
                    std::vector<std::pair<std::string, TensorView>> &out) {
  const Plan &plan = store.plan();
  for (uint32_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor &tensor = plan.tensors[t];
    if (tensor.kind != kind || !keep(tensor.name))
      continue;
    if (!tensor.sharded) {
      out.emplace_back(tensor.name, store.view(t));
      continue;
    }
    PLAIT_RETURN_IF_ERROR(gatherShards(store, comm, t, gathered.emplace_back()));
    for (const ShardPiece &p : tensor.shard.pieces)
      out.emplace_back(p.name,
                       TensorView{gathered.back().data() + p.offset * dtypeSize(tensor.dtype),
                                  tensor.dtype, p.shape});
  }
  return {};
}

} // namespace

Status resumeFromCheckpoint(const RunOptions &options, const Plan &plan, const TensorStore &store,
                            Communicator &comm, DataLoader *data, CheckpointInfo &resumed) {
  CheckpointIndex index;
  std::vector<std::string> skipped;
  Status found = findCheckpoint(options.checkpointDir, index, skipped);
  if (comm.rank() == 0)
    for (const std::string &why : skipped)
      fmt::print(stderr, "plait-run: skipping a damaged checkpoint: {}\n", why);
  if (!found.ok())
    return found.withPrefix("--resume: ");
  // Every rank looked at the same files; check that they chose the same step.
  int64_t mine = index.info.step, sum = 0;
  PLAIT_RETURN_IF_ERROR(sumOverWorld(comm, &mine, &sum, 1));
  if (sum != mine * int64_t(comm.size()))
    return Status::errorf("--resume: the ranks chose different checkpoints in {} (files "
                          "changing while the run starts?)",
                          options.checkpointDir);
  PLAIT_RETURN_IF_ERROR(restoreCheckpoint(index, store)); // first: is it this model at all?
  resumed = index.info;
  if (data) {
    // What a checkpoint written before these were recorded leaves out, as its run (of one
    // global batch throughout) took the data.
    auto [position, epoch] = data->fromStart(resumed.step, resumed.globalBatch);
    if (resumed.dataPosition < 0)
      resumed.dataPosition = position;
    if (resumed.dataEpoch < 0)
      resumed.dataEpoch = epoch;
    data->setOrigin(resumed.step, resumed.dataPosition, resumed.dataEpoch);
  }
  if (comm.rank() == 0) {
    fmt::print(stderr, "plait-run: resuming after step {} from {} (saved by {} rank{})\n",
               index.info.step, index.path, index.worldSize, index.worldSize == 1 ? "" : "s");
    if (resumed.globalBatch != plan.globalBatch())
      fmt::print(stderr,
                 "plait-run: its steps took a global batch of {} samples, {} takes {}: "
                 "the data continues at sample {} ({} samples seen)\n",
                 resumed.globalBatch, plan.path, plan.globalBatch(),
                 std::max<int64_t>(resumed.dataPosition, 0), resumed.samplesSeen);
    // Another order from here on: allowed (a choice), but said.
    int64_t shuffleSeed = options.shuffle ? int64_t(options.seed) : -1;
    auto order = [](int64_t seed) {
      return seed < 0 ? std::string("in order") : fmt::format("shuffled with seed {}", seed);
    };
    if (data && resumed.shuffleSeed != shuffleSeed)
      fmt::print(stderr,
                 "plait-run: its run took the data {}, this one takes it {}: the "
                 "samples of the rest of the epoch change\n",
                 order(resumed.shuffleSeed), order(shuffleSeed));
  }
  return {};
}

void resumeSchedule(const Plan &plan, const RunOptions &options, const CheckpointInfo &resumed,
                    bool lead, LrController &lrs) {
  if (resumed.step == 0)
    return;
  if (lrs.readsLoss() && resumed.plateau) {
    lrs.restore(*resumed.plateau);
    if (lead)
      fmt::print(stderr,
                 "plait-run: the plateau schedule continues at lr {:g} (best mean "
                 "loss {:g}, {} reduction{} so far)\n",
                 resumed.plateau->lr, resumed.plateau->best, resumed.plateau->reductions,
                 resumed.plateau->reductions == 1 ? "" : "s");
  } else if (lrs.readsLoss() && lead) {
    fmt::print(stderr,
               "plait-run: the checkpoint in {} records no plateau schedule (its run "
               "had another): the plateau schedule starts afresh at lr {:g}\n",
               options.checkpointDir, plan.schedule.lr);
  } else if (resumed.plateau && lead) {
    fmt::print(stderr,
               "plait-run: the checkpoint's plateau schedule (at lr {:g}) is not "
               "continued: {} has the {} schedule\n",
               resumed.plateau->lr, plan.path, plan.schedule.kind);
  }
}

std::string plateauSummary(const LrController &lrs) {
  if (!lrs.readsLoss())
    return "";
  const PlateauState &p = lrs.plateau();
  return p.reductions == 0 ? ", lr not reduced"
                           : fmt::format(", lr reduced {} time{} to {:g}", p.reductions,
                                         p.reductions == 1 ? "" : "s", p.lr);
}

Status openStepLog(const std::string &path, int64_t resumedStep, std::ofstream &log) {
  std::vector<std::string> kept;
  if (resumedStep > 0) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (!record.is_discarded() && record.contains("step") && record["step"].is_number_integer() &&
          record["step"].get<int64_t>() <= resumedStep)
        kept.push_back(line);
    }
  }
  log.open(path, std::ios::trunc);
  if (!log)
    return Status::errorf("--log-jsonl {}: cannot open for writing", path);
  for (const std::string &line : kept)
    log << line << '\n';
  log.flush();
  return {};
}

bool checkpointDue(const RunOptions &options, int64_t step) {
  return !options.checkpointDir.empty() &&
         ((options.checkpointEvery > 0 && step % options.checkpointEvery == 0) ||
          step == options.steps);
}

CheckpointInfo checkpointAfter(const RunOptions &options, const Plan &plan, int64_t step,
                               const CheckpointInfo &resumedFrom, const DataLoader *data,
                               const LrController &lrs) {
  CheckpointInfo info;
  info.step = step;
  info.globalBatch = plan.globalBatch();
  info.seed = options.seed;
  info.samplesSeen = resumedFrom.samplesSeen + (step - resumedFrom.step) * plan.globalBatch();
  info.dataPosition = data ? data->position(step) : -1;
  info.dataEpoch = data ? data->epoch(step) : -1;
  info.shuffleSeed = options.shuffle ? int64_t(options.seed) : -1;
  if (plan.training && lrs.readsLoss())
    info.plateau = lrs.plateau();
  return info;
}

Status saveWeights(const std::string &path, const TensorStore &store, Communicator &comm,
                   bool writer, bool ema) {
  std::deque<std::vector<uint8_t>> gathered;
  std::vector<std::pair<std::string, TensorView>> params, averages;
  PLAIT_RETURN_IF_ERROR(wholeTensors(
      store, comm, TensorKind::Param, [](const std::string &) { return true; }, gathered, params));
  if (ema) {
    PLAIT_RETURN_IF_ERROR(wholeTensors(
        store, comm, TensorKind::State,
        [](const std::string &name) { return !averagedParam(name).empty(); }, gathered, averages));
    std::map<std::string, TensorView> byParam;
    for (const auto &[name, view] : averages)
      byParam.emplace(averagedParam(name), view);
    for (auto &[name, view] : params)
      if (auto it = byParam.find(name); it != byParam.end())
        view = it->second;
  }
  return writer ? writeSafetensors(path, params) : Status();
}

} // namespace plait::rt
