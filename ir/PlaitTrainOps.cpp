// Verifiers of the training ops (state, hyper, assign, gradient kernels, optimizer updates).
#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"
#include "ir/ShapeRules.h"
#include "runtime/OptimizerSchedule.h"

#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace plait {
namespace {

RankedTensorType rankedType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Re-runs the forward op's shape rule: `forward` must produce `expected` from the
/// given operands and attributes.
template <typename ForwardOp>
LogicalResult checkForwardShape(Operation *op, ValueRange operands, DictionaryAttr attrs,
                                Type expected, StringRef what) {
  SmallVector<Type> inferred;
  typename ForwardOp::Properties props;
  if (failed(ForwardOp::setPropertiesFromAttr(props, attrs, [&]() {
        return op->emitOpError("has attributes the forward op does not accept");
      })))
    return failure();
  if (failed(ForwardOp::inferReturnTypes(op->getContext(), op->getLoc(), operands, attrs,
                                         OpaqueProperties(&props), {}, inferred)))
    return failure();
  if (inferred.front() != expected)
    return op->emitOpError(what) << " has type " << expected << ", but the forward op gives "
                                 << inferred.front();
  return success();
}

} // namespace

LogicalResult HyperOp::verify() {
  if (getName() != "lr" && getName() != "step" && getName() != "prev_lr")
    return emitOpError("unknown hyper-parameter '")
           << getName() << "' (expected lr, step or prev_lr)";
  if (getType().getRank() != 0)
    return emitOpError("must be a scalar tensor");
  if (getName() == "step" && !getType().getElementType().isF32())
    return emitOpError("step must be a tensor<f32>, got ") << getType();
  return success();
}

