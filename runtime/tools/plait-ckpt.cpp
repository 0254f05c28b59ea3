// plait-ckpt: inspects and exports plait checkpoints (runtime/Checkpoint.h). A thin main.
//   plait-ckpt info DIR              which checkpoint --resume would take, and what it holds
//   plait-ckpt export DIR -o F.safetensors [--optimizer | --ema]
//                                    the params (and optimizer state) as whole tensors; with
//                                    --ema, each param's weight EMA in its place
// DIR is a --checkpoint-dir (its newest usable checkpoint) or one DIR/step-N directory.
// Exit codes: 0 ok, 1 user error (one line on stderr), 2 internal error.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "runtime/Checkpoint.h"
#include "runtime/io/Safetensors.h"
#include "runtime/tools/ToolExit.h"

namespace {

using plait::tools::exitCode;
using plait::tools::kExitUserError;

constexpr const char *kTool = "plait-ckpt";
using plait::tools::parseArgs;

int fail(int code, const std::string &message) {
  return plait::tools::fail(kTool, code, message);
}

// DIR/step-N itself, or the newest usable checkpoint of a checkpoint directory.
plait::rt::Status open(const std::string &path, plait::rt::CheckpointIndex &index) {
  if (std::filesystem::exists(std::filesystem::path(path) / "meta.json"))
    return plait::rt::readCheckpoint(path, index);
  std::vector<std::string> skipped;
  plait::rt::Status s = plait::rt::findCheckpoint(path, index, skipped);
  for (const std::string &why : skipped)
    fmt::print(stderr, "plait-ckpt: skipping a damaged checkpoint: {}\n", why);
  return s;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"plait-ckpt: inspect and export plait checkpoints"};
  app.require_subcommand(1);
  std::string dir, output;
  bool withOptimizer = false;
  CLI::App *info = app.add_subcommand("info", "print the checkpoint --resume would take");
  info->add_option("dir", dir, "checkpoint directory or one step-N directory")->required();
  CLI::App *exportCmd =
      app.add_subcommand("export", "write the whole (unsharded) params as safetensors");
  exportCmd->add_option("dir", dir, "checkpoint directory or one step-N directory")->required();
  exportCmd->add_option("-o,--output", output, "FILE.safetensors")->required();
  exportCmd->add_flag("--optimizer", withOptimizer, "include the optimizer state");
  bool ema = false;
  exportCmd
      ->add_flag("--ema", ema,
                 "write each param's weight EMA (a run compiled with --ema-decay) under the "
                 "param's name, as plait-run --save-ema-weights does")
      ->excludes("--optimizer");
  if (auto rc = parseArgs(kTool, app, argc, argv))
    return *rc;

  plait::rt::CheckpointIndex index;
  if (plait::rt::Status s = open(dir, index); !s.ok())
    return fail(exitCode(s), s.message());
  if (*info) {
    uint64_t params = 0, states = 0;
    for (const auto &[name, t] : index.tensors)
      (t.kind == "param" ? params : states) += uint64_t(t.numel());
    std::string updates;
    for (const std::string &u : index.updates)
      updates += (updates.empty() ? "" : ", ") + u;
    std::string plateau;
    if (const auto &p = index.info.plateau)
      plateau = fmt::format("; plateau schedule at lr {:g} (best mean loss {:g}, {} reduction{})",
                            p->lr, p->best, p->reductions, p->reductions == 1 ? "" : "s");
    fmt::print("{}: step {}, saved by {} rank{}, global batch {}, {} samples seen, {} files; "
               "{} params ({} elements), {} optimizer tensors ({} elements{}); model {}{}\n",
               index.path, index.info.step, index.worldSize, index.worldSize == 1 ? "" : "s",
               index.info.globalBatch, index.info.samplesSeen, index.files.size(),
               std::count_if(index.tensors.begin(), index.tensors.end(),
                             [](const auto &t) { return t.second.kind == "param"; }),
               params,
               std::count_if(index.tensors.begin(), index.tensors.end(),
                             [](const auto &t) { return t.second.kind != "param"; }),
               states, updates.empty() ? "" : ", updated by " + updates, index.model, plateau);
    return 0;
  }
  // --ema: a param's entry is read from its average "<param>.ema" where the run kept one.
  auto averageOf = [&](const std::string &name) {
    auto it = index.tensors.find(name + ".ema");
    return ema && it != index.tensors.end() && it->second.kind != "param" ? it->first : name;
  };
  if (ema && std::none_of(index.tensors.begin(), index.tensors.end(), [&](const auto &t) {
        return t.second.kind == "param" && averageOf(t.first) != t.first;
      }))
    return fail(kExitUserError, index.path + ": --ema: the checkpoint holds no weight EMA (its "
                                             "run was not compiled with --ema-decay)");
  std::vector<plait::rt::HostTensor> values;
  std::vector<std::pair<std::string, plait::rt::TensorView>> entries;
  values.reserve(index.tensors.size());
  for (const auto &[name, t] : index.tensors) {
    if (t.kind != "param" && !withOptimizer)
      continue;
    plait::rt::HostTensor &value = values.emplace_back();
    if (plait::rt::Status s = plait::rt::assembleCheckpointTensor(index, averageOf(name), value);
        !s.ok())
      return fail(kExitUserError, s.message());
    entries.emplace_back(name, value.view());
  }
  if (plait::rt::Status s = plait::rt::writeSafetensors(output, entries); !s.ok())
    return fail(kExitUserError, s.message());
  fmt::print("{}: {} tensors of step {} -> {}\n", index.path, entries.size(), index.info.step,
             output);
  return 0;
}
