// plait-run for a plan compiled with --device cuda: the CUDA executor driven step by step, as
// runtime/RunPlan.cpp drives the CPU executor.
#pragma once

#include <string>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/RunPlan.h"
#include "runtime/comm/Comm.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// Runs `options.steps` steps of the CUDA plan `plan` as rank comm.rank() on batches from
/// --data (or the fixed `inputs` read from --input, by input index), writes the step log,
/// the outputs, --save-weights and --kernel-times from rank 0, and sets rank 0's `summary`.
/// Options the CUDA backend does not have yet (checkpoints, --resume, --trace, --save-weights
/// of sharded params) are refused in one line before anything runs. Without the CUDA toolkit: "no CUDA device" (NoCudaDevice.cpp).
Status runCudaPlanOnRank(const RunOptions &options, Plan &plan, Communicator &comm,
                         const std::vector<HostTensor> &inputs, std::string &summary);

} // namespace plait::rt