LogicalResult AssignOp::verify() {
  if (!getTarget().getDefiningOp<ParamOp>() && !getTarget().getDefiningOp<StateOp>() &&
      !getTarget().getDefiningOp<ParamShardOp>())
    return emitOpError("target must be a plait.param, plait.param_shard or plait.state");
  if (getTarget().getType() != getValue().getType())
    return emitOpError("value type ") << getValue().getType() << " differs from target type "
                                      << getTarget().getType();
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto grad = getGrad().getType(), out = getType();
  int64_t axisAttr = getAxis(); // I64Attr getters return uint64_t
  auto axis = normalizeAxis(axisAttr, out.getRank());
  if (!axis)
    return emitOpError("axis ") << axisAttr << " is out of range for rank " << out.getRank();
  SmallVector<int64_t> expected(out.getShape().take_front(*axis));
  llvm::append_range(expected, getIndices().getType().getShape());
  llvm::append_range(expected, out.getShape().drop_front(*axis + 1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad has shape ") << shapeToString(grad.getShape()) << ", expected "
                                          << shapeToString(expected);
  if (grad.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  return success();
}

LogicalResult Conv2dGradInputOp::verify() {
  // The forward conv of a result-shaped input and `w` must give `grad`'s shape.
  Value x = getResult();
  return checkForwardShape<Conv2dOp>(*this, {x, getW()}, (*this)->getAttrDictionary(),
                                     getGrad().getType(), "grad");
}

LogicalResult Conv2dGradWeightOp::verify() {
  Value w = getResult();
  return checkForwardShape<Conv2dOp>(*this, {getX(), w}, (*this)->getAttrDictionary(),
                                     getGrad().getType(), "grad");
}

/// The checks layer_norm_grad and rms_norm_grad share: the forward's x, scale, axis and
/// epsilon, dy and dx of x's type, each parameter gradient (the other results) of the
/// scale's type.
static LogicalResult verifyNormGrad(Operation *op, Value x, Value scale, Value dy, int64_t axis,
                                    double epsilon) {
  if (failed(verifyNormParam(op, x, axis, scale, "scale")))
    return failure();
  if (dy.getType() != x.getType())
    return op->emitOpError("'dy' has type ") << dy.getType() << ", expected " << x.getType();
  if (op->getResult(0).getType() != x.getType())
    return op->emitOpError("'dx' has type ") << op->getResult(0).getType() << ", expected "
                                             << x.getType();
  for (Value g : op->getResults().drop_front())
    if (g.getType() != scale.getType())
      return op->emitOpError("parameter gradients must have the scale's type ")
             << scale.getType() << ", got " << g.getType();
  return verifyEpsilon(op, epsilon);
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormGrad(*this, getX(), getScale(), getDy(), getAxis(),
                        getEpsilon().convertToDouble());
}

LogicalResult BatchNormGradOp::verify() {
  if (getDy().getType() != getX().getType() || getDx().getType() != getX().getType())
    return emitOpError("'dy' and 'dx' must have the input's type ") << getX().getType();
  if (failed(verifyBatchNormOperands(*this, getX(),
                                     {getScale(), getMean(), getVar(), getDscale(), getDbias()},
                                     {"scale", "mean", "var", "dscale", "dbias"})))
    return failure();
  if (getSums()) {
    if (getSync())
      return emitOpError("'sync' and 'sums' exclude each other (plait-shard lowers 'sync' to "
                         "'sums')");
    if (failed(verifyBatchNormVector(*this, getX(), getSums(), "sums", /*multiple=*/false)))
      return failure();
  }
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult BatchNormGradSumsOp::verify() {
  if (getDy().getType() != getX().getType())
    return emitOpError("'dy' has type ") << getDy().getType() << ", expected " << getX().getType();
  if (failed(verifyBatchNormOperands(*this, getX(), {getMean(), getVar()}, {"mean", "var"})) ||
      failed(verifyBatchNormVector(*this, getX(), getSums(), "sums", /*multiple=*/false)))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult RmsNormGradOp::verify() {
  return verifyNormGrad(*this, getX(), getScale(), getDy(), getAxis(),
                        getEpsilon().convertToDouble());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(),
                                     getScale().convertToDouble(), getOut(), getLse())))
    return failure();
  if (getDout().getType() != getOut().getType())
    return emitOpError("'dout' has type ") << getDout().getType() << ", expected "
                                           << getOut().getType();
  if (getDq().getType() != getQ().getType() || getDk().getType() != getK().getType() ||
      getDv().getType() != getV().getType())
    return emitOpError("results must have the types of q, k and v");
  return verifyAttentionDropout(*this, getDropout().convertToDouble(), getStep());
}

LogicalResult MaxPool2dGradOp::verify() {
  if (getX().getType() != getType())
    return emitOpError("result type must equal x's type");
  return checkForwardShape<MaxPool2dOp>(*this, {getX()}, (*this)->getAttrDictionary(),
                                        getGrad().getType(), "grad");
}

LogicalResult AvgPool2dGradOp::verify() {
  Value x = getResult();
  return checkForwardShape<AvgPool2dOp>(*this, {x}, (*this)->getAttrDictionary(),
                                        getGrad().getType(), "grad");
}

namespace {
/// The forward op's checks on the operands, and `grad` of its result's type; for bf16 or
/// f16 logits `grad` may also be f32 (plait-fuse-loss-cast: the loss computed in f32 from
/// the half-precision logits, its gradient rounded to their type).
template <typename GradOp, typename ForwardOp> LogicalResult verifyLossGrad(GradOp op) {
  SmallVector<Value> operands{op.getInput(), op.getTarget()};
  if (op.getWeight())
    operands.push_back(op.getWeight());
  Type expected = op.getGrad().getType();
  auto input = cast<RankedTensorType>(op.getInput().getType());
  auto grad = cast<RankedTensorType>(expected);
  if (grad.getElementType().isF32() &&
      (input.getElementType().isBF16() || input.getElementType().isF16()))
    expected = grad.clone(input.getElementType());
  return checkForwardShape<ForwardOp>(op, operands, op->getAttrDictionary(), expected, "grad");
}
} // namespace

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyLossGrad<SoftmaxCrossEntropyGradOp, SoftmaxCrossEntropyOp>(*this);
}

LogicalResult NllLossGradOp::verify() {
  return verifyLossGrad<NllLossGradOp, NllLossOp>(*this);
}

LogicalResult verifyMomentumCycle(Operation *op) {
  Attribute attr = op->getAttr(kMomentumCycleAttr);
  if (!attr)
    return success();
  // The update it is: a grouped_update's `update`.
  StringRef kind = op->getName().stripDialect();
  if (auto grouped = dyn_cast<GroupedUpdateOp>(op))
    kind = grouped.getUpdate();
  const bool momentumKind = kind == "sgd_update" || kind == "rmsprop_update";
  if (!momentumKind &&
      !llvm::is_contained({"adamw_update", "lion_update", "adamax_update", "nadam_update",
                           "radam_update", "lamb_update", "lamb_norms"},
                          kind))
    return op->emitOpError("has no momentum or first beta to cycle (momentum_cycle)");
  auto values = dyn_cast<DenseF64ArrayAttr>(attr);
  if (!values || values.size() != rt::MomentumCycle::kValues)
    return op->emitOpError("needs momentum_cycle as ")
           << rt::MomentumCycle::kValues << " f64 numbers [kind, base, max, ...]";
  ArrayRef<double> v = values.asArrayRef();
  auto flag = [](double x) { return x == 0 || x == 1; };
  const bool oneCycle = v[0] == rt::LrCycle::OneCycle, cyclic = v[0] == rt::LrCycle::Cyclic;
  if (!oneCycle && !cyclic)
    return op->emitOpError("momentum_cycle's kind must be 1 (one cycle) or 2 (cyclic), got ")
           << v[0];
  if (!(v[1] > 0 && v[1] < 1 && v[2] > 0 && v[2] < 1))
    return op->emitOpError("momentum_cycle's momenta must be in (0, 1), got ")
           << v[1] << " and " << v[2];
  if (oneCycle && !(v[3] > 0 && v[4] >= 0 && v[4] <= 1 && flag(v[5]) && flag(v[6])))
    return op->emitOpError("momentum_cycle's one cycle needs total steps > 0, pct_start in "
                           "[0, 1] and 0/1 flags");
  if (cyclic && !(v[3] > 0 && v[4] > 0 && (v[5] == 0 || v[5] == 1 || v[5] == 2) && v[6] > 0))
    return op->emitOpError("momentum_cycle's cyclic schedule needs step sizes > 0, a mode of "
                           "0, 1 or 2 and gamma > 0");
  if (momentumKind) {
    auto momentum = op->getAttrOfType<FloatAttr>("momentum");
    if (!momentum || momentum.getValueAsDouble() == 0)
      return op->emitOpError("cycles its momentum (momentum_cycle) but has momentum 0: it "
                             "would keep no buffer");
  }
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  bool hasBuffer = getMomentumBuffer() != nullptr;
  if (hasBuffer != (getMomentum().convertToDouble() != 0.0))
    return emitOpError("needs a momentum buffer exactly when momentum is non-zero");
  if (hasBuffer != (getNewBuffer() != nullptr))
    return emitOpError("produces a new buffer exactly when it takes one");
  if (hasBuffer && getMomentumBuffer().getType() != getParam().getType())
    return emitOpError("momentum buffer type differs from the param's");
  if (getNesterov() && (getMomentum().convertToDouble() <= 0.0 || getDampening().convertToDouble() != 0.0))
    return emitOpError("nesterov needs momentum > 0 and zero dampening");
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  bool amsgrad = getAmsgrad();
  if (amsgrad != (getMaxExpAvgSq() != nullptr))
    return emitOpError("takes max_exp_avg_sq exactly when amsgrad is set");
  if (amsgrad != (getNewMaxExpAvgSq() != nullptr))
    return emitOpError("gives new_max_exp_avg_sq exactly when amsgrad is set");
  if (amsgrad && (getMaxExpAvgSq().getType() != getParam().getType() ||
                  getNewMaxExpAvgSq().getType() != getParam().getType()))
    return emitOpError("max_exp_avg_sq type differs from the param's");
  return success();
}

LogicalResult LionUpdateOp::verify() {
  double beta1 = getBeta1().convertToDouble(), beta2 = getBeta2().convertToDouble();
  if (beta1 < 0.0 || beta1 >= 1.0 || beta2 < 0.0 || beta2 >= 1.0)
    return emitOpError("needs 0 <= betas < 1");
  return success();
}

LogicalResult WeightEmaOp::verify() {
  double decay = getDecay().convertToDouble();
  if (!(decay > 0.0 && decay < 1.0))
    return emitOpError("needs 0 < decay < 1, got ") << decay;
  const double power = getPower().convertToDouble();
  const double invGamma = getInvGamma().convertToDouble();
  if (!(power >= 0.0 && std::isfinite(power)) || !(invGamma > 0.0 && std::isfinite(invGamma)))
    return emitOpError("needs power >= 0 and inv_gamma > 0, got ") << power << " and " << invGamma;
  if (power > 0.0 && getWarmup())
    return emitOpError("takes one warm-up: warmup or power");
  if (const double floor = getMinDecay().convertToDouble(); !(floor >= 0.0 && floor <= decay))
    return emitOpError("needs 0 <= min_decay <= decay, got ") << floor;
  if (getStart() < 0 || getEvery() < 1)
    return emitOpError("needs start >= 0 and every >= 1, got ")
           << getStart() << " and " << getEvery();
  unsigned n = getNumAveraged();
  if (n == 0 || getNumOperands() != 2 * n + 1)
    return emitOpError("needs N params, their N averages and the step for its N results, got ")
           << getNumOperands() << " operands and " << n << " results";
  auto step = cast<ShapedType>(getStep().getType());
  if (step.getRank() != 0 || !step.getElementType().isF32())
    return emitOpError("step must be an f32 scalar");
  for (unsigned k = 0; k < n; ++k)
    if (getParam(k).getType() != getResult(k).getType() ||
        getEma(k).getType() != getResult(k).getType())
      return emitOpError("average ")
             << k << ": param, average and result must have one type, got " << getParam(k).getType()
             << ", " << getEma(k).getType() << " and " << getResult(k).getType();
  return success();
}

/// The checks shared by Adam's variants (adamax, nadam, radam): torch's own.
static LogicalResult verifyAdamLike(Operation *op, double beta1, double beta2, double eps) {
  if (beta1 < 0.0 || beta1 >= 1.0 || beta2 < 0.0 || beta2 >= 1.0 || eps < 0.0)
    return op->emitOpError("needs 0 <= betas < 1 and eps >= 0");
  return success();
}

LogicalResult AdamaxUpdateOp::verify() {
  return verifyAdamLike(*this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
                        getEps().convertToDouble());
}

LogicalResult NAdamUpdateOp::verify() {
  if (getMomentumDecay().convertToDouble() < 0.0)
    return emitOpError("needs momentum_decay >= 0");
  return verifyAdamLike(*this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
                        getEps().convertToDouble());
}

LogicalResult RAdamUpdateOp::verify() {
  return verifyAdamLike(*this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
                        getEps().convertToDouble());
}

/// The layout LAMB's sharded ops share: `segments` (each >= 1) covering at most the whole
/// flat buffer, this rank's `param` (1-D) times the size of a group of `groups` (one rank
/// without groups), and `norms` (when given) one row of two f32 sums per segment.
static LogicalResult verifyLambSegments(Operation *op, Value param,
                                        std::optional<ArrayRef<int64_t>> segments,
                                        ArrayAttr groups, Type norms) {
  if (!segments) {
    if (groups)
      return op->emitOpError("has groups but no segments");
    if (norms)
      return op->emitOpError("takes norms only with segments (a flat shard)");
    return success();
  }
  auto shardGroups = verifyShardGroups(op, groups);
  if (failed(shardGroups))
    return failure();
  const int64_t groupSize = *shardGroups;
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getRank() != 1)
    return op->emitOpError("with segments works on a flat (1-D) shard, got ") << type;
  int64_t total = 0;
  for (int64_t n : *segments) {
    if (n < 1)
      return op->emitOpError("segments must each be >= 1, got ") << n;
    total += n;
  }
  if (segments->empty() || total > type.getDimSize(0) * groupSize)
    return op->emitOpError("segments (")
           << total << " elements) must be at least one and fit the flat buffer ("
           << type.getDimSize(0) << " x " << groupSize << " ranks)";
  if (!norms)
    return op->emitOpError("with segments needs norms (plait.lamb_norms summed over the group)");
  auto n = cast<RankedTensorType>(norms);
  if (n.getShape() != ArrayRef<int64_t>{int64_t(segments->size()), 2})
    return op->emitOpError("norms must be ")
           << segments->size() << "x2 (one row per segment), got " << n;
  return success();
}

