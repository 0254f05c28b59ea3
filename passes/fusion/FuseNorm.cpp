// -plait-fuse-norm: a decomposed layer norm, RMS norm or training-mode BatchNorm of an imported
// model becomes one plait.layer_norm, plait.rms_norm or plait.batch_norm op.
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
// Then a training-mode BatchNorm, as the ONNX importer and plait-zoo write it (over every axis
// of x but the channel axis 1):
//   mean = reduce_mean(x)      c = x - mean      var = reduce_mean(c ^ 2)
//   y = c / sqrt(var + eps) [* gamma] [+ beta]     (gamma, beta one value per channel)
// becomes one plait.batch_norm(x, gamma, beta) -> (y, mean, var): the running statistics read
// its mean and var (reshaped back to the keepdims shape), so the two means may have other
// readers, after the chain; its gradient is one batch_norm_grad. Where the decomposed form
// keeps c for the backward and reads or writes x's size in four kernels forward, the op reads
// x twice (the second time per channel, from cache) and writes y, and keeps x and two [C]
// vectors. A SyncBatchNorm (a plait.sync_mean after each mean, read in its place) becomes a
// plait.batch_norm {sync}, its gradient a batch_norm_grad {sync}: plait-shard lowers each to a
// kernel of this rank's statistics (or gradient sums), one collective of both (an all_gather
// forward, an all_reduce backward, where the decomposed form all-reduces the mean, then the
// variance, and each one's gradient) and the fused kernel reading them (SyncMeans.cpp). Off:
// batch-norm=false, --no-fused-batch-norm; the SyncBatchNorm's alone: sync-batch-norm=false,
// --no-fused-sync-batch-norm.
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

/// The op that divides `c` by the square root of `add` (variance + eps): div(c, sqrt(.)), or
/// c times rsqrt(.), reciprocal(sqrt(.)) or 1 / sqrt(.), each intermediate read by nothing
/// else; appends the ops between to `denominator`. Null when the chain is anything else.
Operation *matchNormalise(Value c, AddOp add, SmallVectorImpl<Operation *> &denominator) {
  Operation *root = onlyReader(add.getResult());
  if (auto sqrt = dyn_cast_or_null<SqrtOp>(root)) {
    denominator.push_back(sqrt);
    Operation *reader = onlyReader(sqrt.getResult());
    if (auto div = dyn_cast_or_null<DivOp>(reader);
        div && div.getLhs() == c && div.getRhs() == sqrt.getResult())
      return div;
    if (reader && (isa<ReciprocalOp>(reader) || isUnitOver(reader, sqrt.getResult()))) {
      denominator.push_back(reader); // reciprocal(s) or 1 / s (PyTorch's rsqrt, exported)
      auto mul = dyn_cast_or_null<MulOp>(onlyReader(reader->getResult(0)));
      if (mul && otherOperand(mul, reader->getResult(0)) == c)
        return mul;
    }
  } else if (auto rsqrt = dyn_cast_or_null<RsqrtOp>(root)) {
    denominator.push_back(rsqrt);
    auto mul = dyn_cast_or_null<MulOp>(onlyReader(rsqrt.getResult()));
    if (mul && otherOperand(mul, rsqrt.getResult()) == c)
      return mul;
  }
  return nullptr;
}

/// The value squared by `square` (pow(c, 2) or mul(c, c)), or null.
Value squaredValue(Operation *square) {
  if (auto pow = dyn_cast_or_null<PowOp>(square)) {
    std::optional<double> e = splatValue(pow.getRhs());
    if (!e || *e != 2.0 || typeOf(pow.getRhs()).getNumElements() != 1)
      return Value();
    return pow.getLhs();
  }
  if (auto mul = dyn_cast_or_null<MulOp>(square); mul && mul.getLhs() == mul.getRhs())
    return mul.getLhs();
  return Value();
}

