// Importers of ONNX's quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv, as plait's float and integer ops
// (casts, arithmetic, round, clamp, matmul, conv2d). A quantized model runs; imported for
// training, a QuantizeLinear / DequantizeLinear pair (what a quantization-aware model exports
// as) passes the gradient straight through where x was within range, as PyTorch's FakeQuantize.
//
// Integer products (MatMulInteger, ConvInteger and the QLinear ops) are computed in f64 from
// the zero-point-shifted operands, which is exact for every product of 8-bit integers summed
// over fewer than 2^37 terms, and is BLAS's dgemm and the f64 convolution rather than a scalar
// integer loop; the int32 result is that sum converted. Requantization follows the reference
// (and ONNX Runtime): the accumulator in f32, times the f32 multiplier scale_a * scale_b /
// scale_y, rounded half to even, plus the output's zero point, saturated.
#include "compiler/import/onnx/Importer.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The shape a quantization parameter of `count` elements takes to broadcast against a
/// rank-`rank` tensor: [] per tensor (one element), [1, ..., count, ..., 1] along `axis`.
llvm::SmallVector<int64_t> paramShape(int64_t count, int64_t rank, int64_t axis) {
  if (count == 1)
    return {};
  llvm::SmallVector<int64_t> shape(rank, 1);
  shape[axis] = count;
  return shape;
}

/// Checks that parameter input `i` of type `t` holds one element, or `extent` along `axis`.
LogicalResult checkParamCount(NodeContext &ctx, unsigned i, RankedTensorType t, int64_t rank,
                              int64_t axis, int64_t extent) {
  int64_t count = t.getNumElements();
  bool perAxis = count != 1;
  if (perAxis && axis < 0)
    return ctx.error("input '" + ctx.inputName(i) + "' holds " + llvm::Twine(count) +
                     " elements; it must hold one (per tensor)" +
                     (ctx.hasAttr("axis") ? ", or attribute 'axis' be within rank " +
                                                llvm::Twine(rank)
                                          : llvm::Twine("")));
  if (perAxis && (t.getRank() != 1 || count != extent))
    return ctx.error("input '" + ctx.inputName(i) + "' must hold one element (per tensor) or " +
                     llvm::Twine(extent) + " (per axis " + llvm::Twine(axis) +
                     "), got " + llvm::Twine(count));
  return success();
}

/// Quantization parameter input `i` (a scale or zero point) as a value of `type` that
/// broadcasts against a rank-`rank` tensor quantized along `axis` of extent `extent`: one
/// element (per tensor) as a scalar, or `extent` elements of a 1-D tensor (per axis). A
/// parameter known at import becomes a constant (an initializer is read as one, never
/// trained); a computed one (DynamicQuantizeLinear's) is reshaped and cast. Value() when the
/// input is absent; failure after the node's error.
FailureOr<Value> quantParam(NodeContext &ctx, unsigned i, Type type, int64_t rank, int64_t axis,
                            int64_t extent) {
  if (!ctx.hasInput(i))
    return Value();
  RankedTensorType t = ctx.inputType(i);
  if (!t || failed(checkParamCount(ctx, i, t, rank, axis, extent)))
    return failure();
  llvm::SmallVector<int64_t> shape = paramShape(t.getNumElements(), rank, axis);
  if (const HostTensor *known = ctx.knownInput(i))
    return ctx.constant(foldCast(*known, *kindOf(type)).reshaped(shape));
  Value v = ctx.input(i);
  v = v ? ctx.reshape(v, shape) : Value();
  v = v ? ctx.cast(v, type) : Value();
  if (!v)
    return failure();
  return v;
}

/// True when input `i` is known at import and every element is 0 (a zero point that need not
/// be subtracted or added).
bool knownZero(NodeContext &ctx, unsigned i) {
  if (!ctx.hasInput(i))
    return true;
  const HostTensor *known = ctx.knownInput(i);
  if (!known)
    return false;
  for (int64_t e = 0; e < known->numElements(); ++e)
    if (known->getDouble(e) != 0)
      return false;
  return true;
}

/// Zero point input `i` as quantParam gives it, or Value() when it is absent or known to be 0
/// (nothing to subtract or add).
FailureOr<Value> zeroParam(NodeContext &ctx, unsigned i, Type type, int64_t rank, int64_t axis,
                           int64_t extent) {
  if (knownZero(ctx, i))
    return Value();
  return quantParam(ctx, i, type, rank, axis, extent);
}

