// Importers of ONNX's training-domain optimizer ops (ai.onnx.preview.training, version 1):
// Adagrad, Adam and Momentum, each one update of N tensors from the learning rate R (a float
// scalar) and the update count T (an int64 scalar, 0 on the first update), composed of plait's
// elementwise ops as the spec defines them (onnx/defs/training/defs.cc and the reference
// implementations of onnx's node tests):
//   Adagrad:  r = R / (1 + T * decay_factor); g = norm_coefficient * X + G; H' = H + g * g;
//             X' = X - r * g / (sqrt(H') + epsilon)
//   Momentum: g = norm_coefficient * X + G; V' = alpha * V + (T > 0 ? beta : 1) * g;
//             X' = X - R * V' (standard), X - R * (g + alpha * V') (nesterov)
//   Adam:     g = norm_coefficient * X + G; V' = alpha * V + (1 - alpha) * g;
//             H' = beta * H + (1 - beta) * g * g;
//             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
//             X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + epsilon))
// Inputs: R, T, then the N tensors X, the N gradients G and the N states of each kind (V,
// then H for Adam); outputs: the N new X, then the new states in the same order. The scalar
// factors (the adjusted learning rate, Momentum's gradient coefficient) are computed in f64 from
// R and T and rounded to the tensors' float type once, as the reference computes them (numpy's
// Python floats), and the element math runs in that type. Defaults as the schema: Adam alpha
// 0.9, beta 0.999; epsilon 1e-6 (Adam, Adagrad); the others 0.
#include "compiler/import/onnx/Importer.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The N tensors of one update: their operands (X, G and `states` state kinds) checked (every
/// one float, of its X's type, one float type for all of them), the hyper-parameters R and T
/// cast to f64 for the scalar factors, and that type. Empty after the node's error.
struct Update {
  unsigned n = 0;
  Value r, t; // f64 scalars
  Type element;
  SmallVector<Value> x, g;
  SmallVector<SmallVector<Value>> states; // [kind][i]
};

std::optional<Update> readUpdate(NodeContext &ctx, unsigned stateKinds) {
  const unsigned perTensor = 2 + stateKinds;
  if (ctx.numInputs() < 2 + perTensor || (ctx.numInputs() - 2) % perTensor != 0) {
    (void)ctx.error("expects R, T and " + Twine(perTensor) +
                    " inputs per tensor (X, G and its states), got " + Twine(ctx.numInputs()) +
                    " inputs");
    return std::nullopt;
  }
  Update u;
  u.n = (ctx.numInputs() - 2) / perTensor;
  if (ctx.numOutputs() != (1 + stateKinds) * u.n) {
    (void)ctx.error("expects " + Twine((1 + stateKinds) * u.n) + " outputs for " + Twine(u.n) +
                    " tensors, got " + Twine(ctx.numOutputs()));
    return std::nullopt;
  }
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    if (!ctx.hasInput(i)) {
      (void)ctx.error("input " + Twine(i) + " is missing (none of this op's is optional)");
      return std::nullopt;
    }
  if (failed(ctx.requireFloatInput(0)) || failed(ctx.requireFloatInput(2)))
    return std::nullopt;
  RankedTensorType r = ctx.inputType(0), t = ctx.inputType(1);
  if (!r || !t)
    return std::nullopt;
  if (r.getRank() != 0 || t.getRank() != 0 || !t.getElementType().isInteger(64)) {
    (void)ctx.error(
        "R must be a float scalar and T an int64 scalar, got " +
        Twine(r.getRank() != 0 ? "R of rank " + std::to_string(r.getRank()) : "T of another type"));
    return std::nullopt;
  }
  Type element = ctx.inputType(2).getElementType();
  u.states.resize(stateKinds);
  for (unsigned i = 0; i < u.n; ++i) {
    RankedTensorType xType = ctx.inputType(2 + i);
    if (!xType)
      return std::nullopt;
    for (unsigned k = 0; k < perTensor; ++k) {
      unsigned at = 2 + k * u.n + i;
      RankedTensorType type = ctx.inputType(at);
      if (!type)
        return std::nullopt;
      if (type.getElementType() != element || type.getShape() != xType.getShape()) {
        (void)ctx.error("input " + Twine(at) + " ('" + ctx.inputName(at) +
                        "') must be of its tensor X's shape and of the tensors' float type");
        return std::nullopt;
      }
      Value v = ctx.input(at);
      if (!v)
        return std::nullopt;
      (k == 0 ? u.x : k == 1 ? u.g : u.states[k - 2]).push_back(v);
    }
  }
  Type f64 = Float64Type::get(ctx.context());
  u.element = element;
  u.r = ctx.cast(ctx.input(0), f64);
  u.t = ctx.cast(ctx.input(1), f64);
  if (!u.r || !u.t)
    return std::nullopt;
  return u;
}

