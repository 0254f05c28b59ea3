// plait-compile: compiles a model file (.onnx or .mlir) into a plan. A thin main over Pipeline.
#include <iostream>

#include <CLI/CLI.hpp>

#include "compiler/Pipeline.h"

namespace {

/// Flags of the command-line contract (shared/DESIGN.md) whose features are not built yet:
/// they are accepted by the parser so that using one gives a clear message, not "unknown flag".
struct PendingFlags {
  bool train = false;
  std::string optimizer, strategy, device, cluster, memLimit, recompute;
  double lr = 0, weightDecay = 0, momentum = 0, eps = 0;
  std::string betas;
  int worldSize = 1, microBatches = 1;
  bool noFusion = false;

  /// Name of the first pending flag that was used, or "".
  std::string firstUsed(const CLI::App &app) const {
    for (const char *flag : {"--train", "--optimizer", "--lr", "--weight-decay", "--momentum",
                             "--betas", "--eps", "--strategy", "--cluster", "--mem-limit",
                             "--micro-batches", "--recompute", "--no-fusion"})
      if (app.count(flag))
        return flag;
    if (worldSize != 1)
      return "--world-size";
    if (!device.empty() && device != "cpu")
      return "--device " + device;
    return "";
  }
};

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"plait-compile: compile a model into an ahead-of-time plan"};
  plait::CompileOptions options;
  PendingFlags pending;
  std::vector<std::string> constInputs;
  app.add_option("model", options.modelPath, "model file (.onnx or .mlir)")->required();
  app.add_option("-o,--output", options.outputPath, "output plan file (or .mlir with --emit mlir)")
      ->required();
  app.add_option("--emit", options.emit, "what to write: plan or mlir")
      ->check(CLI::IsMember({"plan", "mlir"}));
  app.add_option("--const-input", constInputs,
                 "NAME=FILE(.pb|.npy): bind a graph input to a compile-time constant");
  app.add_option("--report", options.reportPath, "write the compiler's decisions as JSON");
  app.add_flag("--explain", options.explain, "print a readable summary of the plan");
  app.add_option("--dump-dir", options.dumpDir, "write every IR stage into DIR");
  app.add_flag("--train", pending.train);
  app.add_option("--optimizer", pending.optimizer);
  app.add_option("--lr", pending.lr);
  app.add_option("--weight-decay", pending.weightDecay);
  app.add_option("--momentum", pending.momentum);
  app.add_option("--betas", pending.betas);
  app.add_option("--eps", pending.eps);
  app.add_option("--world-size", pending.worldSize);
  app.add_option("--strategy", pending.strategy);
  app.add_option("--device", pending.device);
  app.add_option("--cluster", pending.cluster);
  app.add_option("--mem-limit", pending.memLimit);
  app.add_option("--micro-batches", pending.microBatches);
  app.add_option("--recompute", pending.recompute);
  app.add_flag("--no-fusion", pending.noFusion);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::cerr << "plait-compile: " << e.what() << "\n";
    return 1;
  }
  if (std::string flag = pending.firstUsed(app); !flag.empty()) {
    std::cerr << "plait-compile: " << flag
              << " is not available yet: this build compiles forward graphs for one CPU rank\n";
    return 1;
  }
  for (const std::string &binding : constInputs) {
    size_t eq = binding.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size()) {
      std::cerr << "plait-compile: --const-input expects NAME=FILE, got '" << binding << "'\n";
      return 1;
    }
    options.constInputs[binding.substr(0, eq)] = binding.substr(eq + 1);
  }
  if (options.outputPath == "-" && options.emit != "mlir") {
    std::cerr << "plait-compile: a plan cannot be written to stdout; give -o FILE\n";
    return 1;
  }
  return plait::compileModel(options);
}