/// Checks that input `i` is an 8-bit integer tensor (uint8 or int8) and returns its type;
/// `why` ends the error otherwise.
RankedTensorType require8Bit(NodeContext &ctx, unsigned i,
                             llvm::StringRef why = "uint8 and int8 only") {
  RankedTensorType t = ctx.inputType(i);
  if (t && !t.getElementType().isInteger(8)) {
    (void)ctx.unsupported("dtype " + kindName(*kindOf(t.getElementType())) + " of input '" +
                          ctx.inputName(i) + "' (" + why + ")");
    return {};
  }
  return t;
}

/// The element type a zero point input `i` gives the quantized tensor: its own (uint8 or
/// int8), or uint8 when it is absent. Null after the node's error.
Type quantizedType(NodeContext &ctx, unsigned i) {
  if (!ctx.hasInput(i))
    return IntegerType::get(ctx.context(), 8, IntegerType::Unsigned);
  RankedTensorType t = require8Bit(ctx, i, "plait quantizes to uint8 and int8");
  return t ? t.getElementType() : Type();
}

/// The quantization levels of `q` (float, already scaled: x / scale): rounded half to even,
/// plus `zeroPoint` (float, or null for 0), before and after the clamp to `target`'s range.
std::pair<Value, Value> quantizedLevels(NodeContext &ctx, Value q, Value zeroPoint,
                                        Type target) {
  bool isUnsigned = target.isUnsignedInteger();
  Value r = ctx.create<RoundOp>({q});
  if (r && zeroPoint)
    r = ctx.create<AddOp>({r, zeroPoint});
  Value c = r ? ctx.create<ClampOp>({r}, {ctx.f64Attr("min", isUnsigned ? 0 : -128),
                                           ctx.f64Attr("max", isUnsigned ? 255 : 127)})
              : Value();
  return {r, c};
}

/// `q`'s levels (quantizedLevels) saturated to `target`'s range and cast to it.
Value saturateTo(NodeContext &ctx, Value q, Value zeroPoint, Type target) {
  Value c = quantizedLevels(ctx, q, zeroPoint, target).second;
  return c ? ctx.cast(c, target) : Value();
}

