// -plait-fuse-norm: a decomposed layer norm or RMS norm of an imported model becomes one
// plait.layer_norm or plait.rms_norm op.
//
// Exporters before ONNX opset 17 (PyTorch 1.13's default among them) write nn.LayerNorm as
//   m = reduce_mean(x, axes)          d = x - m          v = reduce_mean(d ^ 2, axes)
//   y = d / sqrt(v + eps) * gamma + beta
// and RMS norms (LLaMA-style) as x * rsqrt(mean(x ^ 2) + eps) * gamma. Each of those ops is a
// kernel of its own or a fused kernel's boundary (a mean must be complete before the rows
// that read it), and in a training step their results are kept for the backward. The norm
// ops compute the row in one kernel and keep only x; their gradients recompute the
// statistics. Recognised, per reduce_mean of a square:
//   square       pow(c, 2) or mul(c, c)
//   centred      c = sub(x, reduce_mean(x, same axes)) (layer norm) or c = x (RMS norm)
//   variance     reduce_mean(square, axes) with keepdims over the trailing axes [a, rank)
//   + epsilon    add(variance, eps) in either order, eps a positive finite scalar constant
//   normalised   div(c, sqrt(.)), or c times rsqrt(.), reciprocal(sqrt(.)) or 1 / sqrt(.)
//   affine       [mul by gamma of the normalised shape x.shape[a:], either order]
//                [add beta of that shape, either order; layer norm only]
// Every intermediate must have no other reader (x may have any). Without gamma the scale is
// a constant of ones. Then each norm op whose input is a residual add (two addends of the
// sum's type) becomes one add_layer_norm / add_rms_norm with it: the kernel stores the sum,
// which the residual stream reads on, and normalises the row it just wrote, instead of an add
// kernel writing the sum and the norm's reading it back (off: residual-adds=false,
// --no-fused-add-norm). The module records `plait.fuse_norm` {layer_norm, rms_norm, ops,
// residual_adds} for the report. plait-compile runs it before building the training step
// unless --no-fused-norm or --no-fusion.
//
// -plait-expand-norm-grad: the training step differentiates each norm op into one
// layer_norm_grad / rms_norm_grad (ir/VJP.cpp); under --no-fused-norm plait-compile runs this
// pass after building the step, which writes them as the reductions and elementwise ops they
// stand for (expandNormGrads), so the switch turns off the backward's fusion too.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSENORMPASS
#define GEN_PASS_DEF_EXPANDNORMGRADPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The only op that reads `v`, or null when it has none or several (or reads it twice).
Operation *onlyReader(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  return *v.getUsers().begin();
}

/// The operand of binary `op` that is not `known` (either order), or null.
Value otherOperand(Operation *op, Value known) {
  if (op->getNumOperands() != 2)
    return Value();
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return Value();
}

/// The first normalised axis of a keepdims mean over trailing contiguous axes of `x`, or
/// nullopt.
std::optional<int64_t> trailingAxis(ReduceMeanOp mean) {
  if (!mean.getKeepdims())
    return std::nullopt;
  int64_t rank = typeOf(mean.getX()).getRank();
  auto axes = normalizeAxes(mean.getAxes(), rank);
  if (!axes || axes->empty() || axes->back() != rank - 1)
    return std::nullopt;
  for (size_t i = 1; i < axes->size(); ++i)
    if ((*axes)[i] != (*axes)[i - 1] + 1)
      return std::nullopt;
  return axes->front();
}

/// Whether `op` is div(1, `v`), the 1 a scalar constant.
bool isUnitOver(Operation *op, Value v) {
  auto div = dyn_cast<DivOp>(op);
  return div && div.getRhs() == v && splatValue(div.getLhs()) == 1.0 &&
         typeOf(div.getLhs()).getNumElements() == 1 &&
         typeOf(div.getResult()) == typeOf(v);
}

/// A value of exactly `shape` (a parameter of the normalised shape), for gamma and beta.
bool hasShape(Value v, ArrayRef<int64_t> shape, Type element) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getShape() == shape && type.getElementType() == element;
}

struct Match {
  bool layerNorm = false;
  Value x, scale, bias;
  int64_t axis = 0;
  double epsilon = 0;
  Operation *last = nullptr;          // the op whose result the norm replaces
  SmallVector<Operation *> chain;     // every op replaced, in program order
};