/// The epsilon of `add` = `variance` + eps (either order): a positive finite scalar constant,
/// the sum of the variance's type; nullopt when `add` is anything else.
std::optional<double> epsilonAdded(AddOp add, Value variance) {
  Value eps = otherOperand(add, variance);
  std::optional<double> epsilon = eps ? splatValue(eps) : std::nullopt;
  if (!epsilon || !(*epsilon > 0) || !std::isfinite(*epsilon) ||
      typeOf(eps).getNumElements() != 1 || typeOf(add.getResult()) != typeOf(variance))
    return std::nullopt;
  return epsilon;
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
  Value c = squaredValue(square);
  if (!c)
    return false;
  auto cType = typeOf(c);
  if (typeOf(square->getResult(0)) != cType || !isa<FloatType>(cType.getElementType()))
    return false;

  // variance + eps, then its square root's reciprocal in one of three spellings.
  auto add = dyn_cast_or_null<AddOp>(onlyReader(variance.getResult()));
  std::optional<double> epsilon = add ? epsilonAdded(add, variance.getResult()) : std::nullopt;
  if (!epsilon)
    return false;
  m.epsilon = *epsilon;
  SmallVector<Operation *> denominator{add};
  Operation *normalise = matchNormalise(c, add, denominator);
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

/// A decomposed training-mode BatchNorm: the statistics over every axis of x but 1, the
/// normalisation and the per-channel affine.
struct BatchNormMatch {
  Value x, scale, bias; // scale and bias as found (any shape that broadcasts per channel)
  double epsilon = 0;
  Value mean, variance;           // the statistics as their readers see them (synced ones)
  bool sync = false;              // a SyncBatchNorm: both are plait.sync_means
  Operation *last = nullptr;      // the op whose result y replaces
  SmallVector<Operation *> chain; // every op replaced, the two means last
};

/// Whether `v` (of element type `element`) broadcasts against [N, C, ...] of `rank` as one
/// value per channel: C at x's axis 1, 1 elsewhere ([C, 1, 1] or [1, C, 1, 1]).
bool isPerChannel(Value v, int64_t rank, int64_t channels, Type element) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getElementType() != element || type.getRank() > rank ||
      type.getRank() < rank - 1)
    return false;
  int64_t lead = rank - type.getRank();
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) != (d + lead == 1 ? channels : 1))
      return false;
  return true;
}

/// Whether every reader of `v` but the ops in `chain` comes after `op` in its block.
bool readersFollow(Value v, Operation *op, ArrayRef<Operation *> chain) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return llvm::is_contained(chain, user) ||
           (user->getBlock() == op->getBlock() && op->isBeforeInBlock(user));
  });
}