/// The axis attribute normalised against `rank`, or -1 when it is outside [-rank, rank): the
/// spec ignores the axis of per-tensor parameters, and quantParam refuses per-axis ones then.
int64_t quantAxis(NodeContext &ctx, int64_t rank) {
  int64_t axis = ctx.intAttr("axis", 1);
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

/// QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), per tensor or along
/// `axis`; y takes the zero point's type (uint8 without one). x is f32 (or f64), or int32,
/// divided in f64 as the reference's numpy promotion does.
LogicalResult importQuantizeLinear(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  Type xe = xType.getElementType();
  if (!isa<FloatType>(xe) && !xe.isInteger(32))
    return ctx.unsupported("dtype " + kindName(*kindOf(xe)) +
                           " of input 'x' (float or int32 only)");
  Type compute = xe.isF64() || xe.isInteger(32) ? Type(Float64Type::get(ctx.context()))
                                                : Type(Float32Type::get(ctx.context()));
  Type target = quantizedType(ctx, 2);
  if (!target)
    return failure();
  int64_t rank = xType.getRank(), axis = quantAxis(ctx, rank);
  int64_t extent = axis >= 0 ? xType.getDimSize(axis) : 1;
  FailureOr<Value> scale = quantParam(ctx, 1, compute, rank, axis, extent);
  FailureOr<Value> zero = failed(scale) ? scale : zeroParam(ctx, 2, compute, rank, axis, extent);
  if (failed(scale) || failed(zero))
    return failure();
  Value x = ctx.input(0);
  x = x ? ctx.cast(x, compute) : Value();
  Value q = x ? ctx.create<DivOp>({x, *scale}) : Value();
  if (!q || !ctx.training() || !isa<FloatType>(xe))
    return ctx.setResult(q ? saturateTo(ctx, q, *zero, target) : Value());
  // Training: also where x was within the range (the clamp kept its value), which the
  // DequantizeLinear of this result passes the gradient through.
  auto [r, c] = quantizedLevels(ctx, q, *zero, target);
  Value kept = c ? ctx.create<EqualOp>({c, r}) : Value();
  Value y = kept ? ctx.cast(c, target) : Value();
  if (!y)
    return failure();
  ctx.recordQuantization(y, {x, kept, *scale, *zero});
  return ctx.setResult(y);
}

/// DequantizeLinear: y = (x - x_zero_point) * x_scale in f32, per tensor or along `axis`.
/// Known x (quantized weights) folds to a float constant.
LogicalResult importDequantizeLinear(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  Type xe = xType.getElementType();
  if (!xe.isInteger(8) && !xe.isInteger(32))
    return ctx.unsupported("dtype " + kindName(*kindOf(xe)) +
                           " of input 'x' (uint8, int8 and int32 only)");
  RankedTensorType zType = ctx.hasInput(2) ? ctx.inputType(2) : xType;
  if (!zType)
    return failure();
  if (zType.getElementType() != xe)
    return ctx.error("x_zero_point's dtype " + kindName(*kindOf(zType.getElementType())) +
                     " differs from x's " + kindName(*kindOf(xe)));
  Type f32 = Float32Type::get(ctx.context());
  int64_t rank = xType.getRank(), axis = quantAxis(ctx, rank);
  int64_t extent = axis >= 0 ? xType.getDimSize(axis) : 1;
  const HostTensor *x = ctx.knownInput(0), *s = ctx.knownInput(1);
  const HostTensor *z = ctx.hasInput(2) ? ctx.knownInput(2) : nullptr;
  if (x && s && (z || !ctx.hasInput(2)) && x->numElements() <= (int64_t(1) << 24)) {
    // Quantized weights: the float values, as the runtime ops would compute them in f32.
    int64_t count = s->numElements();
    if (failed(checkParamCount(ctx, 1, ctx.inputType(1), rank, axis, extent)))
      return failure();
    if (z && z->numElements() != count)
      return ctx.error("x_zero_point holds " + llvm::Twine(z->numElements()) +
                       " elements and x_scale " + llvm::Twine(count));
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank && axis >= 0; ++d)
      inner *= xType.getDimSize(d);
    HostTensor y(ElemKind::F32, xType.getShape());
    for (int64_t e = 0; e < y.numElements(); ++e) {
      int64_t c = count == 1 ? 0 : (e / inner) % count;
      float shifted = float(x->getDouble(e)) - (z ? float(z->getDouble(c)) : 0.0f);
      y.setDouble(e, double(shifted * float(s->getDouble(c))));
    }
    ctx.setOutput(0, std::move(y));
    ctx.countQuantization(/*straightThrough=*/false);
    return success();
  }
  FailureOr<Value> scale = quantParam(ctx, 1, f32, rank, axis, extent);
  FailureOr<Value> zero = failed(scale) ? scale : zeroParam(ctx, 2, f32, rank, axis, extent);
  if (failed(scale) || failed(zero))
    return failure();
  Value quantized = ctx.input(0);
  Value v = quantized ? ctx.cast(quantized, f32) : Value();
  if (v && *zero)
    v = ctx.create<SubOp>({v, *zero});
  Value y = v ? ctx.create<MulOp>({v, *scale}) : Value();
  const QuantizedValue *from = y ? ctx.quantizationOf(quantized) : nullptr;
  if (!from || from->scale != *scale || from->zeroPoint != *zero ||
      elementTypeOf(from->x) != f32)
    return ctx.setResult(y);
  // The pair of a quantization-aware model, trained: the value is the fake quantization's, the
  // gradient the straight-through estimator's (PyTorch's FakeQuantize): dy where x was within
  // the range, 0 elsewhere. y + where(in_range, x - stop_gradient(x), 0) adds exactly zero (x
  // is finite where it is in range; out of range, even an infinite x adds 0, not NaN).
  ctx.countQuantization(/*straightThrough=*/true);
  Value detached = ctx.create<StopGradientOp>({from->x});
  Value delta = detached ? ctx.create<SubOp>({from->x, detached}) : Value();
  Value passed = delta ? ctx.create<WhereOp>({from->inRange, delta, ctx.scalar(0.0, f32)})
                       : Value();
  return ctx.setResult(passed ? ctx.create<AddOp>({y, passed}) : Value());
}

