// Importers of ONNX's elementwise ops: arithmetic, comparisons, logic, unary math, activations,
// Clip, Where and casts. Each folds at import time when all its inputs are constants.
#include "compiler/import/onnx/Importer.h"
#include "ir/ShapeRules.h"

#include <cmath>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// True when every input is a constant and the broadcast result is a splat or small enough to
/// hold on the host; otherwise the node becomes a plait op (on materialised constants).
bool shouldFold(NodeContext &ctx) {
  if (!ctx.allInputsFolded())
    return false;
  bool allSplat = true;
  llvm::SmallVector<int64_t> shape;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    const HostTensor *t = ctx.foldedInput(i);
    if (!t)
      continue;
    allSplat &= t->isSplat() || t->numElements() <= 1;
    auto next = broadcastShapes(shape, t->shape());
    if (!next)
      return true; // the folding kernel reports the mismatch
    shape = *next;
  }
  return allSplat || fitsFolding(shape);
}

//===----------------------------------------------------------------------===//
// Binary and variadic ops
//===----------------------------------------------------------------------===//

template <typename OpT, BinaryFn Fn>
LogicalResult importBinary(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("needs two inputs");
  if (shouldFold(ctx))
    return ctx.setFolded(0, foldBinary(Fn, *ctx.foldedInput(0), *ctx.foldedInput(1)));
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  return ctx.setResult(ctx.create<OpT>({a, b}));
}

LogicalResult importPow(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("needs two inputs");
  if (shouldFold(ctx))
    return ctx.setFolded(0, foldBinary(BinaryFn::Pow, *ctx.foldedInput(0), *ctx.foldedInput(1)));
  Value base = ctx.input(0), exponent = ctx.input(1);
  if (!base || !exponent)
    return failure();
  Type baseType = elementTypeOf(base), expType = elementTypeOf(exponent);
  // ONNX lets the exponent's type differ. An integer base with a float exponent is computed in
  // the exponent's type and truncated back, as the reference implementation does.
  if (!llvm::isa<FloatType>(baseType) && llvm::isa<FloatType>(expType)) {
    Value r = ctx.create<PowOp>({ctx.cast(base, expType), exponent});
    return ctx.setResult(r ? ctx.cast(r, baseType) : Value());
  }
  Value e = ctx.cast(exponent, baseType);
  return ctx.setResult(e ? ctx.create<PowOp>({base, e}) : Value());
}

LogicalResult importMod(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("needs two inputs");
  bool fmod = ctx.intAttr("fmod", 0) != 0;
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  bool isFloat = llvm::isa<FloatType>(type.getElementType());
  if (isFloat && !fmod)
    return ctx.error("fmod must be 1 for floating-point inputs");
  if (shouldFold(ctx))
    return ctx.setFolded(0, foldBinary(fmod ? BinaryFn::FMod : BinaryFn::Mod,
                                       *ctx.foldedInput(0), *ctx.foldedInput(1)));
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  if (isFloat || !fmod) // plait.mod: fmod for floats, the divisor's sign for integers
    return ctx.setResult(ctx.create<ModOp>({a, b}));
  // Integer fmod (the dividend's sign): a - b * trunc(a / b); plait's integer division truncates.
  Value q = ctx.create<DivOp>({a, b});
  Value p = q ? ctx.create<MulOp>({b, q}) : Value();
  return ctx.setResult(p ? ctx.create<SubOp>({a, p}) : Value());
}