/// Matches the BatchNorm whose variance is `variance`: reduce_mean(square(x - mean)) with
/// mean = reduce_mean(x), both keepdims over every axis but 1, then + eps, the normalisation
/// and optionally * gamma and + beta per channel. The two means may have other readers (the
/// running statistics), all after the chain's last op; the other intermediates may not. With
/// `sync`, a SyncBatchNorm matches too: each mean's only reader a plait.sync_mean, which the
/// chain reads instead.
bool matchBatchNorm(ReduceMeanOp variance, BatchNormMatch &m, bool sync) {
  auto cType = typeOf(variance.getX());
  int64_t rank = cType.getRank();
  if (rank < 2 || !variance.getKeepdims() || !isa<FloatType>(cType.getElementType()))
    return false;
  auto axes = normalizeAxes(variance.getAxes(), rank);
  SmallVector<int64_t> expected{0};
  for (int64_t d = 2; d < rank; ++d)
    expected.push_back(d);
  if (!axes || ArrayRef<int64_t>(*axes) != ArrayRef<int64_t>(expected))
    return false;
  Operation *square = variance.getX().getDefiningOp();
  Value c = squaredValue(square);
  auto sub = c ? c.getDefiningOp<SubOp>() : SubOp();
  if (!sub || !square->hasOneUse() || typeOf(c) != cType)
    return false;
  // A SyncBatchNorm's statistics: each mean's only reader a sync_mean, read in its place.
  auto syncMean = sub.getRhs().getDefiningOp<SyncMeanOp>();
  auto syncVar =
      variance->hasOneUse() ? dyn_cast<SyncMeanOp>(*variance->getUsers().begin()) : SyncMeanOp();
  if (bool(syncMean) != bool(syncVar) || (syncMean && !sync))
    return false;
  auto mean = (syncMean ? syncMean.getInput() : sub.getRhs()).getDefiningOp<ReduceMeanOp>();
  if (!mean || mean.getX() != sub.getLhs() || typeOf(sub.getLhs()) != cType ||
      !mean.getKeepdims() || normalizeAxes(mean.getAxes(), rank) != axes ||
      (syncMean && !mean->hasOneUse()))
    return false;
  Value meanStat = syncMean ? syncMean.getResult() : mean.getResult();
  Value varStat = syncVar ? syncVar.getResult() : variance.getResult();
  // variance + eps among the variance's readers (another may be the running variance's).
  AddOp add;
  for (Operation *user : varStat.getUsers()) {
    auto a = dyn_cast<AddOp>(user);
    if (std::optional<double> epsilon = a ? epsilonAdded(a, varStat) : std::nullopt) {
      add = a;
      m.epsilon = *epsilon;
      break;
    }
  }
  if (!add)
    return false;
  SmallVector<Operation *> denominator{add};
  Operation *normalise = matchNormalise(c, add, denominator);
  if (!normalise || typeOf(normalise->getResult(0)) != cType ||
      !llvm::all_of(c.getUsers(), [&](Operation *u) { return u == square || u == normalise; }))
    return false;
  const int64_t channels = cType.getDimSize(1);
  Type element = cType.getElementType();
  m.x = sub.getLhs();
  m.last = normalise;
  SmallVector<Operation *> affine;
  if (auto mul = dyn_cast_or_null<MulOp>(onlyReader(normalise->getResult(0)))) {
    Value gamma = otherOperand(mul, normalise->getResult(0));
    if (gamma && isPerChannel(gamma, rank, channels, element) && typeOf(mul.getResult()) == cType) {
      m.scale = gamma;
      m.last = mul;
      affine.push_back(mul);
    }
  }
  if (auto plus = dyn_cast_or_null<AddOp>(onlyReader(m.last->getResult(0)))) {
    Value beta = otherOperand(plus, m.last->getResult(0));
    if (beta && isPerChannel(beta, rank, channels, element) && typeOf(plus.getResult()) == cType) {
      m.bias = beta;
      m.last = plus;
      affine.push_back(plus);
    }
  }
  m.chain.push_back(sub);
  m.chain.push_back(square);
  m.chain.append(denominator.begin(), denominator.end());
  m.chain.push_back(normalise);
  m.chain.append(affine.begin(), affine.end());
  if (syncMean) {
    m.chain.push_back(syncVar);
    m.chain.push_back(syncMean);
  }
  m.chain.push_back(variance);
  m.chain.push_back(mean);
  if (!readersFollow(meanStat, m.last, m.chain) || !readersFollow(varStat, m.last, m.chain))
    return false;
  m.mean = meanStat;
  m.variance = varStat;
  m.sync = bool(syncMean);
  return true;
}

