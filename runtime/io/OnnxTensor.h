// ONNX TensorProto files (.pb), as in ONNX's test_data_set_N/input_K.pb.
#pragma once

#include <string>

#include "runtime/Status.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// Reads a serialised onnx.TensorProto. Element types FLOAT, DOUBLE, FLOAT16, BFLOAT16,
/// INT64, INT32 and BOOL, from raw_data or the typed fields (float_data, double_data,
/// int64_data, int32_data — which also carries bool, f16 and bf16 bit patterns).
/// External data and segments are rejected. `name`, when given, receives the proto's name.
Status readOnnxTensor(const std::string &path, HostTensor &out, std::string *name = nullptr);

/// Same, from bytes in memory; `path` names the source in messages.
Status parseOnnxTensor(const std::string &bytes, const std::string &path, HostTensor &out,
                       std::string *name = nullptr);

} // namespace plait::rt