LogicalResult LambUpdateOp::verify() {
  if (failed(verifyAdamLike(*this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
                            getEps().convertToDouble())))
    return failure();
  Value norms = getNorms();
  return verifyLambSegments(*this, getParam(), getSegments(), getGroupsAttr(),
                            norms ? norms.getType() : Type());
}

LogicalResult LambNormsOp::verify() {
  if (failed(verifyAdamLike(*this, getBeta1().convertToDouble(), getBeta2().convertToDouble(),
                            getEps().convertToDouble())))
    return failure();
  for (Value v : {getGrad(), getExpAvg(), getExpAvgSq()})
    if (v.getType() != getParam().getType())
      return emitOpError("operand type ") << v.getType() << " differs from the param's "
                                          << getParam().getType();
  if (failed(verifyMomentumCycle(*this)))
    return failure();
  return verifyLambSegments(*this, getParam(), getSegments(), getGroupsAttr(),
                            getNorms().getType());
}

LogicalResult AdadeltaUpdateOp::verify() {
  double rho = getRho().convertToDouble();
  if (rho < 0.0 || rho > 1.0 || getEps().convertToDouble() < 0.0)
    return emitOpError("needs 0 <= rho <= 1 and eps >= 0");
  return success();
}

LogicalResult RpropUpdateOp::verify() {
  double etaminus = getEtaminus().convertToDouble(), etaplus = getEtaplus().convertToDouble();
  double lo = getStepSizeMin().convertToDouble(), hi = getStepSizeMax().convertToDouble();
  if (!(0.0 < etaminus && etaminus < 1.0 && 1.0 < etaplus))
    return emitOpError("needs 0 < etaminus < 1 < etaplus");
  if (!(0.0 <= lo && lo <= hi))
    return emitOpError("needs 0 <= step_size_min <= step_size_max");
  return success();
}