/// BitShift: unsigned integers shifted by the second input's bits, LEFT or RIGHT.
LogicalResult importBitShift(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("needs two inputs");
  std::string direction = ctx.stringAttr("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.error("direction must be LEFT or RIGHT, not '" + direction + "'");
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  if (!type.getElementType().isUnsignedInteger()) {
    std::optional<ElemKind> kind = kindOf(type.getElementType());
    return ctx.error("unsupported dtype " + (kind ? kindName(*kind) : llvm::StringRef("?")) +
                     " (BitShift takes unsigned integers)");
  }
  bool left = direction == "LEFT";
  if (shouldFold(ctx))
    return ctx.setFolded(0, foldBinary(left ? BinaryFn::ShiftLeft : BinaryFn::ShiftRight,
                                       *ctx.foldedInput(0), *ctx.foldedInput(1)));
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  return ctx.setResult(left ? ctx.create<ShiftLeftOp>({a, b}) : ctx.create<ShiftRightOp>({a, b}));
}

/// Max, Min, Sum: a left fold over any number of inputs.
template <typename OpT, BinaryFn Fn>
LogicalResult importVariadic(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("needs at least one input");
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    if (!ctx.hasInput(i))
      return ctx.error("input #" + llvm::Twine(i) + " is empty");
  if (ctx.numInputs() == 1)
    return ctx.forwardInput(0, 0);
  if (shouldFold(ctx)) {
    HostTensor acc = *ctx.foldedInput(0);
    for (unsigned i = 1; i < ctx.numInputs(); ++i) {
      auto next = foldBinary(Fn, acc, *ctx.foldedInput(i));
      if (!next)
        return ctx.error(llvm::toString(next.takeError()));
      acc = std::move(*next);
    }
    ctx.setOutput(0, std::move(acc));
    return success();
  }
  Value acc = ctx.input(0);
  for (unsigned i = 1; acc && i < ctx.numInputs(); ++i) {
    Value next = ctx.input(i);
    acc = next ? ctx.create<OpT>({acc, next}) : Value();
  }
  return ctx.setResult(acc);
}

LogicalResult importMean(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("needs at least one input");
  if (ctx.numInputs() == 1)
    return ctx.forwardInput(0, 0);
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value acc = ctx.input(0);
  for (unsigned i = 1; acc && i < ctx.numInputs(); ++i) {
    Value next = ctx.input(i);
    acc = next ? ctx.create<AddOp>({acc, next}) : Value();
  }
  if (!acc)
    return failure();
  Value n = ctx.scalar(static_cast<double>(ctx.numInputs()), elementTypeOf(acc));
  return ctx.setResult(ctx.create<DivOp>({acc, n}));
}

LogicalResult importWhere(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("needs three inputs");
  if (shouldFold(ctx))
    return ctx.setFolded(
        0, foldWhere(*ctx.foldedInput(0), *ctx.foldedInput(1), *ctx.foldedInput(2)));
  Value c = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
  if (!c || !x || !y)
    return failure();
  return ctx.setResult(ctx.create<WhereOp>({c, x, y}));
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// A unary op that maps to one plait op.
template <typename OpT>
LogicalResult importUnary(NodeContext &ctx) {
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<OpT>({x}) : Value());
}

/// A unary op that maps to one plait op and that `Fold` evaluates on constants.
template <typename OpT, UnaryFn Fold>
LogicalResult importFoldableUnary(NodeContext &ctx) {
  if (ctx.allInputsFolded())
    return ctx.setFolded(0, foldUnary(Fold, *ctx.foldedInput(0)));
  return importUnary<OpT>(ctx);
}

/// torch.onnx.export replaces parameters that merely have equal values (every LayerNorm weight
/// starts as ones) by Identity nodes of one initializer, keeping the parameter's name as the
/// output. Such an output is a parameter of its own (truly tied weights are exported as uses of
/// one initializer, without Identity), so an Identity of an initializer makes a new param.
LogicalResult importIdentity(NodeContext &ctx) {
  return ctx.forwardInput(0, 0, /*copyParam=*/true);
}

LogicalResult importLeakyRelu(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<LeakyReluOp>(
                                {x}, {ctx.f64Attr("alpha", ctx.floatAttr("alpha", 0.01))})
                          : Value());
}

LogicalResult importElu(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<EluOp>({x}, {ctx.f64Attr("alpha", ctx.floatAttr("alpha", 1.0))})
                          : Value());
}

/// Selu: gamma * elu(x, alpha).
LogicalResult importSelu(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.67326319217681884765625);
  double gamma = ctx.floatAttr("gamma", 1.05070102214813232421875);
  Value e = ctx.create<EluOp>({x}, {ctx.f64Attr("alpha", alpha)});
  return ctx.setResult(e ? ctx.create<MulOp>({e, ctx.scalar(gamma, elementTypeOf(x))}) : Value());
}

/// Celu: alpha * elu(x / alpha, 1).
LogicalResult importCelu(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.0);
  Type t = elementTypeOf(x);
  Value scaled = ctx.create<DivOp>({x, ctx.scalar(alpha, t)});
  Value e = scaled ? ctx.create<EluOp>({scaled}, {ctx.f64Attr("alpha", 1.0)}) : Value();
  return ctx.setResult(e ? ctx.create<MulOp>({e, ctx.scalar(alpha, t)}) : Value());
}