/// DynamicQuantizeLinear: uint8 with the scale and zero point that map [min(x, 0), max(x, 0)]
/// onto [0, 255]: y_scale = (max - min) / 255, y_zero_point = saturate(round(-min / y_scale)),
/// y = saturate(round(x / y_scale) + y_zero_point), all in f32 as the spec's formula.
LogicalResult importDynamicQuantizeLinear(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type f32 = Float32Type::get(ctx.context());
  x = ctx.cast(x, f32);
  llvm::SmallVector<int64_t> all;
  for (int64_t d = 0; d < int64_t(shapeOf(x).size()); ++d)
    all.push_back(d);
  auto reduce = [&](auto tag) {
    using ReduceOp = decltype(tag);
    return ctx.create<ReduceOp>({x}, {ctx.arrayAttr("axes", all), ctx.boolAttr("keepdims", false)});
  };
  Value zero = ctx.scalar(0.0, f32);
  Value lo = reduce(ReduceMinOp());
  lo = lo ? ctx.create<MinOp>({lo, zero}) : Value();
  Value hi = lo ? reduce(ReduceMaxOp()) : Value();
  hi = hi ? ctx.create<MaxOp>({hi, zero}) : Value();
  Value range = hi ? ctx.create<SubOp>({hi, lo}) : Value();
  Value scale = range ? ctx.create<DivOp>({range, ctx.scalar(255.0, f32)}) : Value();
  Value ratio = scale ? ctx.create<DivOp>({lo, scale}) : Value();
  Value negated = ratio ? ctx.create<SubOp>({zero, ratio}) : Value();
  Value r = negated ? ctx.create<RoundOp>({negated}) : Value();
  Value zp = r ? ctx.create<ClampOp>({r}, {ctx.f64Attr("min", 0), ctx.f64Attr("max", 255)})
               : Value();
  Value q = zp ? ctx.create<DivOp>({x, scale}) : Value();
  Type u8 = IntegerType::get(ctx.context(), 8, IntegerType::Unsigned);
  Value y = q ? saturateTo(ctx, q, zp, u8) : Value();
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  if (ctx.hasOutput(1))
    ctx.setOutput(1, scale);
  if (ctx.hasOutput(2))
    ctx.setOutput(2, ctx.cast(zp, u8));
  return success();
}

/// An 8-bit operand `i` minus its zero point `zi` (per tensor, or along `axis`), in f64.
Value shiftedOperand(NodeContext &ctx, unsigned i, unsigned zi, int64_t axis) {
  RankedTensorType t = require8Bit(ctx, i);
  if (!t || (ctx.hasInput(zi) && !require8Bit(ctx, zi)))
    return {};
  Type f64 = Float64Type::get(ctx.context());
  int64_t rank = t.getRank();
  int64_t extent = axis >= 0 && axis < rank ? t.getDimSize(axis) : 1;
  FailureOr<Value> zero = zeroParam(ctx, zi, f64, rank, axis < rank ? axis : -1, extent);
  if (failed(zero))
    return {};
  Value v = ctx.input(i);
  v = v ? ctx.cast(v, f64) : Value();
  return v && *zero ? ctx.create<SubOp>({v, *zero}) : v;
}

/// The f32 multiplier scale_a * scale_b / scale_y of a QLinear op (each broadcast as
/// quantParam gives it; `axisB` the axis of the output b's per-axis scale maps to).
FailureOr<Value> requantMultiplier(NodeContext &ctx, unsigned aScale, int64_t rank,
                                   int64_t axisA, int64_t extentA, unsigned bScale,
                                   int64_t axisB, int64_t extentB, unsigned yScale) {
  Type f32 = Float32Type::get(ctx.context());
  FailureOr<Value> a = quantParam(ctx, aScale, f32, rank, axisA, extentA);
  FailureOr<Value> b = failed(a) ? a : quantParam(ctx, bScale, f32, rank, axisB, extentB);
  FailureOr<Value> y = failed(b) ? b : quantParam(ctx, yScale, f32, rank, -1, 1);
  if (failed(y))
    return failure();
  Value ab = ctx.create<MulOp>({*a, *b});
  Value m = ab ? ctx.create<DivOp>({ab, *y}) : Value();
  if (!m)
    return failure();
  return m;
}

/// The f64 accumulator `acc` of a QLinear op requantized to the output's zero point's type.
LogicalResult requantize(NodeContext &ctx, Value acc, FailureOr<Value> multiplier,
                         unsigned yZero) {
  if (!acc || failed(multiplier))
    return failure();
  Type f32 = Float32Type::get(ctx.context());
  Type target = quantizedType(ctx, yZero);
  int64_t rank = shapeOf(acc).size();
  if (!target)
    return failure();
  FailureOr<Value> zero = zeroParam(ctx, yZero, f32, rank, -1, 1);
  if (failed(zero))
    return failure();
  Value scaled = ctx.create<MulOp>({ctx.cast(acc, f32), *multiplier});
  return ctx.setResult(scaled ? saturateTo(ctx, scaled, *zero, target) : Value());
}

