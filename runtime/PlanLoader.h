// Loads a plan file, verifies it (structure, version, semantics) and decodes it into rt::Plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/Status.h"

namespace plait::rt {

/// Reads and checks the plan at `path`. Every rejection is a one-line message starting
/// with `path`, naming the offending tensor or instruction, e.g.
///   "model.plan: instruction 7 ('/fc1/Gemm'): input tensor index 99 out of range (12 tensors)".
/// Every kernel name must be known to the registry (findKernel).
Status loadPlan(const std::string &path, Plan &out);

/// Same checks on bytes already in memory; `path` is used only in messages and Plan::path.
Status loadPlanFromBytes(std::vector<uint8_t> bytes, const std::string &path, Plan &out);

} // namespace plait::rt