LogicalResult importHardSigmoid(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<HardSigmoidOp>(
                                {x}, {ctx.f64Attr("alpha", ctx.floatAttr("alpha", 0.2)),
                                      ctx.f64Attr("beta", ctx.floatAttr("beta", 0.5))})
                          : Value());
}

/// HardSwish: x * hard_sigmoid(x, 1/6, 1/2).
LogicalResult importHardSwish(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Value hs = ctx.create<HardSigmoidOp>({x}, {ctx.f64Attr("alpha", 1.0 / 6.0), ctx.f64Attr("beta", 0.5)});
  return ctx.setResult(hs ? ctx.create<MulOp>({x, hs}) : Value());
}

/// Softsign: x / (1 + |x|).
LogicalResult importSoftsign(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Value a = ctx.create<AbsOp>({x});
  Value d = a ? ctx.create<AddOp>({a, ctx.scalar(1.0, elementTypeOf(x))}) : Value();
  return ctx.setResult(d ? ctx.create<DivOp>({x, d}) : Value());
}

/// PRelu: x where x >= 0, else slope * x (slope broadcasts to x).
LogicalResult importPRelu(NodeContext &ctx) {
  Value x = ctx.input(0), slope = ctx.input(1);
  if (!x || !slope)
    return failure();
  Value neg = ctx.create<LessOp>({x, ctx.scalar(0.0, elementTypeOf(x))});
  Value scaled = neg ? ctx.create<MulOp>({x, slope}) : Value();
  return ctx.setResult(scaled ? ctx.create<WhereOp>({neg, scaled, x}) : Value());
}

/// ThresholdedRelu: x where x > alpha, else 0.
LogicalResult importThresholdedRelu(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = elementTypeOf(x);
  Value gt = ctx.create<GreaterOp>({x, ctx.scalar(ctx.floatAttr("alpha", 1.0), t)});
  return ctx.setResult(gt ? ctx.create<WhereOp>({gt, x, ctx.scalar(0.0, t)}) : Value());
}

/// Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0.
LogicalResult importShrink(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = elementTypeOf(x);
  double lambd = ctx.floatAttr("lambd", 0.5), bias = ctx.floatAttr("bias", 0.0);
  Value below = ctx.create<LessOp>({x, ctx.scalar(-lambd, t)});
  Value above = below ? ctx.create<GreaterOp>({x, ctx.scalar(lambd, t)}) : Value();
  Value plus = above ? ctx.create<AddOp>({x, ctx.scalar(bias, t)}) : Value();
  Value minus = plus ? ctx.create<SubOp>({x, ctx.scalar(bias, t)}) : Value();
  Value inner = minus ? ctx.create<WhereOp>({above, minus, ctx.scalar(0.0, t)}) : Value();
  return ctx.setResult(inner ? ctx.create<WhereOp>({below, plus, inner}) : Value());
}

LogicalResult importIsNaN(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  Value eq = x ? ctx.create<EqualOp>({x, x}) : Value();
  return ctx.setResult(eq ? ctx.create<NotOp>({eq}) : Value());
}

LogicalResult importIsInf(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = elementTypeOf(x);
  bool pos = ctx.intAttr("detect_positive", 1) != 0, neg = ctx.intAttr("detect_negative", 1) != 0;
  if (pos && neg) {
    Value a = ctx.create<AbsOp>({x});
    return ctx.setResult(a ? ctx.create<EqualOp>({a, ctx.scalar(INFINITY, t)}) : Value());
  }
  // One sign, or neither (NaN equals nothing, so the result is all false).
  double target = pos ? INFINITY : (neg ? -INFINITY : NAN);
  return ctx.setResult(ctx.create<EqualOp>({x, ctx.scalar(target, t)}));
}

/// Sinh and Cosh: (exp(x) -/+ exp(-x)) / 2.
template <bool IsSinh>
LogicalResult importHyperbolic(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Value ep = ctx.create<ExpOp>({x});
  Value nx = ep ? ctx.create<NegOp>({x}) : Value();
  Value en = nx ? ctx.create<ExpOp>({nx}) : Value();
  Value s = !en ? Value() : IsSinh ? ctx.create<SubOp>({ep, en}) : ctx.create<AddOp>({ep, en});
  return ctx.setResult(s ? ctx.create<MulOp>({s, ctx.scalar(0.5, elementTypeOf(x))}) : Value());
}