/// The outputs: the new tensors, then each state kind's new values.
LogicalResult setOutputs(NodeContext &ctx, const Update &u, ArrayRef<Value> x,
                         ArrayRef<SmallVector<Value>> states) {
  for (unsigned i = 0; i < u.n; ++i) {
    if (!x[i])
      return failure();
    ctx.setOutput(i, x[i]);
    for (auto [k, kind] : llvm::enumerate(states)) {
      if (!kind[i])
        return failure();
      ctx.setOutput(unsigned((k + 1) * u.n + i), kind[i]);
    }
  }
  return success();
}

/// norm_coefficient * x + g: the gradient with the L2 regularisation's.
Value regularized(NodeContext &ctx, Value x, Value g, double norm) {
  return ctx.create<AddOp>({ctx.create<MulOp>({ctx.scalar(norm, elementTypeOf(x)), x}), g});
}

/// T > 0 (an i1 scalar).
Value afterFirst(NodeContext &ctx, const Update &u) {
  return ctx.create<GreaterOp>({u.t, ctx.scalar(0.0, elementTypeOf(u.t))});
}

LogicalResult importAdagrad(NodeContext &ctx) {
  auto u = readUpdate(ctx, 1);
  if (!u)
    return failure();
  Type e = u->element, f64 = elementTypeOf(u->r);
  auto s = [&](double v) { return ctx.scalar(v, e); };
  const double decay = ctx.floatAttr("decay_factor", 0.0), eps = ctx.floatAttr("epsilon", 1e-6);
  const double norm = ctx.floatAttr("norm_coefficient", 0.0);
  Value r =
      ctx.cast(ctx.create<DivOp>(
                   {u->r, ctx.create<AddOp>({ctx.scalar(1.0, f64),
                                             ctx.create<MulOp>({u->t, ctx.scalar(decay, f64)})})}),
               e);
  SmallVector<Value> x;
  SmallVector<SmallVector<Value>> h(1);
  for (unsigned i = 0; i < u->n; ++i) {
    Value g = regularized(ctx, u->x[i], u->g[i], norm);
    Value hNew = ctx.create<AddOp>({u->states[0][i], ctx.create<MulOp>({g, g})});
    Value denominator = ctx.create<AddOp>({ctx.create<SqrtOp>({hNew}), s(eps)});
    Value step = ctx.create<DivOp>({ctx.create<MulOp>({r, g}), denominator});
    x.push_back(ctx.create<SubOp>({u->x[i], step}));
    h[0].push_back(hNew);
  }
  return setOutputs(ctx, *u, x, h);
}

