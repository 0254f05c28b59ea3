// How plait's command-line tools end: exit codes, the one-line "TOOL: message" on stderr, and
// ending a whole MPI job when one rank fails. Shared by plait-run, plait-ckpt, plait-report
// and plait-calibrate.
#pragma once

#include <cstdio>
#include <string>

#include <fmt/core.h>

#include "runtime/Status.h"
#include "runtime/comm/Mpi.h"

namespace plait::tools {

inline constexpr int kExitUserError = 1;
inline constexpr int kExitInternalError = 2;

/// Prints "TOOL: message" on stderr and returns `code`.
inline int fail(const char *tool, int code, const std::string &message) {
  fmt::print(stderr, "{}: {}\n", tool, message);
  return code;
}

/// The exit code of a failed status: 2 for internal errors, 1 for the user's.
inline int exitCode(const rt::Status &status) {
  return status.isInternal() ? kExitInternalError : kExitUserError;
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
