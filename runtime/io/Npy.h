// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian, C order).
#pragma once

#include <string>

#include "runtime/Status.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// Reads `path`. Supported dtypes: <f4 <f8 <f2 <i8 <i4 |b1 (bool values are normalised to
/// 0/1). Errors are one line naming the file: bad magic, truncated data, Fortran order,
/// big-endian or unsupported dtypes (bfloat16 included: numpy has no such dtype).
Status readNpy(const std::string &path, HostTensor &out);

/// Same, from bytes in memory; `path` names the source in messages.
Status parseNpy(const std::string &bytes, const std::string &path, HostTensor &out);

/// Writes `tensor` as a version 1.0 file (2.0 when the header needs it). bf16 is rejected:
/// convert to f32 first.
Status writeNpy(const std::string &path, const TensorView &tensor);

} // namespace plait::rt
