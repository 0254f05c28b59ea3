// VJP rules of the differentiable plait ops, attached as VJPOpInterface external models.
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include <array>
#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;

namespace plait {
namespace {

RankedTensorType rankedType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Small builder wrapper so rules read like the math they implement.
///
/// C++ leaves the order in which a call's arguments are evaluated to the compiler (GCC
/// goes right to left, Clang left to right), so a rule never passes two expressions that
/// create ops to one call: it names one of them first. Otherwise the order of the step's
/// ops, and with it the schedule and the memory plan, would depend on the compiler that
/// built plait (tests/e2e/same_plan_across_builds.py compares a GCC and a Clang build).
struct Grad {
  OpBuilder &b;
  Location loc;

  Type elementOf(Value v) { return rankedType(v).getElementType(); }
  Value scalar(Value like, double v) {
    auto type = RankedTensorType::get({}, elementOf(like));
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, b.getFloatAttr(elementOf(like), v)));
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  Value mulScalar(Value x, double s) { return mul(x, scalar(x, s)); }
  Value where(Value c, Value x, Value y) { return b.create<WhereOp>(loc, c, x, y); }
  Value zerosLike(Value x) {
    auto type = rankedType(x);
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
  }
  Value reshape(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return b.create<ReshapeOp>(loc, type, x);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return reshape(x, RankedTensorType::get(shape, elementOf(x)));
  }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    return b.create<ReduceSumOp>(loc, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdims));
  }
  Value mean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    return b.create<ReduceMeanOp>(loc, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdims));
  }
  Value transposeLast2(Value x) {
    int64_t rank = rankedType(x).getRank();
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return b.create<TransposeOp>(loc, x, b.getDenseI64ArrayAttr(perm));
  }
  Value matmul(Value x, Value y) { return b.create<MatmulOp>(loc, x, y); }
  Value broadcastTo(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return b.create<BroadcastToOp>(loc, type, x);
  }

  /// Sums `grad` over the dimensions that broadcasting added or stretched to reach
  /// `target`'s shape, then reshapes to it (the adjoint of numpy broadcasting).
  Value unbroadcast(Value grad, Value target) {
    auto gt = rankedType(grad), tt = rankedType(target);
    if (gt.getShape() == tt.getShape())
      return grad;
    int64_t lead = gt.getRank() - tt.getRank();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < gt.getRank(); ++d)
      if (d < lead || (tt.getDimSize(d - lead) == 1 && gt.getDimSize(d) != 1))
        axes.push_back(d);
    Value reduced = axes.empty() ? grad : sum(grad, axes, /*keepdims=*/true);
    return reshape(reduced, tt.getShape());
  }

  /// Positions of the reduced axes, normalised (empty `axes` = all; the verifier checked
  /// their range).
  SmallVector<int64_t> reducedAxes(ArrayRef<int64_t> axes, int64_t rank) {
    return *normalizeAxes(axes, rank);
  }

  /// Reshapes a reduction's result (or its gradient) to the keepdims shape of `x`.
  Value keepdimsShape(Value reduced, Value x, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> shape(rankedType(x).getShape());
    for (int64_t a : axes)
      shape[a] = 1;
    return reshape(reduced, shape);
  }
};

bool isFloatTensor(Value v) { return isa<FloatType>(rankedType(v).getElementType()); }

/// Base for rules: fills operandGrads with nulls, then calls Derived::vjp.
template <typename Derived, typename Op>
struct VJPModel : VJPOpInterface::ExternalModel<Derived, Op> {
  LogicalResult buildVJP(Operation *op, OpBuilder &b, ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.assign(op->getNumOperands(), Value());
    Grad g{b, op->getLoc()};
    return Derived::vjp(cast<Op>(op), g, resultGrads, operandGrads);
  }
};

#define PLAIT_VJP(OP)                                                                           \
  struct OP##VJP : VJPModel<OP##VJP, OP> {                                                      \
    static LogicalResult vjp(OP op, Grad &g, ArrayRef<Value> rg, SmallVectorImpl<Value> &og);   \
  };                                                                                            \
  LogicalResult OP##VJP::vjp(OP op, Grad &g, ArrayRef<Value> rg, SmallVectorImpl<Value> &og)

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

PLAIT_VJP(AddOp) {
  og[0] = g.unbroadcast(rg[0], op.getLhs());
  og[1] = g.unbroadcast(rg[0], op.getRhs());
  return success();
}
PLAIT_VJP(SubOp) {
  og[0] = g.unbroadcast(rg[0], op.getLhs());
  og[1] = g.unbroadcast(g.neg(rg[0]), op.getRhs());
  return success();
}
PLAIT_VJP(MulOp) {
  og[0] = g.unbroadcast(g.mul(rg[0], op.getRhs()), op.getLhs());
  og[1] = g.unbroadcast(g.mul(rg[0], op.getLhs()), op.getRhs());
  return success();
}
PLAIT_VJP(DivOp) {
  og[0] = g.unbroadcast(g.div(rg[0], op.getRhs()), op.getLhs());
  og[1] = g.unbroadcast(g.neg(g.div(g.mul(rg[0], op.getResult()), op.getRhs())), op.getRhs());
  return success();
}
PLAIT_VJP(PowOp) {
  // d(a^b)/da = b * a^(b-1); d(a^b)/db = a^b * log(a).
  Value a = op.getLhs(), e = op.getRhs();
  // A constant f32 or f64 exponent (a norm's x^2) gets the constant b - 1, not a kernel that
  // subtracts one (the same value: b - 1 is exact in double, and rounds to f32 as the f32
  // subtraction rounds).
  Value em1;
  std::optional<double> b = splatValue(e);
  if (b && (g.elementOf(e).isF32() || g.elementOf(e).isF64()))
    em1 = g.b.create<ConstantOp>(
        g.loc, DenseElementsAttr::get(rankedType(e), g.b.getFloatAttr(g.elementOf(e), *b - 1.0)));
  else
    em1 = g.sub(e, g.scalar(e, 1.0));
  Value powm1 = g.b.create<PowOp>(g.loc, a, em1);
  og[0] = g.unbroadcast(g.mul(rg[0], g.mul(e, powm1)), a);
  og[1] = g.unbroadcast(g.mul(rg[0], g.mul(op.getResult(), g.b.create<LogOp>(g.loc, a))), e);
  return success();
}

