// The counted step loop; see StepHarness.h.
#include "StepHarness.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "runtime/DataLoader.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/io/Npy.h"

namespace plait::alloc_test {

namespace fs = std::filesystem;

std::string compileSample(const std::string &sample, const std::string &flags,
                          const std::string &planPath) {
  std::string command = std::string(PLAIT_COMPILE_PATH) + " " + PLAIT_SOURCE_DIR + "/samples/" +
                        sample + "/" + sample + ".onnx -o " + planPath + " " + flags + " 2>&1";
  std::string output;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return "cannot run: " + command;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  int rc = pclose(pipe);
  return rc == 0 ? "" : command + " failed:\n" + output;
}

std::string writeSampleData(const std::string &sample, int copies, const std::string &dir) {
  fs::create_directories(dir);
  fs::path inputs = fs::path(PLAIT_SOURCE_DIR) / "samples" / sample / "inputs";
  for (const auto &entry : fs::directory_iterator(inputs)) {
    rt::HostTensor one;
    rt::Status s = rt::readNpy(entry.path().string(), one);
    if (!s.ok())
      return s.message();
    rt::HostTensor many = one;
    many.shape[0] *= copies;
    many.bytes.clear();
    for (int c = 0; c < copies; ++c)
      many.bytes.insert(many.bytes.end(), one.bytes.begin(), one.bytes.end());
    s = rt::writeNpy((fs::path(dir) / entry.path().filename()).string(), many.view());
    if (!s.ok())
      return s.message();
  }
  return "";
}

CountedRun runCounted(const std::string &planPath, const std::string &dataDir, int64_t steps,
                      rt::Communicator *comm, bool shuffle) {
  CountedRun out;
  rt::Plan plan;
  out.status = rt::loadPlan(planPath, plan);
  if (!out.status.ok())
    return out;
  rt::ExecutorOptions options;
  options.rank = comm ? comm->rank() : 0;
  options.comm = comm;
  std::unique_ptr<rt::Executor> exec;
  out.status = rt::Executor::create(plan, options, exec);
  if (!out.status.ok())
    return out;
  rt::DataLoader data;
  out.status = rt::DataLoader::open(dataDir, plan, data, plan.worldSize, options.rank);
  if (!out.status.ok())
    return out;
  if (shuffle)
    data.setShuffle(1);
  bool counting = false;
  for (int64_t step = 1; step <= steps && out.status.ok(); ++step) {
    if (step == 1 || step == 2) {
      if (counting)
        out.firstStep = stopCounting();
      startCounting();
      counting = true;
    }
    out.status = data.loadBatch(step - 1, *exec);
    if (!out.status.ok())
      break;
    if (plan.training)
      exec->setHyperParameters(step, plan.schedule.at(step), plan.schedule.before(step));
    out.status = exec->run();
  }
  if (counting)
    (steps == 1 ? out.firstStep : out.report) = stopCounting();
  out.arenaHighWater = exec->stepArenaHighWater();
  out.workspaceHighWater = exec->stepWorkspaceHighWater();
  out.workspaceBytes = exec->workspaceBytes();
  if (!plan.peakBytes.empty())
    out.plannedPeak = plan.peakBytes[options.rank];
  return out;
}

} // namespace plait::alloc_test