/// Matches the norm whose variance (or mean square) is `variance`; false when the chain
/// around it is anything else.
bool matchNorm(ReduceMeanOp variance, Match &m) {
  std::optional<int64_t> axis = trailingAxis(variance);
  Operation *square = variance.getX().getDefiningOp();
  if (!axis || !square || !square->hasOneUse())
    return false;
  Value c;
  if (auto pow = dyn_cast<PowOp>(square)) {
    std::optional<double> e = splatValue(pow.getRhs());
    if (!e || *e != 2.0 || typeOf(pow.getRhs()).getNumElements() != 1)
      return false;
    c = pow.getLhs();
  } else if (auto mul = dyn_cast<MulOp>(square)) {
    if (mul.getLhs() != mul.getRhs())
      return false;
    c = mul.getLhs();
  } else {
    return false;
  }
  auto cType = typeOf(c);
  if (typeOf(square->getResult(0)) != cType || !isa<FloatType>(cType.getElementType()))
    return false;

  // variance + eps, then its square root's reciprocal in one of three spellings.
  auto add = dyn_cast_or_null<AddOp>(onlyReader(variance.getResult()));
  if (!add)
    return false;
  Value eps = otherOperand(add, variance.getResult());
  std::optional<double> epsilon = eps ? splatValue(eps) : std::nullopt;
  if (!epsilon || !(*epsilon > 0) || !std::isfinite(*epsilon) ||
      typeOf(eps).getNumElements() != 1 || typeOf(add.getResult()) != typeOf(variance.getResult()))
    return false;
  m.epsilon = *epsilon;
  SmallVector<Operation *> denominator{add};
  Operation *normalise = nullptr;
  Operation *root = onlyReader(add.getResult());
  if (auto sqrt = dyn_cast_or_null<SqrtOp>(root)) {
    denominator.push_back(sqrt);
    Operation *reader = onlyReader(sqrt.getResult());
    if (auto div = dyn_cast_or_null<DivOp>(reader); div && div.getLhs() == c &&
                                                    div.getRhs() == sqrt.getResult()) {
      normalise = div;
    } else if (reader && (isa<ReciprocalOp>(reader) || isUnitOver(reader, sqrt.getResult()))) {
      denominator.push_back(reader); // reciprocal(s) or 1 / s (PyTorch's rsqrt, exported)
      auto mul = dyn_cast_or_null<MulOp>(onlyReader(reader->getResult(0)));
      if (mul && otherOperand(mul, reader->getResult(0)) == c)
        normalise = mul;
    }
  } else if (auto rsqrt = dyn_cast_or_null<RsqrtOp>(root)) {
    denominator.push_back(rsqrt);
    auto mul = dyn_cast_or_null<MulOp>(onlyReader(rsqrt.getResult()));
    if (mul && otherOperand(mul, rsqrt.getResult()) == c)
      normalise = mul;
  }
  if (!normalise || typeOf(normalise->getResult(0)) != cType)
    return false;

  // c = x - mean(x) over the same axes, read by nothing but the square and the
  // normalisation: a layer norm of x. Else an RMS norm of c itself.
  ReduceMeanOp centreMean;
  m.x = c;
  if (auto sub = c.getDefiningOp<SubOp>()) {
    auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>();
    if (mean && mean.getX() == sub.getLhs() && trailingAxis(mean) == axis &&
        mean->hasOneUse() && typeOf(sub.getLhs()) == cType &&
        llvm::all_of(c.getUsers(),
                     [&](Operation *user) { return user == square || user == normalise; })) {
      centreMean = mean;
      m.x = sub.getLhs();
      m.layerNorm = true;
    }
  }

  // The affine part: * gamma, then (layer norm) + beta, each of the normalised shape.
  ArrayRef<int64_t> normShape = cType.getShape().drop_front(*axis);
  Type element = cType.getElementType();
  m.last = normalise;
  SmallVector<Operation *> affine;
  if (auto mul = dyn_cast_or_null<MulOp>(onlyReader(normalise->getResult(0)))) {
    Value gamma = otherOperand(mul, normalise->getResult(0));
    if (gamma && hasShape(gamma, normShape, element) && typeOf(mul.getResult()) == cType) {
      m.scale = gamma;
      m.last = mul;
      affine.push_back(mul);
      if (auto plus = dyn_cast_or_null<AddOp>(onlyReader(mul.getResult())); plus && m.layerNorm) {
        Value beta = otherOperand(plus, mul.getResult());
        if (beta && hasShape(beta, normShape, element) && typeOf(plus.getResult()) == cType) {
          m.bias = beta;
          m.last = plus;
          affine.push_back(plus);
        }
      }
    }
  }
  m.axis = *axis;
  if (centreMean)
    m.chain.append({centreMean, c.getDefiningOp()});
  m.chain.append({square, variance});
  m.chain.append(denominator.begin(), denominator.end());
  m.chain.push_back(normalise);
  m.chain.append(affine.begin(), affine.end());
  return true;
}