LogicalResult importTan(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Value s = ctx.create<SinOp>({x});
  Value c = s ? ctx.create<CosOp>({x}) : Value();
  return ctx.setResult(c ? ctx.create<DivOp>({s, c}) : Value());
}

/// Builds a chain of plait ops, stopping at the first that fails (whose diagnostic is the node's).
struct OpChain {
  NodeContext &ctx;
  bool ok = true;
  template <typename OpT>
  Value op(std::initializer_list<Value> operands) {
    if (!ok || llvm::any_of(operands, [](Value v) { return !v; }))
      return ok = false, Value();
    Value result = ctx.create<OpT>(llvm::SmallVector<Value>(operands));
    ok = bool(result);
    return result;
  }
};

/// atan(x) from plait's arithmetic, as Cephes computes it: |x| reduced to [0, tan(pi/8)] (f32) or
/// [0, 0.66] (f64) by atan(a) = pi/4 + atan((a - 1) / (a + 1)) or pi/2 + atan(-1 / a), then an odd
/// polynomial (f32: degree 9, about 1 ulp) or rational function (f64: degree 9/10). Small |x| keep
/// their sign all the way, so that the gradient at 0 is 1; the reduced branches take it back
/// with a where. The division by a is of max(a, 1), so the branch not taken has no infinite
/// gradient to leak through the where.
Value atanOf(NodeContext &ctx, Value x) {
  Type t = elementTypeOf(x);
  const bool f64 = t.isF64();
  OpChain c{ctx};
  auto k = [&](double v) { return ctx.scalar(v, t); };
  const double halfPi = 1.57079632679489661923, quarterPi = 0.78539816339744830962;
  Value a = c.op<AbsOp>({x});
  Value big = c.op<GreaterOp>({a, k(2.414213562373095)}); // tan(3 pi / 8)
  Value mid = c.op<GreaterOp>({a, k(f64 ? 0.66 : 0.4142135623730950)});
  Value inverse = c.op<DivOp>({k(-1.0), c.op<MaxOp>({a, k(1.0)})});
  Value shifted = c.op<DivOp>({c.op<SubOp>({a, k(1.0)}), c.op<AddOp>({a, k(1.0)})});
  Value r = c.op<WhereOp>({big, inverse, c.op<WhereOp>({mid, shifted, x})});
  Value base = c.op<WhereOp>({big, k(halfPi), c.op<WhereOp>({mid, k(quarterPi), k(0.0)})});
  Value z = c.op<MulOp>({r, r});
  Value poly; // atan(r) - r, over r
  if (!f64) {
    Value p = k(8.05374449538e-2);
    for (double coef : {-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1})
      p = c.op<AddOp>({c.op<MulOp>({p, z}), k(coef)});
    poly = c.op<MulOp>({p, z});
  } else {
    Value num = k(-8.750608600031904122785e-1), den = c.op<AddOp>({z, k(2.485846490142306297962e1)});
    for (double coef : {-1.615753718733365076637e1, -7.500855792314704667340e1,
                        -1.228866684490136173410e2, -6.485021904942025371773e1})
      num = c.op<AddOp>({c.op<MulOp>({num, z}), k(coef)});
    for (double coef : {1.650270098316988542046e2, 4.328810604912902668951e2,
                        4.853903996359136964868e2, 1.945506571482613964425e2})
      den = c.op<AddOp>({c.op<MulOp>({den, z}), k(coef)});
    poly = c.op<DivOp>({c.op<MulOp>({z, num}), den});
  }
  Value y = c.op<AddOp>({base, c.op<AddOp>({r, c.op<MulOp>({r, poly})})});
  Value sign = c.op<WhereOp>({c.op<LessOp>({x, k(0.0)}), k(-1.0), k(1.0)});
  return c.op<WhereOp>({mid, c.op<MulOp>({sign, y}), y});
}

/// scale * atan(arg(x)): the form of Atan, Asin and Acos below.
template <Value (*Arg)(OpChain &, Value), int Scale>
LogicalResult importViaAtan(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  OpChain c{ctx};
  Value arg = x ? Arg(c, x) : Value();
  Value at = arg ? atanOf(ctx, arg) : Value();
  return ctx.setResult(Scale == 1 || !at ? at
                                         : c.op<MulOp>({at, ctx.scalar(Scale, elementTypeOf(x))}));
}

Value atanArg(OpChain &, Value x) { return x; }

