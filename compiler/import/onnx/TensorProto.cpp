// Decoding of ONNX TensorProtos (initializers, Constant values, .pb files) and NumPy .npy files
// into DenseElementsAttrs.
#include "compiler/import/onnx/Importer.h"
#include "compiler/import/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

llvm::Error decodeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

size_t bytesPerElement(ElemKind kind) {
  switch (kind) {
  case ElemKind::Bool:
  case ElemKind::I8:
  case ElemKind::U8:
    return 1;
  case ElemKind::F16:
  case ElemKind::BF16:
  case ElemKind::I16:
  case ElemKind::U16:
    return 2;
  case ElemKind::F32:
  case ElemKind::I32:
  case ElemKind::U32:
    return 4;
  case ElemKind::F64:
  case ElemKind::I64:
  case ElemKind::U64:
    return 8;
  }
  llvm_unreachable("unknown element kind");
}

/// Builds the attribute from little-endian element bytes (one byte per bool).
DenseElementsAttr fromBytes(RankedTensorType type, ElemKind kind, llvm::StringRef bytes) {
  if (type.getNumElements() == 0)
    return DenseElementsAttr::get(type, llvm::ArrayRef<Attribute>());
  if (kind == ElemKind::Bool) {
    llvm::SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(type, llvm::ArrayRef<char>(bytes.data(), bytes.size()));
}

template <typename T, typename Field>
llvm::Expected<DenseElementsAttr> fromField(RankedTensorType type, const Field &field) {
  if (static_cast<int64_t>(field.size()) != type.getNumElements())
    return decodeError("holds " + llvm::Twine(field.size()) + " values, its shape needs " +
                       llvm::Twine(type.getNumElements()));
  std::vector<T> values(field.begin(), field.end());
  if (values.empty())
    return DenseElementsAttr::get(type, llvm::ArrayRef<Attribute>());
  return DenseElementsAttr::get(type, llvm::ArrayRef<T>(values));
}

llvm::Expected<std::string> readExternalData(const onnx::TensorProto &tensor,
                                             llvm::StringRef baseDir) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::strtoull(entry.value().c_str(), nullptr, 10);
    else if (entry.key() == "length")
      length = std::strtoull(entry.value().c_str(), nullptr, 10);
  }
  if (location.empty())
    return decodeError("has external data without a location");
  // ONNX: a location is relative to the model's folder. An absolute one, or one that climbs
  // out of it, would let a model read any file into its weights (onnx 1.12's checker lets
  // both through; CVE-2022-25882).
  if (llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return decodeError("has external data at '" + location + "', outside the model's folder "
                       "(a location must be relative to it, without '..')");
  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  // Only a regular file: a device or a FIFO (/dev/zero, a pipe) could be read forever.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) && !llvm::sys::fs::is_regular_file(status))
    return decodeError("has external data in '" + path + "', which is not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return decodeError("has external data in '" + path + "', which cannot be read: " +
                       buffer.getError().message());
  llvm::StringRef all = (*buffer)->getBuffer();
  if (offset > all.size() || (length && *length > all.size() - offset))
    return decodeError("has external data beyond the end of '" + path + "'");
  return all.substr(offset, length ? *length : llvm::StringRef::npos).str();
}

} // namespace

Type elementTypeOf(int onnxType, MLIRContext *ctx) {
  switch (onnxType) {
  case onnx::TensorProto_DataType_FLOAT:
    return Float32Type::get(ctx);
  case onnx::TensorProto_DataType_DOUBLE:
    return Float64Type::get(ctx);
  case onnx::TensorProto_DataType_FLOAT16:
    return Float16Type::get(ctx);
  case onnx::TensorProto_DataType_BFLOAT16:
    return BFloat16Type::get(ctx);
  case onnx::TensorProto_DataType_INT64:
    return IntegerType::get(ctx, 64);
  case onnx::TensorProto_DataType_INT32:
    return IntegerType::get(ctx, 32);
  case onnx::TensorProto_DataType_BOOL:
    return IntegerType::get(ctx, 1);
  case onnx::TensorProto_DataType_INT8:
    return IntegerType::get(ctx, 8);
  case onnx::TensorProto_DataType_INT16:
    return IntegerType::get(ctx, 16);
  case onnx::TensorProto_DataType_UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto_DataType_UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case onnx::TensorProto_DataType_UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case onnx::TensorProto_DataType_UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    return {};
  }
}