LogicalResult importMomentum(NodeContext &ctx) {
  for (const char *name : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!ctx.hasAttr(name))
      return ctx.error(Twine("needs attribute '") + name + "'");
  std::string mode = ctx.stringAttr("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return ctx.unsupported("mode '" + mode + "' (expected standard or nesterov)");
  auto u = readUpdate(ctx, 1);
  if (!u)
    return failure();
  Type e = u->element;
  const double alpha = ctx.floatAttr("alpha", 0.0), beta = ctx.floatAttr("beta", 0.0);
  const double norm = ctx.floatAttr("norm_coefficient", 0.0);
  // The gradient's coefficient is 1 on the first update (T = 0), beta after.
  Value coefficient =
      ctx.create<WhereOp>({afterFirst(ctx, *u), ctx.scalar(beta, e), ctx.scalar(1.0, e)});
  Value r = ctx.cast(u->r, e);
  SmallVector<Value> x;
  SmallVector<SmallVector<Value>> v(1);
  for (unsigned i = 0; i < u->n; ++i) {
    Value g = regularized(ctx, u->x[i], u->g[i], norm);
    Value vNew = ctx.create<AddOp>({ctx.create<MulOp>({ctx.scalar(alpha, e), u->states[0][i]}),
                                    ctx.create<MulOp>({coefficient, g})});
    Value direction = mode == "standard"
                          ? vNew
                          : ctx.create<AddOp>({g, ctx.create<MulOp>({ctx.scalar(alpha, e), vNew})});
    x.push_back(ctx.create<SubOp>({u->x[i], ctx.create<MulOp>({r, direction})}));
    v[0].push_back(vNew);
  }
  return setOutputs(ctx, *u, x, v);
}

LogicalResult importAdam(NodeContext &ctx) {
  auto u = readUpdate(ctx, 2);
  if (!u)
    return failure();
  Type e = u->element, f64 = elementTypeOf(u->r);
  auto s = [&](double v) { return ctx.scalar(v, e); };
  auto d = [&](double v) { return ctx.scalar(v, f64); };
  const double alpha = ctx.floatAttr("alpha", 0.9), beta = ctx.floatAttr("beta", 0.999);
  const double eps = ctx.floatAttr("epsilon", 1e-6), norm = ctx.floatAttr("norm_coefficient", 0.0);
  const double post = ctx.floatAttr("norm_coefficient_post", 0.0);
  // The bias correction from the second update on (at T = 0 its 1 - alpha^0 is 0; not used).
  Value corrected = ctx.create<DivOp>(
      {ctx.create<MulOp>({u->r, ctx.create<SqrtOp>({ctx.create<SubOp>(
                                    {d(1.0), ctx.create<PowOp>({d(beta), u->t})})})}),
       ctx.create<SubOp>({d(1.0), ctx.create<PowOp>({d(alpha), u->t})})});
  Value r = ctx.cast(ctx.create<WhereOp>({afterFirst(ctx, *u), corrected, u->r}), e);
  SmallVector<Value> x;
  SmallVector<SmallVector<Value>> states(2);
  for (unsigned i = 0; i < u->n; ++i) {
    Value g = regularized(ctx, u->x[i], u->g[i], norm);
    Value vNew = ctx.create<AddOp>(
        {ctx.create<MulOp>({s(alpha), u->states[0][i]}), ctx.create<MulOp>({s(1.0 - alpha), g})});
    Value hNew = ctx.create<AddOp>({ctx.create<MulOp>({s(beta), u->states[1][i]}),
                                    ctx.create<MulOp>({s(1.0 - beta), ctx.create<MulOp>({g, g})})});
    Value denominator = ctx.create<AddOp>({ctx.create<SqrtOp>({hNew}), s(eps)});
    Value stepped = ctx.create<SubOp>(
        {u->x[i], ctx.create<MulOp>({r, ctx.create<DivOp>({vNew, denominator})})});
    x.push_back(post == 0.0 ? stepped : ctx.create<MulOp>({s(1.0 - post), stepped}));
    states[0].push_back(vNew);
    states[1].push_back(hNew);
  }
  return setOutputs(ctx, *u, x, states);
}

} // namespace

void registerTrainingOps(OpImporterMap &map) {
  map[qualifiedOpType(kTrainingDomain, "Adagrad")] = importAdagrad;
  map[qualifiedOpType(kTrainingDomain, "Adam")] = importAdam;
  map[qualifiedOpType(kTrainingDomain, "Momentum")] = importMomentum;
}

} // namespace plait::onnx_import