/// Asin: 2 atan(x / (1 + sqrt(1 - x^2))), finite at |x| = 1 and NaN beyond.
Value asinArg(OpChain &c, Value x) {
  Value one = c.ctx.scalar(1.0, elementTypeOf(x));
  Value root = c.op<SqrtOp>({c.op<SubOp>({one, c.op<MulOp>({x, x})})});
  return c.op<DivOp>({x, c.op<AddOp>({one, root})});
}

/// Acos: 2 atan(sqrt((1 - x) / (1 + x))), accurate near 1 (no pi/2 - asin cancellation); pi at -1.
Value acosArg(OpChain &c, Value x) {
  Value one = c.ctx.scalar(1.0, elementTypeOf(x));
  return c.op<SqrtOp>({c.op<DivOp>({c.op<SubOp>({one, x}), c.op<AddOp>({one, x})})});
}

/// Asinh: log(x + sqrt(x^2 + 1)); Acosh: log(x + sqrt(x^2 - 1)).
template <bool IsAsinh>
LogicalResult importInverseHyperbolic(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = elementTypeOf(x);
  Value sq = ctx.create<MulOp>({x, x});
  Value sh = !sq ? Value()
             : IsAsinh ? ctx.create<AddOp>({sq, ctx.scalar(1.0, t)})
                       : ctx.create<SubOp>({sq, ctx.scalar(1.0, t)});
  Value r = sh ? ctx.create<SqrtOp>({sh}) : Value();
  Value s = r ? ctx.create<AddOp>({x, r}) : Value();
  return ctx.setResult(s ? ctx.create<LogOp>({s}) : Value());
}

/// Atanh: log((1 + x) / (1 - x)) / 2.
LogicalResult importAtanh(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = elementTypeOf(x);
  Value one = ctx.scalar(1.0, t);
  Value num = ctx.create<AddOp>({one, x});
  Value den = num ? ctx.create<SubOp>({one, x}) : Value();
  Value q = den ? ctx.create<DivOp>({num, den}) : Value();
  Value l = q ? ctx.create<LogOp>({q}) : Value();
  return ctx.setResult(l ? ctx.create<MulOp>({l, ctx.scalar(0.5, t)}) : Value());
}

//===----------------------------------------------------------------------===//
// Clip and casts
//===----------------------------------------------------------------------===//

LogicalResult importClip(NodeContext &ctx) {
  std::optional<double> lo, hi;
  for (unsigned i : {1u, 2u}) {
    if (!ctx.hasInput(i))
      continue;
    const HostTensor *bound = ctx.requireConstInput(i, i == 1 ? "min" : "max");
    if (!bound)
      return failure();
    if (bound->numElements() != 1)
      return ctx.error(llvm::Twine("input '") + (i == 1 ? "min" : "max") + "' must be a scalar");
    (i == 1 ? lo : hi) = bound->getDouble(0);
  }
  if (const HostTensor *x = ctx.foldedInput(0)) {
    HostTensor r = *x;
    for (auto [bound, fn] : {std::pair{lo, BinaryFn::Max}, std::pair{hi, BinaryFn::Min}}) {
      if (!bound)
        continue;
      auto next = foldBinary(fn, r, HostTensor::splat(r.kind(), {}, *bound));
      if (!next)
        return ctx.error(llvm::toString(next.takeError()));
      r = std::move(*next);
    }
    ctx.setOutput(0, std::move(r));
    return success();
  }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  if (!lo && !hi)
    return ctx.setResult(x);
  llvm::SmallVector<NamedAttribute> attrs;
  if (lo)
    attrs.push_back(ctx.f64Attr("min", *lo));
  if (hi)
    attrs.push_back(ctx.f64Attr("max", *hi));
  return ctx.setResult(ctx.create<ClampOp>({x}, attrs));
}

LogicalResult castTo(NodeContext &ctx, Type target) {
  if (const HostTensor *x = ctx.foldedInput(0)) {
    ctx.setOutput(0, foldCast(*x, *kindOf(target)));
    return success();
  }
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.cast(x, target) : Value());
}

LogicalResult importCast(NodeContext &ctx) {
  int64_t to = ctx.intAttr("to", 0);
  Type target = elementTypeOf(static_cast<int>(to), ctx.context());
  if (!target)
    return ctx.unsupported("dtype " + onnxTypeName(static_cast<int>(to)) + " (attribute 'to')");
  if (!ctx.inputType(0))
    return failure();
  return castTo(ctx, target);
}

