// What this rank is doing, kept where a signal handler can read it: when the launcher ends a
// multi-rank job because another rank died, each survivor says which step and collective it
// was in before it exits.
#pragma once

#include <cstdint>

namespace plait::rt {

struct Plan;

namespace activity {

/// The plan and rank the messages name (null: no plan is running; the handler then exits
/// without a message).
void setRun(const Plan *plan, uint32_t rank);
/// The 1-based step now running (0: not in a step).
void setStep(int64_t step);
/// The collective instruction this rank is blocked on, or -1 when it is not waiting.
void setWaiting(int64_t instruction);

/// On SIGTERM or SIGINT (what mpirun sends the other ranks when one fails), writes one line
///   "plait-run: PLAN: rank R: stopped by the launcher in step S while waiting for
///    all_reduce 'NAME' (instruction I): another rank failed or the job was cancelled"
/// to stderr and exits with 128 + the signal number.
void installTerminationMessage();

} // namespace activity
} // namespace plait::rt
