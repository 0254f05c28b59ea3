// The plait-compile pipeline: load a model, verify, plan memory, write the plan and report.
#pragma once

#include <map>
#include <string>

namespace plait {

struct CompileOptions {
  std::string modelPath;
  std::string outputPath;                     // "-" for stdout (only with emit = "mlir")
  std::string emit = "plan";                  // "plan" | "mlir"
  std::map<std::string, std::string> constInputs; // graph input name -> .pb/.npy file
  std::string reportPath;                     // --report
  bool explain = false;                       // --explain: human summary on stdout
  std::string dumpDir;                        // --dump-dir: every stage as text
  int64_t alignment = 64;
};

/// Runs the whole pipeline. Returns 0 on success, 1 on a user error (after printing one
/// line on stderr), 2 on an internal error.
int compileModel(const CompileOptions &options);

} // namespace plait