std::string onnxTypeName(int onnxType) {
  switch (onnxType) {
  case onnx::TensorProto_DataType_FLOAT: return "float";
  case onnx::TensorProto_DataType_UINT8: return "uint8";
  case onnx::TensorProto_DataType_INT8: return "int8";
  case onnx::TensorProto_DataType_UINT16: return "uint16";
  case onnx::TensorProto_DataType_INT16: return "int16";
  case onnx::TensorProto_DataType_INT32: return "int32";
  case onnx::TensorProto_DataType_INT64: return "int64";
  case onnx::TensorProto_DataType_STRING: return "string";
  case onnx::TensorProto_DataType_BOOL: return "bool";
  case onnx::TensorProto_DataType_FLOAT16: return "float16";
  case onnx::TensorProto_DataType_DOUBLE: return "double";
  case onnx::TensorProto_DataType_UINT32: return "uint32";
  case onnx::TensorProto_DataType_UINT64: return "uint64";
  case onnx::TensorProto_DataType_COMPLEX64: return "complex64";
  case onnx::TensorProto_DataType_COMPLEX128: return "complex128";
  case onnx::TensorProto_DataType_BFLOAT16: return "bfloat16";
  default: return "data type " + std::to_string(onnxType);
  }
}

llvm::Expected<DenseElementsAttr> decodeTensorProto(const onnx::TensorProto &tensor,
                                                    MLIRContext *ctx, llvm::StringRef baseDir) {
  Type element = elementTypeOf(tensor.data_type(), ctx);
  if (!element)
    return decodeError("unsupported dtype " + onnxTypeName(tensor.data_type()));
  ElemKind kind = *kindOf(element);
  llvm::SmallVector<int64_t> shape;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return decodeError("has a negative dimension " + llvm::Twine(d));
    shape.push_back(d);
  }
  auto type = RankedTensorType::get(shape, element);
  size_t expectedBytes = type.getNumElements() * bytesPerElement(kind);

  std::optional<std::string> external;
  if (tensor.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    auto data = readExternalData(tensor, baseDir);
    if (!data)
      return data.takeError();
    external = std::move(*data);
  }
  if (external || tensor.has_raw_data()) {
    llvm::StringRef bytes = external ? llvm::StringRef(*external) : tensor.raw_data();
    if (bytes.size() != expectedBytes)
      return decodeError("holds " + llvm::Twine(bytes.size()) + " bytes, its shape needs " +
                         llvm::Twine(expectedBytes));
    return fromBytes(type, kind, bytes);
  }
  switch (kind) {
  case ElemKind::F32:
    return fromField<float>(type, tensor.float_data());
  case ElemKind::F64:
    return fromField<double>(type, tensor.double_data());
  case ElemKind::I64:
    return fromField<int64_t>(type, tensor.int64_data());
  case ElemKind::I32:
    return fromField<int32_t>(type, tensor.int32_data());
  case ElemKind::U32:
    return fromField<uint32_t>(type, tensor.uint64_data());
  case ElemKind::U64:
    return fromField<uint64_t>(type, tensor.uint64_data());
  case ElemKind::Bool:
  case ElemKind::I8:
  case ElemKind::U8:
  case ElemKind::I16:
  case ElemKind::U16:
  case ElemKind::F16:
  case ElemKind::BF16: {
    // Stored in int32_data: one bool or 8-bit integer, or the 16 bits of one half float or
    // 16-bit integer, per entry.
    const auto &field = tensor.int32_data();
    if (static_cast<int64_t>(field.size()) != type.getNumElements())
      return decodeError("holds " + llvm::Twine(field.size()) + " values, its shape needs " +
                         llvm::Twine(type.getNumElements()));
    std::string bytes;
    for (int32_t v : field) {
      if (kind == ElemKind::Bool) {
        bytes.push_back(v != 0);
      } else if (kind == ElemKind::I8 || kind == ElemKind::U8) {
        bytes.push_back(static_cast<char>(v & 0xff));
      } else {
        bytes.push_back(static_cast<char>(v & 0xff));
        bytes.push_back(static_cast<char>((v >> 8) & 0xff));
      }
    }
    return fromBytes(type, kind, bytes);
  }
  }
  llvm_unreachable("unknown element kind");
}

