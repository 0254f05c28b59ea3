// The optimizer update of one param (OptimizerUpdate.h).
#include "passes/OptimizerUpdate.h"

using namespace mlir;

namespace plait {

/// Appends the optimizer update of one param; its new values go to `assigns`. `prevLr` is the
/// previous step's lr (ASGD's eta follows it).
void appendUpdate(OpBuilder &b, ParamOp param, Value grad, Value lr, Value prevLr, Value step,
                  const OptimizerConfig &opt, PendingAssigns &assigns) {
  Location loc = param.getLoc();
  auto type = param.getType();
  std::string name = param.getName().str();
  if (opt.kind == "adamw" || opt.kind == "adam") {
    // Adam is AdamW without the decoupled decay, its weight decay added to the gradient (l2;
    // left unset when 0, so an AdamW plan's update carries no l2 attribute).
    const bool adam = opt.kind == "adam";
    Value m = b.create<StateOp>(loc, type, b.getStringAttr(name + ".exp_avg"));
    Value v = b.create<StateOp>(loc, type, b.getStringAttr(name + ".exp_avg_sq"));
    // AMSGrad keeps the largest exp_avg_sq seen (torch's max_exp_avg_sq).
    Value vmax = opt.amsgrad ? Value(b.create<StateOp>(
                                   loc, type, b.getStringAttr(name + ".max_exp_avg_sq")))
                             : Value();
    SmallVector<Type> results(opt.amsgrad ? 4 : 3, type);
    auto update = b.create<AdamWUpdateOp>(
        loc, results, param, grad, m, v, lr, step, b.getF64FloatAttr(opt.beta1),
        b.getF64FloatAttr(opt.beta2), b.getF64FloatAttr(opt.eps),
        b.getF64FloatAttr(adam ? 0.0 : opt.weightDecay),
        adam && opt.weightDecay != 0 ? b.getF64FloatAttr(opt.weightDecay) : FloatAttr(), vmax,
        opt.amsgrad ? b.getBoolAttr(true) : BoolAttr(), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({m, update.getNewExpAvg()});
    assigns.push_back({v, update.getNewExpAvgSq()});
    if (vmax)
      assigns.push_back({vmax, update.getNewMaxExpAvgSq()});
    return;
  }
  auto state = [&](StringRef suffix) -> Value {
    return b.create<StateOp>(loc, type, b.getStringAttr(name + "." + suffix.str()));
  };
  if (opt.kind == "lion") {
    Value m = state("exp_avg");
    auto update = b.create<LionUpdateOp>(loc, TypeRange{type, type}, param, grad, lr, step, m,
                                         b.getF64FloatAttr(opt.beta1),
                                         b.getF64FloatAttr(opt.beta2),
                                         b.getF64FloatAttr(opt.weightDecay), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({m, update.getNewExpAvg()});
    return;
  }
  if (opt.kind == "adagrad") {
    Value sum = state("sum");
    auto update = b.create<AdagradUpdateOp>(
        loc, TypeRange{type, type}, param, grad, lr, step, sum, b.getF64FloatAttr(opt.lrDecay),
        b.getF64FloatAttr(opt.weightDecay), b.getF64FloatAttr(opt.eps),
        b.getF64FloatAttr(opt.initialAccumulatorValue), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({sum, update.getNewSum()});
    return;
  }
  // Adamax, NAdam, RAdam and Adadelta: two states each, named as torch names them.
  if (opt.kind == "adamax" || opt.kind == "nadam" || opt.kind == "radam" ||
      opt.kind == "adadelta") {
    const bool adadelta = opt.kind == "adadelta";
    Value first = state(adadelta ? "square_avg" : "exp_avg");
    Value second = state(adadelta ? "acc_delta" : opt.kind == "adamax" ? "exp_inf" : "exp_avg_sq");
    SmallVector<Type> results(3, type);
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    Operation *update;
    if (opt.kind == "adamax")
      update = b.create<AdamaxUpdateOp>(loc, results, param, grad, lr, step, first, second,
                                        f64(opt.beta1), f64(opt.beta2), f64(opt.eps),
                                        f64(opt.weightDecay), FloatAttr());
    else if (opt.kind == "nadam")
      update = b.create<NAdamUpdateOp>(loc, results, param, grad, lr, step, first, second,
                                       f64(opt.beta1), f64(opt.beta2), f64(opt.eps),
                                       f64(opt.weightDecay), f64(opt.momentumDecay),
                                       b.getBoolAttr(opt.decoupledWeightDecay), FloatAttr());
    else if (opt.kind == "radam")
      update = b.create<RAdamUpdateOp>(loc, results, param, grad, lr, step, first, second,
                                       f64(opt.beta1), f64(opt.beta2), f64(opt.eps),
                                       f64(opt.weightDecay),
                                       b.getBoolAttr(opt.decoupledWeightDecay), FloatAttr());
    else
      update = b.create<AdadeltaUpdateOp>(loc, results, param, grad, lr, step, first, second,
                                          f64(opt.rho), f64(opt.eps), f64(opt.weightDecay),
                                          FloatAttr());
    assigns.push_back({param, update->getResult(0)});
    assigns.push_back({first, update->getResult(1)});
    assigns.push_back({second, update->getResult(2)});
    return;
  }
  if (opt.kind == "asgd") {
    // torch.optim.ASGD's ax; eta and mu follow from the step number and the previous lr.
    Value ax = state("ax");
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto update = b.create<AsgdUpdateOp>(loc, TypeRange{type, type}, param, grad, prevLr, step,
                                         ax, f64(opt.lambd), f64(opt.asgdAlpha), f64(opt.t0),
                                         f64(opt.weightDecay), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({ax, update.getNewAx()});
    return;
  }
  if (opt.kind == "rprop") {
    // torch.optim.Rprop's state names; the kernel reads step_size as the lr on step 1.
    Value prev = state("prev"), stepSize = state("step_size");
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto update = b.create<RpropUpdateOp>(
        loc, SmallVector<Type>(3, type), param, grad, lr, step, prev, stepSize, f64(opt.etaminus),
        f64(opt.etaplus), f64(opt.stepSizeMin), f64(opt.stepSizeMax), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({prev, update.getNewPrev()});
    assigns.push_back({stepSize, update.getNewStepSize()});
    return;
  }
  if (opt.kind == "lamb") {
    // timm's Lamb state names. The trust ratio's norms are taken by the kernel over the whole
    // param here; plait-shard gives a flat shard's update its segments and their norms.
    Value m = state("exp_avg"), v = state("exp_avg_sq");
    auto update = b.create<LambUpdateOp>(
        loc, SmallVector<Type>(3, type), param, grad, lr, step, m, v, Value(),
        b.getF64FloatAttr(opt.beta1), b.getF64FloatAttr(opt.beta2), b.getF64FloatAttr(opt.eps),
        b.getF64FloatAttr(opt.weightDecay), b.getBoolAttr(opt.alwaysAdapt),
        b.getBoolAttr(opt.trustClip), DenseI64ArrayAttr(), ArrayAttr(), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    assigns.push_back({m, update.getNewExpAvg()});
    assigns.push_back({v, update.getNewExpAvgSq()});
    return;
  }
  if (opt.kind == "adafactor") {
    // Hugging Face's state names: the second moment factored into a row and a column for a
    // param of rank >= 2 (the shape without its last dimension, and without the one before).
    SmallVector<Value> states;
    if (opt.adafactorBeta1 >= 0)
      states.push_back(state("exp_avg"));
    auto ranked = cast<RankedTensorType>(type);
    if (ranked.getRank() >= 2) {
      ArrayRef<int64_t> shape = ranked.getShape();
      SmallVector<int64_t> col(shape.drop_back(2));
      col.push_back(shape.back());
      states.push_back(b.create<StateOp>(loc, ranked.clone(shape.drop_back()),
                                         b.getStringAttr(name + ".exp_avg_sq_row")));
      states.push_back(
          b.create<StateOp>(loc, ranked.clone(col), b.getStringAttr(name + ".exp_avg_sq_col")));
    } else {
      states.push_back(state("exp_avg_sq"));
    }
    SmallVector<Type> results{type};
    for (Value s : states)
      results.push_back(s.getType());
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto update = b.create<AdafactorUpdateOp>(
        loc, results, param, grad, lr, step, states, f64(opt.eps), f64(opt.eps2),
        f64(opt.clipThreshold), f64(opt.decayRate),
        opt.adafactorBeta1 >= 0 ? f64(opt.adafactorBeta1) : FloatAttr(), f64(opt.weightDecay),
        b.getBoolAttr(opt.scaleParameter), b.getBoolAttr(opt.relativeStep),
        b.getBoolAttr(opt.warmupInit), FloatAttr(), DenseI64ArrayAttr(), DenseI64ArrayAttr(),
        ArrayAttr());
    assigns.push_back({param, update.getNewParam()});
    for (auto [s, next] : llvm::zip(states, update.getNewStates()))
      assigns.push_back({s, next});
    return;
  }
  if (opt.kind == "rmsprop") {
    // torch.optim.RMSprop's state names: square_avg, grad_avg (centered), momentum_buffer.
    SmallVector<Value> states{state("square_avg")};
    if (opt.centered)
      states.push_back(state("grad_avg"));
    if (opt.momentum != 0.0)
      states.push_back(state("momentum_buffer"));
    SmallVector<Type> results(states.size() + 1, type);
    auto update = b.create<RMSpropUpdateOp>(
        loc, results, param, grad, lr, step, states, b.getF64FloatAttr(opt.alpha),
        b.getF64FloatAttr(opt.eps), b.getF64FloatAttr(opt.weightDecay),
        b.getF64FloatAttr(opt.momentum), b.getBoolAttr(opt.centered), FloatAttr());
    assigns.push_back({param, update.getNewParam()});
    for (auto [s, next] : llvm::zip(states, update.getNewStates()))
      assigns.push_back({s, next});
    return;
  }
  Value buffer;
  SmallVector<Type> results{type};
  if (opt.momentum != 0.0) {
    buffer = b.create<StateOp>(loc, type, b.getStringAttr(name + ".momentum_buffer"));
    results.push_back(type);
  }
  auto update = b.create<SgdUpdateOp>(loc, results, param, grad, lr, step, buffer,
                                      b.getF64FloatAttr(opt.momentum),
                                      b.getF64FloatAttr(opt.dampening),
                                      b.getF64FloatAttr(opt.weightDecay),
                                      b.getBoolAttr(opt.nesterov), FloatAttr());
  assigns.push_back({param, update.getNewParam()});
  if (buffer)
    assigns.push_back({buffer, update.getNewBuffer()});
}

} // namespace plait
