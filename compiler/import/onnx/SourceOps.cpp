// Importers of ONNX ops whose results are known at import time: shape queries (Shape, Size),
// constant sources (Constant, ConstantOfShape, Range, EyeLike) and the signal windows.
#include "compiler/import/onnx/Importer.h"

#include <cmath>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// A shape operand as written in the model, e.g. "[5, -1]".
std::string listStr(llvm::ArrayRef<int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

LogicalResult importShape(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t rank = type.getRank();
  int64_t start = ctx.intAttr("start", 0), end = ctx.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  llvm::SmallVector<int64_t> dims(type.getShape().slice(start, end - start));
  ctx.setOutput(0, HostTensor::fromInts(ElemKind::I64, {static_cast<int64_t>(dims.size())}, dims));
  return success();
}

LogicalResult importSize(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  ctx.setOutput(0, HostTensor::splatInt(ElemKind::I64, {}, type.getNumElements()));
  return success();
}

LogicalResult importConstantOfShape(NodeContext &ctx) {
  auto shape = ctx.requireIntsInput(0, "input");
  if (!shape)
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return ctx.error("shape " + listStr(*shape) + " has a negative dimension");
  if (numElementsOf(*shape) > kMaxTensorElements)
    return ctx.error("shape " + listStr(*shape) + " has too many elements");
  HostTensor value = HostTensor::splat(ElemKind::F32, {}, 0.0);
  if (ctx.hasAttr("value")) {
    auto given = ctx.tensorAttr("value");
    if (!given)
      return failure();
    if (given->numElements() != 1)
      return ctx.error("attribute 'value' must hold one element");
    value = *given;
  }
  ctx.setOutput(0, value.isFloat() ? HostTensor::splat(value.kind(), *shape, value.getDouble(0))
                                   : HostTensor::splatInt(value.kind(), *shape, value.getInt(0)));
  return success();
}

LogicalResult importRange(NodeContext &ctx) {
  const HostTensor *start = ctx.requireConstInput(0, "start");
  const HostTensor *limit = start ? ctx.requireConstInput(1, "limit") : nullptr;
  const HostTensor *delta = limit ? ctx.requireConstInput(2, "delta") : nullptr;
  if (!delta)
    return failure();
  if (start->numElements() != 1 || limit->numElements() != 1 || delta->numElements() != 1)
    return ctx.error("start, limit and delta must be scalars");
  ElemKind kind = start->kind();
  if (start->isFloat()) {
    double s = start->getDouble(0), l = limit->getDouble(0), d = delta->getDouble(0);
    if (d == 0)
      return ctx.error("delta is 0");
    double count = std::ceil((l - s) / d);
    if (!(count <= static_cast<double>(kMaxFoldedElements)))
      return ctx.unsupported("Range of more than " + llvm::Twine(kMaxFoldedElements) +
                             " elements (plait folds Range at import time)");
    int64_t n = count > 0 ? static_cast<int64_t>(count) : 0; // -1e19 would not cast
    HostTensor out(kind, {n});
    for (int64_t i = 0; i < n; ++i)
      out.setDouble(i, s + i * d);
    ctx.setOutput(0, std::move(out));
    return success();
  }
  int64_t s = start->getInt(0), l = limit->getInt(0), d = delta->getInt(0);
  if (d == 0)
    return ctx.error("delta is 0");
  // In double: the differences may overflow int64 (the count is only checked against a bound).
  double count = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
  if (count > static_cast<double>(kMaxFoldedElements))
    return ctx.unsupported("Range of more than " + llvm::Twine(kMaxFoldedElements) +
                           " elements (plait folds Range at import time)");
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0; // -1e19 would not cast
  HostTensor out(kind, {n});
  for (int64_t i = 0; i < n; ++i)
    out.setInt(i, s + i * d);
  ctx.setOutput(0, std::move(out));
  return success();
}

LogicalResult importConstant(NodeContext &ctx) {
  if (ctx.hasAttr("value")) {
    auto value = ctx.tensorAttr("value");
    if (!value)
      return failure();
    ctx.setOutput(0, std::move(*value));
    return success();
  }
  if (ctx.hasAttr("value_float")) {
    ctx.setOutput(0, HostTensor::splat(ElemKind::F32, {}, ctx.floatAttr("value_float", 0)));
    return success();
  }
  if (ctx.hasAttr("value_int")) {
    ctx.setOutput(0, HostTensor::splatInt(ElemKind::I64, {}, ctx.intAttr("value_int", 0)));
    return success();
  }
  if (ctx.hasAttr("value_ints")) {
    auto ints = ctx.intsAttr("value_ints");
    ctx.setOutput(0, HostTensor::fromInts(ElemKind::I64, {static_cast<int64_t>(ints.size())}, ints));
    return success();
  }
  if (ctx.hasAttr("value_floats")) {
    auto floats = ctx.floatsAttr("value_floats");
    ctx.setOutput(0, HostTensor::fromDoubles(ElemKind::F32,
                                             {static_cast<int64_t>(floats.size())}, floats));
    return success();
  }
  if (ctx.hasAttr("value_string") || ctx.hasAttr("value_strings"))
    return ctx.unsupported("dtype string");
  if (ctx.hasAttr("sparse_value"))
    return ctx.unsupported("sparse Constant (attribute 'sparse_value')");
  return ctx.error("has no value attribute");
}

LogicalResult importEyeLike(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  if (type.getRank() != 2)
    return ctx.error("input must be 2-D");
  Type element = type.getElementType();
  if (ctx.hasAttr("dtype")) {
    int dtype = static_cast<int>(ctx.intAttr("dtype", 1));
    element = elementTypeOf(dtype, ctx.context());
    if (!element)
      return ctx.unsupported("dtype " + onnxTypeName(dtype));
  }
  if (!fitsFolding(type.getShape()))
    return ctx.unsupported("EyeLike of more than " + llvm::Twine(kMaxFoldedElements) + " elements");
  int64_t k = ctx.intAttr("k", 0), rows = type.getDimSize(0), cols = type.getDimSize(1);
  HostTensor out(*kindOf(element), type.getShape());
  for (int64_t r = 0; r < rows; ++r)
    if (r + k >= 0 && r + k < cols)
      out.setInt(r * cols + r + k, 1);
  ctx.setOutput(0, std::move(out));
  return success();
}

/// HannWindow, HammingWindow, BlackmanWindow: sum_k a_k cos(2 pi k n / D) for n < size, with
/// D = size (periodic) or size - 1 (symmetric), as ONNX's reference.
template <int Kind>
LogicalResult importWindow(NodeContext &ctx) {
  const HostTensor *sizeT = ctx.requireConstInput(0, "size");
  if (!sizeT)
    return failure();
  if (sizeT->numElements() != 1 || sizeT->isFloat())
    return ctx.error("size must be an integer scalar");
  int64_t size = sizeT->getInt(0);
  if (size < 0)
    return ctx.error("size must be >= 0");
  if (size > kMaxFoldedElements)
    return ctx.unsupported("window of more than " + llvm::Twine(kMaxFoldedElements) + " elements");
  int dtype = static_cast<int>(ctx.intAttr("output_datatype", 1));
  Type element = elementTypeOf(dtype, ctx.context());
  if (!element)
    return ctx.unsupported("dtype " + onnxTypeName(dtype) + " (attribute 'output_datatype')");
  bool periodic = ctx.intAttr("periodic", 1) != 0;
  double a0 = Kind == 0 ? 0.5 : Kind == 1 ? 25.0 / 46.0 : 0.42;
  double a1 = Kind == 0 ? -0.5 : Kind == 1 ? -(1.0 - 25.0 / 46.0) : -0.5;
  double a2 = Kind == 2 ? 0.08 : 0.0;
  double denom = periodic ? size : size - 1;
  HostTensor out(*kindOf(element), {size});
  for (int64_t n = 0; n < size; ++n) {
    double phase = denom > 0 ? 2.0 * M_PI * n / denom : 0.0;
    out.setDouble(n, a0 + a1 * std::cos(phase) + a2 * std::cos(2 * phase));
  }
  ctx.setOutput(0, std::move(out));
  return success();
}

} // namespace

void registerSourceOps(OpImporterMap &map) {
  map["Shape"] = importShape;
  map["Size"] = importSize;
  map["ConstantOfShape"] = importConstantOfShape;
  map["Range"] = importRange;
  map["Constant"] = importConstant;
  map["EyeLike"] = importEyeLike;
  map["HannWindow"] = importWindow<0>;
  map["HammingWindow"] = importWindow<1>;
  map["BlackmanWindow"] = importWindow<2>;
}

} // namespace plait::onnx_import
