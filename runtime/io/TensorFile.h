// Tensor files by extension: .npy (NumPy) or .pb (ONNX TensorProto).
#pragma once

#include <string>

#include "runtime/Status.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

Status readTensorFile(const std::string &path, HostTensor &out);

/// Reads a whole file into `out`; errors name the file.
Status readFileBytes(const std::string &path, std::string &out);

} // namespace plait::rt
