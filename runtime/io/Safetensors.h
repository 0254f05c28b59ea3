// safetensors files (https://github.com/huggingface/safetensors format): 8-byte header
// length, JSON header, then the raw little-endian tensor bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

/// Writes `tensors` (name, view) to `path` atomically (temporary file, then rename). Names
/// must be unique. Tensors are stored in the given order.
Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, TensorView>> &tensors);

} // namespace plait::rt