LogicalResult AsgdUpdateOp::verify() {
  if (getLambd().convertToDouble() < 0.0 || getAlpha().convertToDouble() < 0.0 ||
      getT0().convertToDouble() < 0.0 || getWeightDecay().convertToDouble() < 0.0)
    return emitOpError("needs lambd, alpha, t0 and weight_decay >= 0");
  return success();
}

LogicalResult AdagradUpdateOp::verify() {
  if (getEps().convertToDouble() <= 0.0 || getLrDecay().convertToDouble() < 0.0 ||
      getInitialAccumulatorValue().convertToDouble() < 0.0)
    return emitOpError("needs eps > 0, lr_decay >= 0 and initial_accumulator_value >= 0");
  return success();
}

/// How many states rmsprop_update takes with these attributes: square_avg, grad_avg when
/// centered, the momentum buffer when momentum is non-zero.
static int64_t rmspropStates(bool centered, double momentum) {
  return 1 + (centered ? 1 : 0) + (momentum != 0.0 ? 1 : 0);
}

LogicalResult RMSpropUpdateOp::verify() {
  double alpha = getAlpha().convertToDouble(), momentum = getMomentum().convertToDouble();
  if (alpha < 0.0 || alpha >= 1.0 || getEps().convertToDouble() <= 0.0 || momentum < 0.0)
    return emitOpError("needs 0 <= alpha < 1, eps > 0 and momentum >= 0");
  int64_t states = rmspropStates(getCentered(), momentum);
  if (int64_t(getStates().size()) != states)
    return emitOpError("takes ")
           << states << " states (square_avg" << (getCentered() ? ", grad_avg" : "")
           << (momentum != 0.0 ? ", momentum_buffer" : "") << "), not " << getStates().size();
  if (getNewStates().size() != getStates().size())
    return emitOpError("gives a new value of each of its ")
           << getStates().size() << " states, not " << getNewStates().size();
  SmallVector<Value> all(getStates());
  llvm::append_range(all, getNewStates());
  for (Value v : all)
    if (v.getType() != getParam().getType())
      return emitOpError("state type ") << v.getType() << " differs from the param's "
                                        << getParam().getType();
  return success();
}