/// (A - a_zero_point) x (B - b_zero_point) in f64, A and its zero point inputs `a` and `az`,
/// B's `b` and `bz`: a's zero point per tensor or per row (A's second-to-last axis), b's per
/// tensor or per column (B's last axis). Null after the node's error.
Value shiftedProduct(NodeContext &ctx, unsigned a, unsigned az, unsigned b, unsigned bz) {
  RankedTensorType aType = ctx.inputType(a), bType = aType ? ctx.inputType(b) : nullptr;
  if (!bType)
    return {};
  if (aType.getRank() < 2 || bType.getRank() < 2) {
    (void)ctx.unsupported(ctx.opType() + " of a 1-D operand");
    return {};
  }
  Value sa = shiftedOperand(ctx, a, az, aType.getRank() - 2);
  Value sb = sa ? shiftedOperand(ctx, b, bz, bType.getRank() - 1) : Value();
  return sb ? ctx.create<MatmulOp>({sa, sb}) : Value();
}

/// MatMulInteger: the shifted product as int32.
LogicalResult importMatMulInteger(NodeContext &ctx) {
  Value y = shiftedProduct(ctx, 0, 2, 1, 3);
  return ctx.setResult(y ? ctx.cast(y, IntegerType::get(ctx.context(), 32)) : Value());
}

/// ConvInteger: the convolution of x - x_zero_point and w - w_zero_point (per tensor, or per
/// output channel) as int32, padding with zeros after the shift (as the spec's reference does).
LogicalResult importConvInteger(NodeContext &ctx) {
  Value x = shiftedOperand(ctx, 0, 2, -1);
  Value w = x ? shiftedOperand(ctx, 1, 3, 0) : Value();
  Value y = w ? convolution(ctx, x, w, Value()) : Value();
  return ctx.setResult(y ? ctx.cast(y, IntegerType::get(ctx.context(), 32)) : Value());
}

/// QLinearMatMul: the integer product of the shifted operands, requantized to y's scale and
/// zero point (a's scale per tensor or row, b's per tensor or column).
LogicalResult importQLinearMatMul(NodeContext &ctx) {
  Value acc = shiftedProduct(ctx, 0, 2, 3, 5);
  if (!acc)
    return failure();
  int64_t rank = shapeOf(acc).size();
  return requantize(ctx, acc,
                    requantMultiplier(ctx, 1, rank, rank - 2, shapeOf(acc)[rank - 2], 4,
                                      rank - 1, shapeOf(acc)[rank - 1], 6),
                    7);
}

/// QLinearConv: the integer convolution of the shifted operands plus the int32 bias B,
/// requantized to y's scale and zero point (w's scale per tensor or output channel).
LogicalResult importQLinearConv(NodeContext &ctx) {
  Value x = shiftedOperand(ctx, 0, 2, -1);
  Value w = x ? shiftedOperand(ctx, 3, 5, 0) : Value();
  if (!w)
    return failure();
  Value bias;
  if (ctx.hasInput(8)) {
    RankedTensorType bType = ctx.inputType(8);
    if (!bType)
      return failure();
    if (!bType.getElementType().isInteger(32))
      return ctx.error("bias B must be int32, got " +
                       kindName(*kindOf(bType.getElementType())));
    bias = ctx.input(8);
    bias = bias ? ctx.cast(bias, Float64Type::get(ctx.context())) : Value();
    if (!bias)
      return failure();
  }
  Value acc = convolution(ctx, x, w, bias);
  if (!acc)
    return failure();
  int64_t rank = shapeOf(acc).size();
  return requantize(ctx, acc,
                    requantMultiplier(ctx, 1, rank, -1, 1, 4, 1, shapeOf(acc)[1], 6), 7);
}

} // namespace

void registerQuantizeOps(OpImporterMap &map) {
  map["QuantizeLinear"] = importQuantizeLinear;
  map["DequantizeLinear"] = importDequantizeLinear;
  map["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
  map["MatMulInteger"] = importMatMulInteger;
  map["ConvInteger"] = importConvInteger;
  map["QLinearMatMul"] = importQLinearMatMul;
  map["QLinearConv"] = importQLinearConv;
}

} // namespace plait::onnx_import
