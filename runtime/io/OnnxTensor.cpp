// ONNX TensorProto decoding with Debian's onnx_proto; protobuf does the wire-format checks.
#include "runtime/io/OnnxTensor.h"

#include <cstring>

#include <onnx/onnx_pb.h>

#include "runtime/io/TensorFile.h"

namespace plait::rt {

namespace {

using onnx::TensorProto;

bool dtypeFromOnnx(int32_t type, DType &out) {
  switch (type) {
  case TensorProto::FLOAT:
    out = DType::F32;
    return true;
  case TensorProto::DOUBLE:
    out = DType::F64;
    return true;
  case TensorProto::FLOAT16:
    out = DType::F16;
    return true;
  case TensorProto::BFLOAT16:
    out = DType::BF16;
    return true;
  case TensorProto::INT64:
    out = DType::I64;
    return true;
  case TensorProto::INT32:
    out = DType::I32;
    return true;
  case TensorProto::BOOL:
    out = DType::I1;
    return true;
  case TensorProto::INT8:
    out = DType::I8;
    return true;
  case TensorProto::UINT8:
    out = DType::U8;
    return true;
  case TensorProto::INT16:
    out = DType::I16;
    return true;
  case TensorProto::UINT16:
    out = DType::U16;
    return true;
  case TensorProto::UINT32:
    out = DType::U32;
    return true;
  case TensorProto::UINT64:
    out = DType::U64;
    return true;
  default:
    return false;
  }
}

std::string onnxTypeName(int32_t type) {
  if (TensorProto::DataType_IsValid(type))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
  return fmt::format("{}", type);
}

// Copies a repeated typed field, converting each element with `convert` to `Elem`.
template <typename Elem, typename Field, typename Convert>
void copyTypedField(const Field &field, std::vector<uint8_t> &bytes, Convert convert) {
  bytes.resize(static_cast<size_t>(field.size()) * sizeof(Elem));
  for (int i = 0; i < field.size(); ++i) {
    Elem v = convert(field.Get(i));
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(Elem), &v, sizeof(Elem));
  }
}

// The typed field that holds `dtype`'s values, and how many values it has.
int typedFieldSize(const TensorProto &proto, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return proto.float_data_size();
  case DType::F64:
    return proto.double_data_size();
  case DType::I64:
    return proto.int64_data_size();
  case DType::U32:
  case DType::U64:
    return proto.uint64_data_size();
  default: // I32, I1, F16, BF16 and the 8- and 16-bit integers travel in int32_data
    return proto.int32_data_size();
  }
}

void copyTypedValues(const TensorProto &proto, DType dtype, std::vector<uint8_t> &bytes) {
  auto same = [](auto v) { return v; };
  switch (dtype) {
  case DType::F32:
    copyTypedField<float>(proto.float_data(), bytes, same);
    break;
  case DType::F64:
    copyTypedField<double>(proto.double_data(), bytes, same);
    break;
  case DType::I64:
    copyTypedField<int64_t>(proto.int64_data(), bytes, same);
    break;
  case DType::I32:
    copyTypedField<int32_t>(proto.int32_data(), bytes, same);
    break;
  case DType::I1:
    copyTypedField<uint8_t>(proto.int32_data(), bytes,
                            [](int32_t v) { return static_cast<uint8_t>(v != 0); });
    break;
  case DType::F16:
  case DType::BF16: // the 16-bit pattern sits in the low half of each int32
  case DType::I16:
  case DType::U16:
    copyTypedField<uint16_t>(proto.int32_data(), bytes,
                             [](int32_t v) { return static_cast<uint16_t>(v & 0xffff); });
    break;
  case DType::I8:
  case DType::U8:
    copyTypedField<uint8_t>(proto.int32_data(), bytes,
                            [](int32_t v) { return static_cast<uint8_t>(v & 0xff); });
    break;
  case DType::U32:
    copyTypedField<uint32_t>(proto.uint64_data(), bytes,
                             [](uint64_t v) { return static_cast<uint32_t>(v); });
    break;
  case DType::U64:
    copyTypedField<uint64_t>(proto.uint64_data(), bytes, same);
    break;
  }
}

} // namespace

Status parseOnnxTensor(const std::string &bytes, const std::string &path, HostTensor &out,
                       std::string *name) {
  TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return Status::errorf("{}: not a valid ONNX TensorProto (protobuf parse failed)", path);
  if (proto.data_location() == TensorProto::EXTERNAL || proto.external_data_size() > 0)
    return Status::errorf("{}: tensors with external data are not supported", path);
  if (proto.has_segment())
    return Status::errorf("{}: segmented tensors are not supported", path);
  DType dtype;
  if (!dtypeFromOnnx(proto.data_type(), dtype))
    return Status::errorf("{}: unsupported ONNX element type {} (supported: FLOAT DOUBLE "
                          "FLOAT16 BFLOAT16 INT64 INT32 INT16 INT8 UINT64 UINT32 UINT16 UINT8 "
                          "BOOL)",
                          path, onnxTypeName(proto.data_type()));

  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Status::errorf("{}: negative dimension in shape {}", path, shapeString(shape));
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) ||
        numel > (uint64_t{1} << 48))
      return Status::errorf("{}: shape {} is too large", path, shapeString(shape));
  }
  uint64_t expectedBytes = numel * dtypeSize(dtype);

  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != expectedBytes)
      return Status::errorf("{}: raw_data has {} bytes, expected {} for shape {} of {}", path,
                            proto.raw_data().size(), expectedBytes, shapeString(shape),
                            dtypeName(dtype));
    out.bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
    if (dtype == DType::I1)
      for (uint8_t &b : out.bytes)
        b = b != 0;
  } else {
    uint64_t count = static_cast<uint64_t>(typedFieldSize(proto, dtype));
    if (count != numel)
      return Status::errorf("{}: {} values stored, expected {} for shape {} of {}", path, count,
                            numel, shapeString(shape), dtypeName(dtype));
    copyTypedValues(proto, dtype, out.bytes);
  }
  out.dtype = dtype;
  out.shape = std::move(shape);
  if (name)
    *name = proto.name();
  return {};
}

Status readOnnxTensor(const std::string &path, HostTensor &out, std::string *name) {
  std::string bytes;
  PLAIT_RETURN_IF_ERROR(readFileBytes(path, bytes));
  return parseOnnxTensor(bytes, path, out, name);
}

} // namespace plait::rt
