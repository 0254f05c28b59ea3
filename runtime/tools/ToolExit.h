// How plait's command-line tools end: exit codes, the one-line "TOOL: message" on stderr
// (also for a bad flag), ending a whole MPI job when one rank fails, and the options two tools
// share. Shared by plait-run, plait-ckpt, plait-report
// and plait-calibrate.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "runtime/Status.h"
#include "runtime/comm/Mpi.h"

namespace plait::tools {

inline constexpr int kExitUserError = 1;
inline constexpr int kExitInternalError = 2;
inline constexpr int kExitDiverged = 3; // plait-run: a non-finite loss or gradient norm

/// Prints "TOOL: message" on stderr, one line whatever the message quotes (a path holding a
/// newline: its control characters escaped), and returns `code`.
inline int fail(const char *tool, int code, const std::string &message) {
  fmt::print(stderr, "{}: {}\n", tool, rt::printable(message));
  return code;
}

/// Parses the command line: nullopt to go on, else the exit code to return (0 after --help;
/// for a bad flag, kExitUserError after one line "TOOL: message (see --help)").
inline std::optional<int> parseArgs(const char *tool, CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) { // --help
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return fail(tool, kExitUserError, std::string(e.what()) + " (see --help)");
  }
  return std::nullopt;
}

/// The exit code of a failed status: 2 for internal errors, 3 for a diverged training run,
/// 1 for the user's.
/// The --reduce-algorithm option of plait-run and plait-calibrate (runtime/comm/Mpi.h).
inline CLI::Option *addReduceAlgorithmOption(CLI::App &app, rt::mpi::ReduceAlgorithm &out,
                                             const std::string &help) {
  using rt::mpi::ReduceAlgorithm;
  std::map<std::string, ReduceAlgorithm> names;
  for (ReduceAlgorithm a : {ReduceAlgorithm::Auto, ReduceAlgorithm::Pairwise, ReduceAlgorithm::Mpi})
    names.emplace(rt::mpi::reduceAlgorithmName(a), a);
  return app.add_option("--reduce-algorithm", out, help)
      ->transform(CLI::CheckedTransformer(names, CLI::ignore_case))
      ->default_str(rt::mpi::reduceAlgorithmName(out));
}

inline int exitCode(const rt::Status &status) {
  return status.isInternal()   ? kExitInternalError
         : status.isDiverged() ? kExitDiverged
                               : kExitUserError;
}

/// fail(), and then, in a multi-rank job, the end of every rank: the others may be waiting
/// for this one in a collective.
inline int failRank(const char *tool, int code, const std::string &message) {
  fail(tool, code, message);
  if (rt::mpi::active() && rt::mpi::launchedWorldSize() > 1) {
    std::fflush(nullptr);
    rt::mpi::abortJob(code);
  }
  rt::mpi::finalize();
  return code;
}

} // namespace plait::tools
