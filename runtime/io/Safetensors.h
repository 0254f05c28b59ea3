// safetensors files (https://github.com/huggingface/safetensors format): 8-byte header
// length, JSON header, then the raw little-endian tensor bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/Status.h"
#include "runtime/Tensor.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// Writes `tensors` (name, view) to `path` atomically (temporary file, then rename). Names
/// must be unique. Tensors are stored in the given order.
Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, TensorView>> &tensors);

/// Reads a whole safetensors file: every tensor, in file (data offset) order, with its
/// name. Rejects with "PATH: ..." a short or oversized header, JSON that is not an object of
/// {dtype, shape, data_offsets}, an unknown dtype, offsets that overlap, leave gaps, lie
/// past the end of the file or disagree with the shape, and a file longer than its data.
Status readSafetensors(const std::string &path,
                       std::vector<std::pair<std::string, HostTensor>> &out);
/// The same on bytes in memory; `path` names them in messages.
Status parseSafetensors(const uint8_t *data, size_t size, const std::string &path,
                        std::vector<std::pair<std::string, HostTensor>> &out);

} // namespace plait::rt
