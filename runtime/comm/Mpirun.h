// Launching local ranks: `plait-run --nproc N` hands itself to OpenMPI's mpirun.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Status.h"

namespace plait::rt {

/// `args` without every occurrence of option `name` ("--nproc") and its value, whether
/// given as "--nproc 4" or "--nproc=4".
std::vector<std::string> withoutOption(const std::vector<std::string> &args,
                                       const std::string &name);

/// Replaces this process by `mpirun -np N --oversubscribe [--allow-run-as-root] SELF ARGS`,
/// where SELF is this executable; mpirun's exit status becomes this process's. Returns only
/// when that cannot happen: mpirun is not on PATH, or exec failed.
Status execUnderMpirun(uint32_t nproc, const std::vector<std::string> &args);

/// Runs the same command line as a child process and waits for it: `exitCode` is mpirun's
/// exit status, or 128 + the signal that ended it. Error only when it cannot be started.
Status runUnderMpirun(uint32_t nproc, const std::vector<std::string> &args, int &exitCode);

} // namespace plait::rt