/// max/min: the gradient goes to the selected operand; ties split it evenly (as PyTorch).
template <typename Op> LogicalResult extremumVJP(Op op, Grad &g, ArrayRef<Value> rg,
                                                 SmallVectorImpl<Value> &og, bool isMax) {
  Value a = op.getLhs(), b = op.getRhs();
  Value aWins = isMax ? Value(g.b.create<GreaterOp>(g.loc, a, b))
                      : Value(g.b.create<LessOp>(g.loc, a, b));
  Value tie = g.b.create<EqualOp>(g.loc, a, b);
  Value half = g.mulScalar(rg[0], 0.5);
  Value zero = g.scalar(rg[0], 0.0);
  Value toA = g.where(aWins, rg[0], g.where(tie, half, zero));
  Value toB = g.sub(g.broadcastTo(rg[0], rankedType(toA)), toA);
  og[0] = g.unbroadcast(toA, a);
  og[1] = g.unbroadcast(toB, b);
  return success();
}
PLAIT_VJP(MaxOp) { return extremumVJP(op, g, rg, og, true); }
PLAIT_VJP(MinOp) { return extremumVJP(op, g, rg, og, false); }

PLAIT_VJP(NegOp) { og[0] = g.neg(rg[0]); return success(); }
PLAIT_VJP(ExpOp) { og[0] = g.mul(rg[0], op.getResult()); return success(); }
PLAIT_VJP(LogOp) { og[0] = g.div(rg[0], op.getX()); return success(); }
PLAIT_VJP(SqrtOp) { og[0] = g.div(g.mulScalar(rg[0], 0.5), op.getResult()); return success(); }
PLAIT_VJP(RsqrtOp) {
  Value y = op.getResult();
  Value cube = g.mul(y, g.mul(y, y));
  og[0] = g.mul(g.mulScalar(rg[0], -0.5), cube);
  return success();
}
PLAIT_VJP(ReciprocalOp) {
  Value y = op.getResult();
  og[0] = g.neg(g.mul(rg[0], g.mul(y, y)));
  return success();
}
PLAIT_VJP(ErfOp) {
  Value x = op.getX();
  Value e = g.b.create<ExpOp>(g.loc, g.neg(g.mul(x, x)));
  og[0] = g.mul(rg[0], g.mulScalar(e, 2.0 / std::sqrt(M_PI)));
  return success();
}
PLAIT_VJP(TanhOp) {
  Value y = op.getResult();
  Value square = g.mul(y, y);
  og[0] = g.mul(rg[0], g.sub(g.scalar(y, 1.0), square));
  return success();
}
PLAIT_VJP(SinOp) { og[0] = g.mul(rg[0], g.b.create<CosOp>(g.loc, op.getX())); return success(); }
PLAIT_VJP(CosOp) {
  og[0] = g.neg(g.mul(rg[0], g.b.create<SinOp>(g.loc, op.getX())));
  return success();
}
PLAIT_VJP(SigmoidOp) {
  Value y = op.getResult();
  og[0] = g.mul(rg[0], g.mul(y, g.sub(g.scalar(y, 1.0), y)));
  return success();
}
PLAIT_VJP(SiluOp) {
  Value x = op.getX();
  Value s = g.b.create<SigmoidOp>(g.loc, x);
  Value one = g.scalar(x, 1.0);
  og[0] = g.mul(rg[0], g.mul(s, g.add(one, g.mul(x, g.sub(one, s)))));
  return success();
}
PLAIT_VJP(SoftplusOp) {
  og[0] = g.mul(rg[0], g.b.create<SigmoidOp>(g.loc, op.getX()));
  return success();
}
PLAIT_VJP(AbsOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  og[0] = g.mul(rg[0], g.b.create<SignOp>(g.loc, op.getX()));
  return success();
}
PLAIT_VJP(ReluOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  // From the result, as PyTorch's threshold_backward: relu(x) > 0 exactly where x > 0 (NaN
  // and -0 included), and the step keeps the result for the next layer anyway, so the input
  // need not live until the backward pass (a linear layer's output dies at its ReLU).
  Value positive =
      g.b.create<GreaterOp>(g.loc, op.getResult(), g.scalar(op.getResult(), 0.0));
  og[0] = g.where(positive, rg[0], g.scalar(rg[0], 0.0));
  return success();
}
PLAIT_VJP(LeakyReluOp) {
  Value positive = g.b.create<GreaterOp>(g.loc, op.getX(), g.scalar(op.getX(), 0.0));
  og[0] = g.where(positive, rg[0], g.mulScalar(rg[0], op.getAlpha().convertToDouble()));
  return success();
}
PLAIT_VJP(EluOp) {
  Value positive = g.b.create<GreaterOp>(g.loc, op.getX(), g.scalar(op.getX(), 0.0));
  Value alpha = g.scalar(op.getX(), op.getAlpha().convertToDouble());
  og[0] = g.where(positive, rg[0], g.mul(rg[0], g.add(op.getResult(), alpha)));
  return success();
}
PLAIT_VJP(HardSigmoidOp) {
  double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
  Value x = op.getX();
  Value offset = g.scalar(x, beta);
  Value z = g.add(g.mulScalar(x, alpha), offset);
  Value belowOne = g.b.create<LessOp>(g.loc, z, g.scalar(z, 1.0));
  Value aboveZero = g.b.create<GreaterOp>(g.loc, z, g.scalar(z, 0.0));
  Value inside = g.b.create<AndOp>(g.loc, aboveZero, belowOne);
  Value zero = g.scalar(rg[0], 0.0);
  og[0] = g.where(inside, g.mulScalar(rg[0], alpha), zero);
  return success();
}
PLAIT_VJP(ClampOp) {
  Value x = op.getX();
  if (!isFloatTensor(x))
    return success();
  Value keep;
  if (auto lo = op.getMin())
    keep = g.b.create<GreaterEqualOp>(g.loc, x, g.scalar(x, lo->convertToDouble()));
  if (auto hi = op.getMax()) {
    Value below = g.b.create<LessEqualOp>(g.loc, x, g.scalar(x, hi->convertToDouble()));
    keep = keep ? Value(g.b.create<AndOp>(g.loc, keep, below)) : below;
  }
  og[0] = keep ? g.where(keep, rg[0], g.scalar(rg[0], 0.0)) : rg[0];
  return success();
}
PLAIT_VJP(GeluOp) {
  Value x = op.getX();
  if (op.getApproximate() == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value x2 = g.mul(x, x);
    Value inner = g.mulScalar(g.add(x, g.mulScalar(g.mul(x2, x), c)), k);
    Value t = g.b.create<TanhOp>(g.loc, inner);
    Value one = g.scalar(x, 1.0);
    Value left = g.mulScalar(g.add(one, t), 0.5);
    Value dInner = g.mulScalar(g.add(one, g.mulScalar(x2, 3 * c)), k);
    Value slope = g.mul(g.sub(one, g.mul(t, t)), dInner);
    Value right = g.mul(g.mulScalar(x, 0.5), slope);
    og[0] = g.mul(rg[0], g.add(left, right));
    return success();
  }
  // 0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi)
  Value erf = g.b.create<ErfOp>(g.loc, g.mulScalar(x, M_SQRT1_2));
  Value cdf = g.mulScalar(g.add(g.scalar(x, 1.0), erf), 0.5);
  Value pdf = g.mulScalar(g.b.create<ExpOp>(g.loc, g.mulScalar(g.mul(x, x), -0.5)),
                          1.0 / std::sqrt(2.0 * M_PI));
  og[0] = g.mul(rg[0], g.add(cdf, g.mul(x, pdf)));
  return success();
}
PLAIT_VJP(WhereOp) {
  Value zero = g.scalar(rg[0], 0.0);
  og[1] = g.unbroadcast(g.where(op.getCond(), rg[0], zero), op.getX());
  og[2] = g.unbroadcast(g.where(op.getCond(), zero, rg[0]), op.getY());
  return success();
}
PLAIT_VJP(CastOp) {
  if (isFloatTensor(op.getX()) && isFloatTensor(op.getResult()))
    og[0] = g.b.create<CastOp>(g.loc, op.getX().getType(), rg[0]);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

PLAIT_VJP(ReduceSumOp) {
  auto axes = g.reducedAxes(op.getAxes(), op.getX().getType().getRank());
  og[0] = g.broadcastTo(g.keepdimsShape(rg[0], op.getX(), axes), op.getX().getType());
  return success();
}
PLAIT_VJP(ReduceMeanOp) {
  auto xt = op.getX().getType();
  auto axes = g.reducedAxes(op.getAxes(), xt.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= xt.getDimSize(a);
  Value scaled = g.mulScalar(rg[0], 1.0 / (double)count);
  og[0] = g.broadcastTo(g.keepdimsShape(scaled, op.getX(), axes), xt);
  return success();
}
/// reduce_max/min: the gradient is shared evenly among the elements equal to the result.
template <typename Op> LogicalResult reduceExtremumVJP(Op op, Grad &g, ArrayRef<Value> rg,
                                                       SmallVectorImpl<Value> &og) {
  Value x = op.getX();
  auto axes = g.reducedAxes(op.getAxes(), op.getX().getType().getRank());
  Value y = g.keepdimsShape(op.getResult(), x, axes);
  Value hit = g.b.create<EqualOp>(g.loc, x, y);
  Value zero = g.scalar(x, 0.0);
  Value mask = g.where(hit, g.scalar(x, 1.0), zero);
  Value count = g.sum(mask, axes, /*keepdims=*/true);
  Value share = g.div(g.keepdimsShape(rg[0], x, axes), count);
  og[0] = g.mul(mask, share);
  return success();
}
PLAIT_VJP(ReduceMaxOp) { return reduceExtremumVJP(op, g, rg, og); }
PLAIT_VJP(ReduceMinOp) { return reduceExtremumVJP(op, g, rg, og); }

PLAIT_VJP(SoftmaxOp) {
  Value y = op.getResult();
  int64_t axis = *normalizeAxis(op.getAxis(), op.getType().getRank());
  Value dot = g.sum(g.mul(rg[0], y), {axis}, true);
  og[0] = g.mul(y, g.sub(rg[0], dot));
  return success();
}
PLAIT_VJP(DetOp) {
  // d det(A) / dA is A's cofactor matrix: dA = dy[..., None, None] * cofactors(A).
  Value x = op.getX();
  SmallVector<int64_t> shape(rankedType(rg[0]).getShape());
  shape.append({1, 1});
  Value dy = g.reshape(rg[0], shape);
  Value cof = g.b.create<CofactorsOp>(g.loc, x.getType(), x);
  og[0] = g.mul(dy, cof);
  return success();
}
PLAIT_VJP(LogSoftmaxOp) {
  int64_t axis = *normalizeAxis(op.getAxis(), op.getType().getRank());
  Value p = g.b.create<ExpOp>(g.loc, op.getResult());
  og[0] = g.sub(rg[0], g.mul(p, g.sum(rg[0], {axis}, true)));
  return success();
}

/// Axes [axis, rank) normalised over, and the leading axes the params are shared across.
void normAxes(int64_t axis, int64_t rank, SmallVectorImpl<int64_t> &norm,
              SmallVectorImpl<int64_t> &lead) {
  int64_t a = *normalizeAxis(axis, rank);
  for (int64_t d = 0; d < rank; ++d)
    (d < a ? lead : norm).push_back(d);
}

/// A layer norm's gradients as reductions and elementwise ops (what plait-expand-norm-grad
/// writes for a layer_norm_grad): dx, dscale and, with `withBias`, dbias.
std::array<Value, 3> layerNormGradOps(Grad &g, Value x, Value scale, Value dy, int64_t axis,
                                      double epsilon, bool withBias) {
  SmallVector<int64_t> norm, lead;
  normAxes(axis, rankedType(x).getRank(), norm, lead);
  std::array<Value, 3> grads;
  Value mu = g.mean(x, norm, true);
  Value xc = g.sub(x, mu);
  Value var = g.mean(g.mul(xc, xc), norm, true);
  Value rstd = g.b.create<RsqrtOp>(g.loc, g.add(var, g.scalar(x, epsilon)));
  Value xhat = g.mul(xc, rstd);
  auto paramType = rankedType(scale);
  // Summed with keepdims, then reshaped (free): the elementwise fuser computes a keepdims
  // sum over the leading axes inside the kernel that produces its operand.
  auto reduceLead = [&](Value v) {
    return lead.empty() ? v : g.reshape(g.sum(v, lead, true), paramType);
  };
  grads[1] = reduceLead(g.mul(dy, xhat));
  if (withBias)
    grads[2] = reduceLead(dy);
  Value dxhat = g.mul(dy, scale);
  Value projection = g.mul(xhat, g.mean(g.mul(dxhat, xhat), norm, true));
  Value term = g.sub(g.sub(dxhat, g.mean(dxhat, norm, true)), projection);
  grads[0] = g.mul(rstd, term);
  return grads;
}

/// An RMS norm's gradients as reductions and elementwise ops: dx and dscale.
std::array<Value, 2> rmsNormGradOps(Grad &g, Value x, Value scale, Value dy, int64_t axis,
                                    double epsilon) {
  SmallVector<int64_t> norm, lead;
  normAxes(axis, rankedType(x).getRank(), norm, lead);
  Value eps = g.scalar(x, epsilon);
  Value r = g.b.create<RsqrtOp>(g.loc, g.add(g.mean(g.mul(x, x), norm, true), eps));
  Value xr = g.mul(x, r);
  Value dscale = g.mul(dy, xr);
  std::array<Value, 2> grads;
  grads[1] = lead.empty() ? dscale : g.reshape(g.sum(dscale, lead, true), rankedType(scale));
  Value dxr = g.mul(dy, scale);
  // d/dx (x * r) = r * dxr - x * r^3 * mean(dxr * x)
  Value r3 = g.mul(r, g.mul(r, r));
  Value meanDxrX = g.mean(g.mul(dxr, x), norm, true);
  Value correction = g.mul(g.mul(x, r3), meanDxrX);
  grads[0] = g.sub(g.mul(r, dxr), correction);
  return grads;
}

// A norm's gradients are one op (one kernel that reads x and dy once); plait-compile expands
// it into layer/rmsNormGradOps under --no-fused-norm.
PLAIT_VJP(LayerNormOp) {
  SmallVector<Type> types{op.getX().getType(), op.getScale().getType()};
  if (op.getBias())
    types.push_back(op.getBias().getType());
  auto grad = g.b.create<LayerNormGradOp>(g.loc, types, op.getX(), op.getScale(), rg[0],
                                          op.getAxisAttr(), op.getEpsilonAttr());
  og[0] = grad.getDx();
  og[1] = grad.getDscale();
  if (op.getBias())
    og[2] = grad.getDbias();
  return success();
}

/// batch_norm: y's gradient is one batch_norm_grad; a gradient reaching the statistics
/// themselves (BatchNormalization-9's saved mean and variance, read by the loss) adds
/// dmean / n and 2 (x - mean) dvar / n per channel, as the decomposed mean and variance would.
/// A SyncBatchNorm's (`sync`) is batch_norm_grad {sync}, and a gradient reaching its global
/// statistics is averaged over the ranks first (plait.sync_mean), as the decomposed form's.
PLAIT_VJP(BatchNormOp) {
  if (op.getStats())
    return op.emitOpError("with 'stats' (a lowered SyncBatchNorm) has no gradient: the training "
                          "step differentiates the 'sync' form");
  Value x = op.getX();
  auto xt = rankedType(x);
  Value dx;
  if (rg[0]) {
    auto grad = g.b.create<BatchNormGradOp>(
        g.loc, TypeRange{xt, op.getScale().getType(), op.getBias().getType()}, x, op.getScale(),
        op.getMean(), op.getVar(), rg[0], /*sums=*/Value(), op.getEpsilonAttr(), op.getSyncAttr());
    dx = grad.getDx();
    og[1] = grad.getDscale();
    og[2] = grad.getDbias();
  }
  SmallVector<int64_t> channelShape(xt.getRank(), 1);
  channelShape[1] = xt.getDimSize(1);
  const double n = double(xt.getNumElements()) / double(std::max<int64_t>(xt.getDimSize(1), 1));
  auto accumulate = [&](Value term) {
    term = g.broadcastTo(term, xt);
    dx = dx ? g.add(dx, term) : term;
  };
  auto statGrad = [&](Value grad) -> Value {
    return op.getSync() ? g.b.create<SyncMeanOp>(g.loc, grad).getResult() : grad;
  };
  if (rg[1])
    accumulate(g.mulScalar(g.reshape(statGrad(rg[1]), channelShape), 1.0 / n));
  if (rg[2]) {
    Value mean = g.reshape(op.getMean(), channelShape);
    Value centred = g.sub(x, mean);
    Value dvar = g.mulScalar(g.reshape(statGrad(rg[2]), channelShape), 2.0 / n);
    accumulate(g.mul(centred, dvar));
  }
  og[0] = dx;
  return success();
}

PLAIT_VJP(RmsNormOp) {
  auto grad = g.b.create<RmsNormGradOp>(g.loc, TypeRange{op.getX().getType(), op.getScale().getType()},
                                        op.getX(), op.getScale(), rg[0], op.getAxisAttr(),
                                        op.getEpsilonAttr());
  og[0] = grad.getDx();
  og[1] = grad.getDscale();
  return success();
}

/// add_layer_norm / add_rms_norm: x and residual both get the sum's whole gradient, which is
/// its own (the residual stream's, rg[1]) plus the norm's gradient of dy (rg[0]).
template <typename GradOp, typename Op>
LogicalResult addNormVJP(Op op, Grad &g, ArrayRef<Value> rg, SmallVectorImpl<Value> &og,
                         Value bias) {
  Value total = rg[1];
  if (rg[0]) {
    SmallVector<Type> types{op.getSum().getType(), op.getScale().getType()};
    if (bias)
      types.push_back(bias.getType());
    auto grad = g.b.create<GradOp>(g.loc, types, op.getSum(), op.getScale(), rg[0],
                                   op.getAxisAttr(), op.getEpsilonAttr());
    og[2] = grad->getResult(1);
    if (bias)
      og[3] = grad->getResult(2);
    Value dx = grad->getResult(0);
    total = total ? g.add(total, dx) : dx;
  }
  og[0] = og[1] = total;
  return success();
}
PLAIT_VJP(AddLayerNormOp) {
  return addNormVJP<LayerNormGradOp>(op, g, rg, og, op.getBias());
}
PLAIT_VJP(AddRmsNormOp) { return addNormVJP<RmsNormGradOp>(op, g, rg, og, Value()); }

PLAIT_VJP(AttentionOp) {
  // lse is saved for the backward, never differentiated through: only out's gradient flows.
  if (rg[1])
    return op.emitOpError("cannot differentiate through 'lse'; only 'out' has a gradient");
  if (!rg[0])
    return success();
  auto grads = g.b.create<AttentionGradOp>(
      g.loc, TypeRange{op.getQ().getType(), op.getK().getType(), op.getV().getType()}, op.getQ(),
      op.getK(), op.getV(), op.getOut(), op.getLse(), rg[0], op.getStep(), op.getScaleAttr(),
      op.getCausalAttr(), op.getDropoutAttr(), op.getSeedAttr(), op.getStreamAttr());
  og[0] = grads.getDq();
  og[1] = grads.getDk();
  og[2] = grads.getDv();
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

PLAIT_VJP(MatmulOp) {
  if (!isFloatTensor(op.getLhs()))
    return success();
  Value dy = rg[0];
  if (Value bias = op.getBias()) // added to every row: its gradient sums dy's rows
    og[2] = g.unbroadcast(dy, bias);
  // With transpose flags (plait-fold-transposes) the product is of the transposed operands:
  // differentiate that one, then transpose each gradient back to its operand's shape.
  bool transA = op.getTransposeLhs(), transB = op.getTransposeRhs();
  Value a = transA ? g.transposeLast2(op.getLhs()) : op.getLhs();
  Value b = transB ? g.transposeLast2(op.getRhs()) : op.getRhs();
  auto restore = llvm::make_scope_exit([&] {
    if (transA && og[0])
      og[0] = g.transposeLast2(og[0]);
    if (transB && og[1])
      og[1] = g.transposeLast2(og[1]);
  });
  auto at = rankedType(a), bt = rankedType(b);
  // Promote 1-D operands as numpy does, so the rule below sees matrices.
  Value a2 = at.getRank() == 1 ? g.reshape(a, {1, at.getDimSize(0)}) : a;
  Value b2 = bt.getRank() == 1 ? g.reshape(b, {bt.getDimSize(0), 1}) : b;
  auto a2t = rankedType(a2), b2t = rankedType(b2);
  auto batch = *broadcastShapes(a2t.getShape().drop_back(2), b2t.getShape().drop_back(2));
  SmallVector<int64_t> dyShape(batch);
  dyShape.push_back(a2t.getDimSize(a2t.getRank() - 2));
  dyShape.push_back(b2t.getDimSize(b2t.getRank() - 1));
  Value dy2 = g.reshape(dy, dyShape);
  Value da = g.matmul(dy2, g.transposeLast2(b2)); // [batch.., m, k]
  og[0] = g.reshape(g.unbroadcast(da, a2), at);
  if (b2t.getRank() == 2 && a2t.getRank() > 2) {
    // A batch of rows times one matrix (a linear layer): the batch folds into the rows, so
    // db is one [k, rows] x [rows, n] product, as PyTorch computes it, instead of a
    // [batch.., k, n] product summed over the batch.
    int64_t k = a2t.getShape().back(), n = b2t.getDimSize(1);
    int64_t rows = a2t.getNumElements() / k;
    Value dyRows = g.reshape(dy2, {rows, n});
    Value db = g.matmul(g.transposeLast2(g.reshape(a2, {rows, k})), dyRows);
    og[1] = g.reshape(db, bt);
    return success();
  }
  Value db = g.matmul(g.transposeLast2(a2), dy2); // [batch.., k, n]
  og[1] = g.reshape(g.unbroadcast(db, b2), bt);
  return success();
}

PLAIT_VJP(GemmOp) {
  if (!isFloatTensor(op.getA()))
    return success();
  double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
  Value a = op.getA(), b = op.getB(), dy = rg[0];
  Value opA = op.getTransA() ? g.transposeLast2(a) : a;
  Value opB = op.getTransB() ? g.transposeLast2(b) : b;
  Value dOpA = g.matmul(dy, g.transposeLast2(opB));
  Value dOpB = g.matmul(g.transposeLast2(opA), dy);
  if (alpha != 1.0) {
    dOpA = g.mulScalar(dOpA, alpha);
    dOpB = g.mulScalar(dOpB, alpha);
  }
  og[0] = op.getTransA() ? g.transposeLast2(dOpA) : dOpA;
  og[1] = op.getTransB() ? g.transposeLast2(dOpB) : dOpB;
  if (Value c = op.getC())
    og[2] = g.unbroadcast(beta == 1.0 ? dy : g.mulScalar(dy, beta), c);
  return success();
}

PLAIT_VJP(Conv2dOp) {
  Value dy = rg[0];
  og[0] = g.b.create<Conv2dGradInputOp>(g.loc, op.getX().getType(), dy, op.getW(),
                                        op.getStridesAttr(), op.getPadsAttr(),
                                        op.getDilationsAttr(), op.getGroupAttr());
  og[1] = g.b.create<Conv2dGradWeightOp>(g.loc, op.getW().getType(), op.getX(), dy,
                                         op.getStridesAttr(), op.getPadsAttr(),
                                         op.getDilationsAttr(), op.getGroupAttr());
  if (Value bias = op.getBias())
    og[2] = g.reshape(g.sum(dy, {0, 2, 3}, false), rankedType(bias));
  return success();
}

// conv2d_grad_input is linear in its grad operand: the adjoint of conv2d over x. Its own
// adjoint is that conv2d, and its weight gradient is conv2d_grad_weight with the roles of the
// input and the output gradient as the forward convolution sees them (ONNX ConvTranspose
// imports as this op).
PLAIT_VJP(Conv2dGradInputOp) {
  Value dy = rg[0];
  og[0] = g.b.create<Conv2dOp>(g.loc, op.getGrad().getType(), dy, op.getW(), Value(),
                               op.getStridesAttr(), op.getPadsAttr(), op.getDilationsAttr(),
                               op.getGroupAttr());
  og[1] = g.b.create<Conv2dGradWeightOp>(g.loc, op.getW().getType(), dy, op.getGrad(),
                                         op.getStridesAttr(), op.getPadsAttr(),
                                         op.getDilationsAttr(), op.getGroupAttr());
  return success();
}

// gather_grad is linear in its grad operand (ONNX ScatterElements and ScatterND import as
// it): its adjoint gathers the result's gradient back at the same indices.
PLAIT_VJP(GatherGradOp) {
  og[0] = g.b.create<GatherOp>(g.loc, op.getGrad().getType(), rg[0], op.getIndices(),
                               op.getAxisAttr(), /*padding_idx=*/IntegerAttr());
  return success();
}

PLAIT_VJP(MaxPool2dOp) {
  og[0] = g.b.create<MaxPool2dGradOp>(g.loc, op.getX().getType(), op.getX(), rg[0],
                                      op.getKernelAttr(), op.getStridesAttr(), op.getPadsAttr(),
                                      op.getDilationsAttr(), op.getCeilModeAttr());
  return success();
}

PLAIT_VJP(AvgPool2dOp) {
  og[0] = g.b.create<AvgPool2dGradOp>(g.loc, op.getX().getType(), rg[0], op.getKernelAttr(),
                                      op.getStridesAttr(), op.getPadsAttr(),
                                      op.getCeilModeAttr(), op.getCountIncludePadAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// A mean over the data-parallel ranks is linear and the same on every rank: its gradient is
// the same mean of the result's gradient (each rank's loss reads every rank's statistic).
PLAIT_VJP(SyncMeanOp) {
  og[0] = g.b.create<SyncMeanOp>(g.loc, rg[0]);
  return success();
}
PLAIT_VJP(ReshapeOp) {
  if (isFloatTensor(op.getX()))
    og[0] = g.reshape(rg[0], op.getX().getType());
  return success();
}
PLAIT_VJP(TransposeOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  auto perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  og[0] = g.b.create<TransposeOp>(g.loc, rg[0], g.b.getDenseI64ArrayAttr(inverse));
  return success();
}
PLAIT_VJP(BroadcastToOp) {
  if (isFloatTensor(op.getX()))
    og[0] = g.unbroadcast(rg[0], op.getX());
  return success();
}
PLAIT_VJP(SliceOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  auto xt = op.getX().getType();
  int64_t rank = xt.getRank();
  if (rankedType(op.getResult()).getNumElements() == 0) {
    og[0] = g.zerosLike(op.getX());
    return success();
  }
  // The gradient is the result's gradient put back where the slice took its elements, zeros
  // elsewhere. Per dimension of step s, the m elements taken lie at start + j * s: ascending
  // from lo with spacing |s|. A negative step reverses the gradient first; a spacing above 1
  // interleaves |s| - 1 zeros after each element (a pad of a new axis, then merged); the
  // rest is a pad on both sides.
  auto along = [&](Value v, int64_t d, int64_t start, int64_t end, int64_t step) -> Value {
    ArrayRef<int64_t> shape = rankedType(v).getShape();
    SmallVector<int64_t> starts(rank, 0), ends(shape), steps(rank, 1);
    starts[d] = start;
    ends[d] = end;
    steps[d] = step;
    return g.b.create<SliceOp>(g.loc, v, g.b.getDenseI64ArrayAttr(starts),
                               g.b.getDenseI64ArrayAttr(ends), g.b.getDenseI64ArrayAttr(steps));
  };
  Value grad = rg[0];
  SmallVector<int64_t> pads(2 * rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t step = op.getSteps()[d], start = op.getStarts()[d];
    int64_t m = rankedType(grad).getDimSize(d), spacing = step < 0 ? -step : step;
    int64_t lo = step > 0 ? start : start + (m - 1) * step;
    if (step < 0)
      grad = along(grad, d, m - 1, -1, -1);
    if (spacing > 1 && m > 1) {
      SmallVector<int64_t> shape(rankedType(grad).getShape());
      SmallVector<int64_t> split(shape);
      split.insert(split.begin() + d + 1, 1);
      SmallVector<int64_t> gaps(2 * (rank + 1), 0);
      gaps[rank + 1 + d + 1] = spacing - 1;
      Value spread = g.b.create<PadOp>(g.loc, g.reshape(grad, split),
                                       g.b.getDenseI64ArrayAttr(gaps), g.b.getF64FloatAttr(0.0));
      shape[d] = m * spacing;
      grad = along(g.reshape(spread, shape), d, 0, (m - 1) * spacing + 1, 1);
    }
    pads[d] = lo;
    pads[d + rank] = xt.getDimSize(d) - lo - ((m - 1) * spacing + 1);
  }
  og[0] = g.b.create<PadOp>(g.loc, grad, g.b.getDenseI64ArrayAttr(pads), g.b.getF64FloatAttr(0.0));
  return success();
}
PLAIT_VJP(PadOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  auto xt = op.getX().getType();
  int64_t rank = xt.getRank();
  SmallVector<int64_t> starts, ends, steps(rank, 1);
  for (int64_t d = 0; d < rank; ++d) {
    starts.push_back(op.getPads()[d]);
    ends.push_back(op.getPads()[d] + xt.getDimSize(d));
  }
  og[0] = g.b.create<SliceOp>(g.loc, rg[0], g.b.getDenseI64ArrayAttr(starts),
                              g.b.getDenseI64ArrayAttr(ends), g.b.getDenseI64ArrayAttr(steps));
  return success();
}
PLAIT_VJP(ConcatOp) {
  auto outType = op.getType();
  if (!isa<FloatType>(outType.getElementType()))
    return success();
  int64_t axis = *normalizeAxis(op.getAxis(), outType.getRank());
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    auto it = rankedType(input);
    SmallVector<int64_t> starts(outType.getRank(), 0), ends(outType.getShape()),
        steps(outType.getRank(), 1);
    starts[axis] = offset;
    ends[axis] = offset + it.getDimSize(axis);
    offset = ends[axis];
    og[i] = g.b.create<SliceOp>(g.loc, rg[0], g.b.getDenseI64ArrayAttr(starts),
                                g.b.getDenseI64ArrayAttr(ends), g.b.getDenseI64ArrayAttr(steps));
  }
  return success();
}
PLAIT_VJP(SplitOp) {
  if (!isFloatTensor(op.getX()))
    return success();
  SmallVector<Value> pieces;
  for (auto [i, result] : llvm::enumerate(op.getResults()))
    pieces.push_back(rg[i] ? rg[i] : g.zerosLike(result));
  og[0] = g.b.create<ConcatOp>(g.loc, pieces, op.getAxisAttr());
  return success();
}
PLAIT_VJP(GatherOp) {
  if (!isFloatTensor(op.getData()))
    return success();
  Value grad = rg[0];
  if (auto padding = op.getPaddingIdx()) {
    // The lookups of the padding row (p, or p - n as a negative index) send no gradient.
    Value indices = op.getIndices();
    auto indexType = rankedType(indices);
    int64_t rows = rankedType(op.getData()).getDimSize(0);
    auto row = static_cast<int64_t>(*padding); // I64Attr getters return uint64_t
    int64_t p = row < 0 ? row + rows : row;
    auto index = [&](int64_t v) -> Value {
      auto type = RankedTensorType::get({}, indexType.getElementType());
      return g.b.create<ConstantOp>(
          g.loc, DenseElementsAttr::get(type, g.b.getIntegerAttr(type.getElementType(), v)));
    };
    Value atRow = g.b.create<EqualOp>(g.loc, indices, index(p));
    Value fromEnd = g.b.create<EqualOp>(g.loc, indices, index(p - rows));
    Value padded = g.b.create<OrOp>(g.loc, atRow, fromEnd);
    // [indices..., 1, ...]: one flag per lookup, over its row of the gradient.
    SmallVector<int64_t> shape(indexType.getShape());
    shape.append(size_t(rankedType(grad).getRank() - indexType.getRank()), 1);
    Value flags = g.b.create<ReshapeOp>(
        g.loc, RankedTensorType::get(shape, rankedType(padded).getElementType()), padded);
    grad = g.where(flags, g.scalar(grad, 0.0), grad);
  }
  og[0] = g.b.create<GatherGradOp>(g.loc, op.getData().getType(), grad, op.getIndices(),
                                   op.getAxisAttr());
  return success();
}
PLAIT_VJP(TriluOp) {
  if (isFloatTensor(op.getX()))
    og[0] = g.b.create<TriluOp>(g.loc, rg[0], op.getUpperAttr(), op.getKAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

PLAIT_VJP(SoftmaxCrossEntropyOp) {
  og[0] = g.b.create<SoftmaxCrossEntropyGradOp>(
      g.loc, op.getInput().getType(), op.getInput(), op.getTarget(), rg[0], op.getWeight(),
      op.getReductionAttr(), op.getIgnoreIndexAttr(), op.getLabelSmoothingAttr());
  return success();
}
PLAIT_VJP(NllLossOp) {
  og[0] = g.b.create<NllLossGradOp>(g.loc, op.getInput().getType(), op.getInput(), op.getTarget(),
                                    rg[0], op.getWeight(), op.getReductionAttr(),
                                    op.getIgnoreIndexAttr(), nullptr);
  return success();
}

#undef PLAIT_VJP

/// Piecewise-constant ops: differentiable with a zero gradient (PyTorch agrees).
template <typename Op> struct ZeroVJP : VJPModel<ZeroVJP<Op>, Op> {
  static LogicalResult vjp(Op, Grad &, ArrayRef<Value>, SmallVectorImpl<Value> &) {
    return success();
  }
};

} // namespace

void eraseStopGradients(Operation *root) {
  SmallVector<StopGradientOp> stops;
  root->walk([&](StopGradientOp op) { stops.push_back(op); });
  for (StopGradientOp op : stops) {
    op.getResult().replaceAllUsesWith(op.getX());
    op.erase();
  }
}

void expandNormGrads(Operation *root) {
  SmallVector<Operation *> grads;
  root->walk([&](Operation *op) {
    if (isa<LayerNormGradOp, RmsNormGradOp>(op))
      grads.push_back(op);
  });
  for (Operation *op : grads) {
    OpBuilder b(op);
    Grad g{b, op->getLoc()};
    SmallVector<Value, 3> expanded;
    if (auto ln = dyn_cast<LayerNormGradOp>(op))
      llvm::append_range(expanded, layerNormGradOps(g, ln.getX(), ln.getScale(), ln.getDy(),
                                                    ln.getAxis(), ln.getEpsilon().convertToDouble(),
                                                    (bool)ln.getDbias()));
    else if (auto rms = dyn_cast<RmsNormGradOp>(op))
      llvm::append_range(expanded, rmsNormGradOps(g, rms.getX(), rms.getScale(), rms.getDy(),
                                                  rms.getAxis(),
                                                  rms.getEpsilon().convertToDouble()));
    for (auto [result, value] : llvm::zip(op->getResults(), expanded))
      result.replaceAllUsesWith(value);
    op->erase();
  }
}

void registerVJPInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, PlaitDialect *) {
    AddOp::attachInterface<AddOpVJP>(*ctx);
    SubOp::attachInterface<SubOpVJP>(*ctx);
    MulOp::attachInterface<MulOpVJP>(*ctx);
    DivOp::attachInterface<DivOpVJP>(*ctx);
    PowOp::attachInterface<PowOpVJP>(*ctx);
    MaxOp::attachInterface<MaxOpVJP>(*ctx);
    MinOp::attachInterface<MinOpVJP>(*ctx);
    NegOp::attachInterface<NegOpVJP>(*ctx);
    ExpOp::attachInterface<ExpOpVJP>(*ctx);
    LogOp::attachInterface<LogOpVJP>(*ctx);
    SqrtOp::attachInterface<SqrtOpVJP>(*ctx);
    RsqrtOp::attachInterface<RsqrtOpVJP>(*ctx);
    ReciprocalOp::attachInterface<ReciprocalOpVJP>(*ctx);
    ErfOp::attachInterface<ErfOpVJP>(*ctx);
    TanhOp::attachInterface<TanhOpVJP>(*ctx);
    SinOp::attachInterface<SinOpVJP>(*ctx);
    CosOp::attachInterface<CosOpVJP>(*ctx);
    SigmoidOp::attachInterface<SigmoidOpVJP>(*ctx);
    SiluOp::attachInterface<SiluOpVJP>(*ctx);
    SoftplusOp::attachInterface<SoftplusOpVJP>(*ctx);
    AbsOp::attachInterface<AbsOpVJP>(*ctx);
    ReluOp::attachInterface<ReluOpVJP>(*ctx);
    LeakyReluOp::attachInterface<LeakyReluOpVJP>(*ctx);
    EluOp::attachInterface<EluOpVJP>(*ctx);
    HardSigmoidOp::attachInterface<HardSigmoidOpVJP>(*ctx);
    ClampOp::attachInterface<ClampOpVJP>(*ctx);
    GeluOp::attachInterface<GeluOpVJP>(*ctx);
    WhereOp::attachInterface<WhereOpVJP>(*ctx);
    CastOp::attachInterface<CastOpVJP>(*ctx);
    ReduceSumOp::attachInterface<ReduceSumOpVJP>(*ctx);
    ReduceMeanOp::attachInterface<ReduceMeanOpVJP>(*ctx);
    ReduceMaxOp::attachInterface<ReduceMaxOpVJP>(*ctx);
    ReduceMinOp::attachInterface<ReduceMinOpVJP>(*ctx);
    SoftmaxOp::attachInterface<SoftmaxOpVJP>(*ctx);
    DetOp::attachInterface<DetOpVJP>(*ctx);
    LogSoftmaxOp::attachInterface<LogSoftmaxOpVJP>(*ctx);
    LayerNormOp::attachInterface<LayerNormOpVJP>(*ctx);
    BatchNormOp::attachInterface<BatchNormOpVJP>(*ctx);
    RmsNormOp::attachInterface<RmsNormOpVJP>(*ctx);
    AddLayerNormOp::attachInterface<AddLayerNormOpVJP>(*ctx);
    AddRmsNormOp::attachInterface<AddRmsNormOpVJP>(*ctx);
    AttentionOp::attachInterface<AttentionOpVJP>(*ctx);
    MatmulOp::attachInterface<MatmulOpVJP>(*ctx);
    GemmOp::attachInterface<GemmOpVJP>(*ctx);
    Conv2dOp::attachInterface<Conv2dOpVJP>(*ctx);
    Conv2dGradInputOp::attachInterface<Conv2dGradInputOpVJP>(*ctx);
    GatherGradOp::attachInterface<GatherGradOpVJP>(*ctx);
    MaxPool2dOp::attachInterface<MaxPool2dOpVJP>(*ctx);
    AvgPool2dOp::attachInterface<AvgPool2dOpVJP>(*ctx);
    ReshapeOp::attachInterface<ReshapeOpVJP>(*ctx);
    SyncMeanOp::attachInterface<SyncMeanOpVJP>(*ctx);
    TransposeOp::attachInterface<TransposeOpVJP>(*ctx);
    BroadcastToOp::attachInterface<BroadcastToOpVJP>(*ctx);
    SliceOp::attachInterface<SliceOpVJP>(*ctx);
    PadOp::attachInterface<PadOpVJP>(*ctx);
    ConcatOp::attachInterface<ConcatOpVJP>(*ctx);
    SplitOp::attachInterface<SplitOpVJP>(*ctx);
    GatherOp::attachInterface<GatherOpVJP>(*ctx);
    TriluOp::attachInterface<TriluOpVJP>(*ctx);
    SoftmaxCrossEntropyOp::attachInterface<SoftmaxCrossEntropyOpVJP>(*ctx);
    NllLossOp::attachInterface<NllLossOpVJP>(*ctx);
    FloorOp::attachInterface<ZeroVJP<FloorOp>>(*ctx);
    CeilOp::attachInterface<ZeroVJP<CeilOp>>(*ctx);
    RoundOp::attachInterface<ZeroVJP<RoundOp>>(*ctx);
    StopGradientOp::attachInterface<ZeroVJP<StopGradientOp>>(*ctx);
    SignOp::attachInterface<ZeroVJP<SignOp>>(*ctx);
  });
}

} // namespace plait