LogicalResult importCastLike(NodeContext &ctx) {
  RankedTensorType like = ctx.inputType(1);
  if (!like || !ctx.inputType(0))
    return failure();
  return castTo(ctx, like.getElementType());
}

} // namespace

void registerElementwiseOps(OpImporterMap &map) {
  map["Add"] = importBinary<AddOp, BinaryFn::Add>;
  map["Sub"] = importBinary<SubOp, BinaryFn::Sub>;
  map["Mul"] = importBinary<MulOp, BinaryFn::Mul>;
  map["Div"] = importBinary<DivOp, BinaryFn::Div>;
  map["Pow"] = importPow;
  map["Mod"] = importMod;
  map["BitShift"] = importBitShift;
  map["Max"] = importVariadic<MaxOp, BinaryFn::Max>;
  map["Min"] = importVariadic<MinOp, BinaryFn::Min>;
  map["Sum"] = importVariadic<AddOp, BinaryFn::Add>;
  map["Mean"] = importMean;
  map["Equal"] = importBinary<EqualOp, BinaryFn::Equal>;
  map["Less"] = importBinary<LessOp, BinaryFn::Less>;
  map["LessOrEqual"] = importBinary<LessEqualOp, BinaryFn::LessEqual>;
  map["Greater"] = importBinary<GreaterOp, BinaryFn::Greater>;
  map["GreaterOrEqual"] = importBinary<GreaterEqualOp, BinaryFn::GreaterEqual>;
  map["And"] = importBinary<AndOp, BinaryFn::And>;
  map["Or"] = importBinary<OrOp, BinaryFn::Or>;
  map["Xor"] = importBinary<XorOp, BinaryFn::Xor>;
  map["Where"] = importWhere;

  map["Not"] = importFoldableUnary<NotOp, UnaryFn::Not>;
  map["Neg"] = importFoldableUnary<NegOp, UnaryFn::Neg>;
  map["Abs"] = importFoldableUnary<AbsOp, UnaryFn::Abs>;
  map["Sign"] = importFoldableUnary<SignOp, UnaryFn::Sign>;
  map["Relu"] = importFoldableUnary<ReluOp, UnaryFn::Relu>;
  map["Exp"] = importFoldableUnary<ExpOp, UnaryFn::Exp>;
  map["Log"] = importFoldableUnary<LogOp, UnaryFn::Log>;
  map["Sqrt"] = importFoldableUnary<SqrtOp, UnaryFn::Sqrt>;
  map["Reciprocal"] = importFoldableUnary<ReciprocalOp, UnaryFn::Reciprocal>;
  map["Floor"] = importFoldableUnary<FloorOp, UnaryFn::Floor>;
  map["Ceil"] = importFoldableUnary<CeilOp, UnaryFn::Ceil>;
  map["Round"] = importFoldableUnary<RoundOp, UnaryFn::Round>;
  map["Erf"] = importUnary<ErfOp>;
  map["Tanh"] = importUnary<TanhOp>;
  map["Sin"] = importUnary<SinOp>;
  map["Cos"] = importUnary<CosOp>;
  map["Sigmoid"] = importUnary<SigmoidOp>;
  map["Softplus"] = importUnary<SoftplusOp>;
  map["Tan"] = importTan;
  map["Sinh"] = importHyperbolic<true>;
  map["Cosh"] = importHyperbolic<false>;
  map["Asinh"] = importInverseHyperbolic<true>;
  map["Acosh"] = importInverseHyperbolic<false>;
  map["Atanh"] = importAtanh;
  map["Atan"] = importViaAtan<atanArg, 1>;
  map["Asin"] = importViaAtan<asinArg, 2>;
  map["Acos"] = importViaAtan<acosArg, 2>;
  map["Identity"] = importIdentity;

  map["LeakyRelu"] = importLeakyRelu;
  map["Elu"] = importElu;
  map["Selu"] = importSelu;
  map["Celu"] = importCelu;
  map["HardSigmoid"] = importHardSigmoid;
  map["HardSwish"] = importHardSwish;
  map["Softsign"] = importSoftsign;
  map["PRelu"] = importPRelu;
  map["ThresholdedRelu"] = importThresholdedRelu;
  map["Shrink"] = importShrink;
  map["IsNaN"] = importIsNaN;
  map["IsInf"] = importIsInf;

  map["Clip"] = importClip;
  map["Cast"] = importCast;
  map["CastLike"] = importCastLike;
}

} // namespace plait::onnx_import