/// Replaces a matched BatchNorm with plait.batch_norm at its last op: y replaces that op's
/// result, and the mean and variance (reshaped back to their keepdims shape) the two means'
/// other readers. Erases the chain and the constants only it read.
void rewriteBatchNorm(BatchNormMatch &m) {
  OpBuilder b(m.last);
  Location loc = m.last->getLoc();
  auto xType = typeOf(m.x);
  const int64_t channels = xType.getDimSize(1);
  auto perChannel = RankedTensorType::get({channels}, xType.getElementType());
  // gamma and beta as [C]: the [C] param a reshape made per-channel, else a reshape of it.
  auto asChannels = [&](Value v, double fill) -> Value {
    if (!v)
      return b.create<ConstantOp>(
          loc, DenseElementsAttr::get(perChannel, b.getFloatAttr(xType.getElementType(), fill)));
    if (auto reshape = v.getDefiningOp<ReshapeOp>();
        reshape && reshape->getOperand(0).getType() == perChannel)
      return reshape->getOperand(0);
    return b.create<ReshapeOp>(loc, perChannel, v);
  };
  Value scale = asChannels(m.scale, 1.0);
  Value bias = asChannels(m.bias, 0.0);
  auto bn = b.create<BatchNormOp>(loc, TypeRange{xType, perChannel, perChannel}, m.x, scale, bias,
                                  /*stats=*/Value(), b.getF64FloatAttr(m.epsilon),
                                  m.sync ? b.getUnitAttr() : UnitAttr());
  m.last->getResult(0).replaceAllUsesWith(bn.getY());
  for (auto [old, fresh] : {std::pair{m.mean, bn.getMean()}, std::pair{m.variance, bn.getVar()}}) {
    if (llvm::all_of(old.getUsers(), [&](Operation *u) { return llvm::is_contained(m.chain, u); }))
      continue;
    b.setInsertionPointAfter(bn);
    Value kept = b.create<ReshapeOp>(loc, old.getType(), fresh);
    old.replaceUsesWithIf(
        kept, [&](OpOperand &use) { return !llvm::is_contained(m.chain, use.getOwner()); });
  }
  llvm::SetVector<Operation *> constants; // the exponent and epsilon, often shared
  for (Operation *op : m.chain)
    for (Value operand : op->getOperands())
      if (auto c = operand.getDefiningOp<ConstantOp>())
        constants.insert(c);
  // Erase each op once nothing reads it (the chain's readers are all in the chain).
  SmallVector<Operation *> order(m.chain.begin(), m.chain.end());
  while (!order.empty()) {
    auto it = llvm::find_if(order, [](Operation *op) { return op->use_empty(); });
    if (it == order.end())
      break; // unreachable: the chain's readers are in the chain
    (*it)->erase();
    order.erase(it);
  }
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
  for (Value v : {m.scale, m.bias}) // a reshape to [C, 1, ...] that only the chain read
    if (auto reshape = v ? v.getDefiningOp<ReshapeOp>() : ReshapeOp();
        reshape && reshape->use_empty())
      reshape->erase();
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
    int64_t batchNorms = 0, batchNormOps = 0, syncBatchNorms = 0;
    if (this->batchNorm)
      module.walk([&](func::FuncOp func) {
        SmallVector<ReduceMeanOp> means;
        func.walk([&](ReduceMeanOp op) { means.push_back(op); });
        // In program order: a rewrite erases its variance (the one visited) and its centring
        // mean, which came before it.
        for (ReduceMeanOp mean : means) {
          BatchNormMatch m;
          if (!matchBatchNorm(mean, m, this->syncBatchNorm))
            continue;
          batchNormOps += m.chain.size();
          ++batchNorms;
          syncBatchNorms += m.sync;
          rewriteBatchNorm(m);
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
    module->setAttr(
        "plait.fuse_norm",
        b.getDictionaryAttr({count("layer_norm", layerNorms), count("rms_norm", rmsNorms),
                             count("batch_norm", batchNorms), count("batch_norm_ops", batchNormOps),
                             count("sync_batch_norm", syncBatchNorms), count("ops", ops),
                             count("residual_adds", residualAdds)}));
  }
};

struct ExpandNormGradPass : impl::ExpandNormGradPassBase<ExpandNormGradPass> {
  void runOnOperation() final { expandNormGrads(getOperation()); }
};

} // namespace
} // namespace plait