LogicalResult GroupedUpdateOp::verify() {
  if (failed(verifyMomentumCycle(*this)))
    return failure();
  StringRef update = getUpdate();
  int64_t per = getOperandsPerUpdate(), perResult = getResultsPerUpdate();
  int64_t inputs = int64_t(getInputs().size()), results = int64_t(getResults().size());
  bool adamw = update == "adamw_update", sgd = update == "sgd_update";
  bool adagrad = update == "adagrad_update", rmsprop = update == "rmsprop_update";
  bool lion = update == "lion_update", asgd = update == "asgd_update";
  // adamax, nadam, radam, adadelta, rprop and lamb: two states each.
  bool twoStates = update == "adamax_update" || update == "nadam_update" ||
                   update == "radam_update" || update == "adadelta_update" ||
                   update == "rprop_update" || update == "lamb_update";
  if (!adamw && !sgd && !adagrad && !rmsprop && !lion && !asgd && !twoStates)
    return emitOpError("update must be adamw_update, sgd_update, adagrad_update, "
                       "rmsprop_update, lion_update, adamax_update, nadam_update, "
                       "radam_update, adadelta_update, rprop_update, asgd_update or "
                       "lamb_update, got \"")
           << update << "\"";
  if ((*this)->hasAttr("segments"))
    return emitOpError("groups whole tensors only; a lamb_update with segments (a flat "
                       "shard) stands alone");
  auto floatAttr = [&](StringRef name, double fallback) {
    auto attr = (*this)->getAttrOfType<FloatAttr>(name);
    return attr ? attr.getValueAsDouble() : fallback;
  };
  auto centered = (*this)->getAttrOfType<BoolAttr>("centered");
  // The operands of one update: param, grad, lr, step and its states (adamw: 2 states before
  // lr and step); one result per state and the new param.
  auto amsgrad = (*this)->getAttrOfType<BoolAttr>("amsgrad");
  int64_t states = adamw     ? (amsgrad && amsgrad.getValue() ? 3 : 2)
                   : adagrad || lion || asgd ? 1
                   : twoStates ? 2
                   : sgd     ? (floatAttr("momentum", 0.0) != 0.0 ? 1 : 0)
                             : rmspropStates(centered && centered.getValue(),
                                             floatAttr("momentum", 0.0));
  if (per != 4 + states || perResult != 1 + states)
    return emitOpError("") << update << " takes " << 4 + states << " operands and gives "
                           << 1 + states << " results with these attributes, not " << per
                           << " and " << perResult;
  if (inputs == 0 || inputs % per != 0 || results != inputs / per * perResult)
    return emitOpError("has ") << inputs << " operands and " << results << " results, not "
                               << "groups of " << per << " and " << perResult;
  for (int64_t t = 0; t < inputs / per; ++t) {
    // param, the states and every result share one float type; grad is of that type, or of
    // its shape in bf16 or f16 (a half-precision gradient the kernel widens exactly, in place
    // of a cast before the update: plait-group-updates); lr and step are f32 scalars (adamw:
    // operands 4, 5; the others: 2, 3).
    Type param = getInputs()[t * per].getType();
    auto paramType = cast<RankedTensorType>(param);
    auto gradType = cast<RankedTensorType>(getInputs()[t * per + 1].getType());
    if (gradType != paramType) {
      Type g = gradType.getElementType();
      if (gradType.getShape() != paramType.getShape() || !(g.isBF16() || g.isF16()))
        return emitOpError("update ")
               << t << ": grad " << gradType << " is neither its param's " << param
               << " nor that shape in bf16 or f16";
    }
    SmallVector<Value> like;
    for (int64_t k = 0; k < states; ++k)
      like.push_back(getInputs()[t * per + updateStateOperand(update, unsigned(k))]);
    for (int64_t k = 0; k < perResult; ++k)
      like.push_back(getResults()[t * perResult + k]);
    auto element = cast<RankedTensorType>(param).getElementType();
    if (!element.isF32() && !element.isF64())
      return emitOpError("update ") << t << ": param type " << param << " is not f32 or f64";
    for (Value v : like)
      if (v.getType() != param)
        return emitOpError("update ") << t << ": " << v.getType() << " differs from its param's "
                                      << param;
    const int64_t lrOperand = updateLrOperand(update);
    for (int64_t k : {lrOperand, lrOperand + 1}) {
      auto scalar = cast<RankedTensorType>(getInputs()[t * per + k].getType());
      const bool lr = k == lrOperand, f64 = lr && scalar.getElementType().isF64();
      if ((!scalar.getElementType().isF32() && !f64) || scalar.getRank() != 0)
        return emitOpError("update ")
               << t << ": operand " << k
               << (lr ? " (lr) must be tensor<f64> or tensor<f32>" : " (step) must be tensor<f32>");
    }
  }
  return success();
}

} // namespace plait

#define GET_OP_CLASSES
#include "ir/PlaitTrainOps.cpp.inc"