namespace {

/// Parses a NumPy .npy file (format versions 1-3, little-endian, C order).
llvm::Expected<DenseElementsAttr> parseNpy(llvm::StringRef data, MLIRContext *ctx) {
  if (!data.starts_with("\x93NUMPY") || data.size() < 10)
    return decodeError("is not a .npy file");
  unsigned major = static_cast<unsigned char>(data[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    headerStart = 10;
  } else {
    if (data.size() < 12)
      return decodeError("has a truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    headerStart = 12;
  }
  if (headerStart + headerLen > data.size())
    return decodeError("has a truncated header");
  llvm::StringRef header = data.substr(headerStart, headerLen);
  llvm::StringRef body = data.substr(headerStart + headerLen);

  auto valueOf = [&](llvm::StringRef key) -> llvm::StringRef {
    size_t at = header.find(("'" + key + "'").str());
    if (at == llvm::StringRef::npos)
      return {};
    llvm::StringRef rest = header.substr(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  llvm::StringRef descr = valueOf("descr");
  if (descr.empty() || (descr[0] != '\'' && descr[0] != '"'))
    return decodeError("has no 'descr' in its header");
  descr = descr.drop_front().take_until([](char c) { return c == '\'' || c == '"'; });
  if (valueOf("fortran_order").starts_with("True"))
    return decodeError("is in Fortran order; save it in C order");
  llvm::StringRef shapeText = valueOf("shape");
  if (!shapeText.starts_with("("))
    return decodeError("has no 'shape' in its header");
  shapeText = shapeText.drop_front().take_until([](char c) { return c == ')'; });
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  shapeText.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0)
      return decodeError("has a malformed shape '" + shapeText + "'");
    shape.push_back(d);
  }

  std::optional<ElemKind> kind;
  if (descr == "<f4")
    kind = ElemKind::F32;
  else if (descr == "<f8")
    kind = ElemKind::F64;
  else if (descr == "<f2")
    kind = ElemKind::F16;
  else if (descr == "<i8")
    kind = ElemKind::I64;
  else if (descr == "<i4")
    kind = ElemKind::I32;
  else if (descr == "|b1")
    kind = ElemKind::Bool;
  else if (descr == "|i1")
    kind = ElemKind::I8;
  else if (descr == "|u1")
    kind = ElemKind::U8;
  else if (descr == "<i2")
    kind = ElemKind::I16;
  else if (descr == "<u2")
    kind = ElemKind::U16;
  else if (descr == "<u4")
    kind = ElemKind::U32;
  else if (descr == "<u8")
    kind = ElemKind::U64;
  if (!kind)
    return decodeError("has unsupported dtype '" + descr + "'");
  auto type = RankedTensorType::get(shape, toMlirType(*kind, ctx));
  size_t expected = type.getNumElements() * bytesPerElement(*kind);
  if (body.size() < expected)
    return decodeError("holds " + llvm::Twine(body.size()) + " bytes of data, its shape needs " +
                       llvm::Twine(expected));
  return fromBytes(type, *kind, body.take_front(expected));
}

} // namespace
} // namespace plait::onnx_import

namespace plait {

FailureOr<DenseElementsAttr> loadTensorFile(MLIRContext &ctx, llvm::StringRef path) {
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return emitError(loc) << path << ": cannot read tensor file: " << buffer.getError().message();
  llvm::StringRef data = (*buffer)->getBuffer();
  llvm::Expected<DenseElementsAttr> attr = [&]() -> llvm::Expected<DenseElementsAttr> {
    if (data.starts_with("\x93NUMPY"))
      return onnx_import::parseNpy(data, &ctx);
    onnx::TensorProto tensor;
    if (!tensor.ParseFromArray(data.data(), static_cast<int>(data.size())))
      return onnx_import::decodeError("is neither a .npy file nor an ONNX TensorProto");
    return onnx_import::decodeTensorProto(tensor, &ctx, llvm::sys::path::parent_path(path));
  }();
  if (!attr)
    return emitError(loc) << path << ": tensor file " << llvm::toString(attr.takeError());
  return *attr;
}

} // namespace plait