/// Replaces the chain with the norm op and erases the chain, and the constants that only it
/// read.
void rewrite(Match &m) {
  OpBuilder b(m.last);
  Location loc = m.last->getLoc();
  auto xType = typeOf(m.x);
  Value scale = m.scale;
  if (!scale) {
    auto type = RankedTensorType::get(xType.getShape().drop_front(m.axis), xType.getElementType());
    scale = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 1.0)));
  }
  Value norm;
  if (m.layerNorm)
    norm = b.create<LayerNormOp>(loc, xType, m.x, scale, m.bias, b.getI64IntegerAttr(m.axis),
                                 b.getF64FloatAttr(m.epsilon));
  else
    norm = b.create<RmsNormOp>(loc, xType, m.x, scale, b.getI64IntegerAttr(m.axis),
                               b.getF64FloatAttr(m.epsilon));
  m.last->getResult(0).replaceAllUsesWith(norm);
  llvm::SetVector<Operation *> constants; // the exponent and epsilon, often shared
  for (Operation *op : llvm::reverse(m.chain)) {
    for (Value operand : op->getOperands())
      if (auto c = operand.getDefiningOp<ConstantOp>())
        constants.insert(c);
    op->erase();
  }
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

/// Makes `norm` (a layer_norm or rms_norm) and the plait.add that computes its input one
/// add_layer_norm / add_rms_norm, when both addends have the sum's type. The fused op stands
/// at the norm when every other reader of the sum follows the norm, else at the add when the
/// norm's parameters precede it; otherwise nothing changes (false).
bool fuseResidualAdd(Operation *norm) {
  Value x = norm->getOperand(0);
  auto add = x.getDefiningOp<AddOp>();
  if (!add || add->getBlock() != norm->getBlock() || add.getLhs().getType() != x.getType() ||
      add.getRhs().getType() != x.getType())
    return false;
  bool atNorm = llvm::all_of(add->getUsers(), [&](Operation *user) {
    return user == norm || (user->getBlock() == norm->getBlock() && norm->isBeforeInBlock(user));
  });
  bool atAdd = llvm::all_of(norm->getOperands().drop_front(), [&](Value param) {
    Operation *def = param.getDefiningOp();
    return !def || (def->getBlock() == add->getBlock() && def->isBeforeInBlock(add));
  });
  if (!atNorm && !atAdd)
    return false;
  OpBuilder b(atNorm ? norm : add.getOperation());
  Type type = x.getType();
  Operation *fused;
  if (auto ln = dyn_cast<LayerNormOp>(norm))
    fused = b.create<AddLayerNormOp>(ln.getLoc(), TypeRange{type, type}, add.getLhs(),
                                     add.getRhs(), ln.getScale(), ln.getBias(),
                                     ln.getAxisAttr(), ln.getEpsilonAttr());
  else {
    auto rms = cast<RmsNormOp>(norm);
    fused = b.create<AddRmsNormOp>(rms.getLoc(), TypeRange{type, type}, add.getLhs(),
                                   add.getRhs(), rms.getScale(), rms.getAxisAttr(),
                                   rms.getEpsilonAttr());
  }
  norm->getResult(0).replaceAllUsesWith(fused->getResult(0));
  add.getResult().replaceAllUsesWith(fused->getResult(1));
  norm->erase();
  add.erase();
  return true;
}

struct FuseNormPass : impl::FuseNormPassBase<FuseNormPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t layerNorms = 0, rmsNorms = 0, ops = 0;
    module.walk([&](func::FuncOp func) {
      // In program order: a chain's other mean (the centring one) comes before its variance,
      // so no mean still to visit is erased by a rewrite.
      SmallVector<ReduceMeanOp> means;
      func.walk([&](ReduceMeanOp op) { means.push_back(op); });
      for (ReduceMeanOp mean : means) {
        Match m;
        if (!matchNorm(mean, m))
          continue;
        ops += m.chain.size();
        ++(m.layerNorm ? layerNorms : rmsNorms);
        rewrite(m);
      }
    });
    int64_t residualAdds = 0;
    if (this->residualAdds) {
      SmallVector<Operation *> norms;
      module.walk([&](Operation *op) {
        if (isa<LayerNormOp, RmsNormOp>(op))
          norms.push_back(op);
      });
      for (Operation *norm : norms)
        residualAdds += fuseResidualAdd(norm);
    }
    Builder b(module.getContext());
    auto count = [&](const char *name, int64_t n) {
      return b.getNamedAttr(name, b.getI64IntegerAttr(n));
    };
    module->setAttr("plait.fuse_norm",
                    b.getDictionaryAttr({count("layer_norm", layerNorms),
                                         count("rms_norm", rmsNorms), count("ops", ops),
                                         count("residual_adds", residualAdds)}));
  }
};

struct ExpandNormGradPass : impl::ExpandNormGradPassBase<ExpandNormGradPass> {
  void runOnOperation() final { expandNormGrads(getOperation()); }
};

} // namespace
} // namespace plait
