// -plait-build-train-step: forward model -> loss, backward (per micro-batch), gradient clipping,
// optimizer.
#include "passes/Bf16Mixed.h"
#include "passes/GradientClipping.h"
#include "passes/OptimizerUpdate.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/autodiff/MicroBatches.h"

#include <cmath>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "runtime/LrSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "passes/Passes.h.inc"

namespace {

/// The optimizers plait-build-train-step knows, in the order its messages list them.
constexpr const char *kOptimizers[] = {"sgd",   "adam",   "adamw", "adagrad",  "rmsprop",
                                       "lion",  "adamax", "nadam", "radam",    "adadelta",
                                       "rprop", "asgd",   "lamb",  "adafactor"};

/// PyTorch's default learning rate of each optimizer (torch.optim.SGD has none: 1e-3 as for
/// Adam; Lion's, as its authors recommend, a tenth of AdamW's).
double defaultLr(StringRef optimizer) {
  if (optimizer == "adagrad" || optimizer == "rmsprop" || optimizer == "rprop" ||
      optimizer == "asgd")
    return 1e-2;
  if (optimizer == "adamax" || optimizer == "nadam")
    return 2e-3;
  if (optimizer == "adadelta")
    return 1.0;
  if (optimizer == "lion")
    return 1e-4;
  return 1e-3;
}

/// PyTorch's default epsilon of each optimizer (LAMB's: timm's).
double defaultEps(StringRef optimizer) {
  if (optimizer == "adagrad")
    return 1e-10;
  if (optimizer == "adadelta" || optimizer == "lamb")
    return 1e-6;
  if (optimizer == "adafactor") // Hugging Face's eps[0], added to the squared gradient
    return 1e-30;
  return 1e-8;
}

/// The model's first output, checked to be a scalar float loss.
FailureOr<Value> scalarLoss(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() == 0)
    return func.emitOpError("has no outputs; the first output must be the scalar loss");
  Value loss = ret.getOperand(0);
  auto type = cast<RankedTensorType>(loss.getType());
  if (type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
    std::string name = "0";
    if (auto attr = func.getResultAttrOfType<StringAttr>(0, "plait.name"))
      name = "'" + attr.str() + "'";
    return func.emitOpError("first output ")
           << name << " must be the scalar float loss, got " << type;
  }
  return loss;
}

struct BuildTrainStepPass : impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using Base::Base;

  LogicalResult checkOptions(ModuleOp module) {
    if (llvm::find(kOptimizers, optimizer) == std::end(kOptimizers))
      return module.emitError("unknown optimizer '")
             << optimizer
             << "' (expected sgd, adam, adamw, adagrad, rmsprop, lion, adamax, nadam, radam, "
                "adadelta, rprop, asgd, lamb or adafactor)";
    if (!rt::LrSchedule::known(schedule))
      return module.emitError("unknown learning-rate schedule '")
             << schedule
             << "' (expected constant, linear-warmup, cosine, cosine-restarts, linear, "
                "polynomial, step, multistep, exponential, inverse-sqrt, wsd, onecycle, "
                "cyclic or plateau)";
    if (schedule == "onecycle" && lrAnneal != "cos" && lrAnneal != "linear")
      return module.emitError("unknown onecycle anneal '")
             << lrAnneal << "' (expected cos or linear)";
    if (schedule == "plateau" && lrThresholdMode != "rel" && lrThresholdMode != "abs")
      return module.emitError("unknown plateau threshold mode '")
             << lrThresholdMode << "' (expected rel or abs)";
    if (cyclesMomentum()) {
      if (!rt::LrSchedule::cyclesMomentumOf(optimizer))
        return module.emitError("the ")
               << optimizer << " optimizer has no momentum or first beta for the " << schedule
               << " schedule to cycle (torch's cycle_momentum): give cycle-momentum=false";
      auto [base, max] = cycleMomenta();
      if (!(base > 0 && base < 1 && max > 0 && max < 1))
        return module.emitError("the cycled momentum needs base and max momentum in (0, 1), "
                                "got ")
               << base << " and " << max;
    }
    // lr <= 0 means the optimizer's default here; the plan's rules otherwise.
    if (std::string why = lrSchedule(1.0).invalid(); !why.empty())
      return module.emitError(why);
    for (double v : {double(lr),          double(eps),           double(beta1),
                     double(beta2),       double(weightDecay),   double(momentum),
                     double(dampening),   double(alpha),         double(lrDecay),
                     double(rho),         double(momentumDecay), double(initialAccumulatorValue),
                     double(etaminus),    double(etaplus),       double(stepSizeMin),
                     double(stepSizeMax), double(lambd),         double(asgdAlpha),
                     double(t0),          double(clipGradNorm),  double(minLr),
                     double(lrGamma),     double(lrPower),       double(lrThreshold),
                     double(lrEps),       double(clipGradValue)})
      if (!std::isfinite(v))
        return module.emitError("optimizer hyper-parameters must be finite numbers, got ") << v;
    if (clipGradValue < 0)
      return module.emitError("clip-grad-value must be >= 0, got ") << clipGradValue;
    if (std::string why = invalidNormType(clipGradNormType); !why.empty())
      return module.emitError(why);
    // lr < 0, eps < 0: the optimizer's default (eps = 0 is refused: a zero denominator).
    // beta2 < 0: the optimizer's default (lion 0.99, else 0.999).
    if (lr == 0 || eps == 0 || beta1 < 0 || beta1 >= 1 || beta2 >= 1 || momentum < 0 ||
        alpha < 0 || alpha >= 1 || lrDecay < 0 || rho < 0 || rho > 1 || momentumDecay < 0 ||
        initialAccumulatorValue < 0)
      return module.emitError("invalid optimizer hyper-parameters (need lr > 0, eps > 0, "
                              "0 <= betas < 1, momentum >= 0, 0 <= alpha < 1, lr-decay >= 0, "
                              "0 <= rho <= 1, momentum-decay >= 0, "
                              "initial-accumulator-value >= 0)");
    if (!(0 < etaminus && etaminus < 1 && 1 < etaplus))
      return module.emitError("invalid Rprop etas (need 0 < etaminus < 1 < etaplus)");
    if (!(0 <= stepSizeMin && stepSizeMin <= stepSizeMax))
      return module.emitError(
          "invalid Rprop step sizes (need 0 <= step-size-min <= step-size-max)");
    if (lambd < 0 || asgdAlpha < 0 || t0 < 0)
      return module.emitError("invalid ASGD hyper-parameters (need lambd, asgd-alpha, t0 >= 0)");
    if (optimizer == "rprop" && weightDecay > 0)
      return module.emitError("the rprop optimizer has no weight decay (torch 1.13's Rprop)");
    if ((dampening != 0 || nesterov) && optimizer != "sgd")
      return module.emitError("dampening and nesterov are SGD's; the ")
             << optimizer << " optimizer has neither";
    if (amsgrad && optimizer != "adam" && optimizer != "adamw")
      return module.emitError("amsgrad is Adam's and AdamW's; the ")
             << optimizer << " optimizer has none";
    if (decoupledWeightDecay && optimizer != "nadam" && optimizer != "radam")
      return module.emitError("decoupled-weight-decay is NAdam's and RAdam's; the ")
             << optimizer << " optimizer "
             << (optimizer == "adamw" || optimizer == "lion" ? "decouples its weight decay always"
                                                             : "has none");
    if ((alwaysAdapt || trustClip) && optimizer != "lamb")
      return module.emitError(alwaysAdapt ? "always-adapt" : "trust-clip")
             << " is LAMB's; the " << optimizer << " optimizer has no trust ratio";
    const bool adafactor = optimizer == "adafactor";
    const std::pair<const char *, bool> adafactorOptions[] = {
        {"adafactor-beta1", adafactorBeta1 >= 0}, {"eps2", eps2 != 1e-3},
        {"clip-threshold", clipThreshold != 1.0}, {"decay-rate", decayRate != -0.8},
        {"relative-step", relativeStep},          {"warmup-init", warmupInit},
        {"no-scale-parameter", noScaleParameter}};
    for (auto [name, given] : adafactorOptions)
      if (given && !adafactor)
        return module.emitError(name)
               << " is Adafactor's; the " << optimizer << " optimizer has none";
    if (adafactor) {
      if (!(adafactorBeta1 < 1) || !(eps2 >= 0) || !(clipThreshold > 0) || !(decayRate <= 0) ||
          !std::isfinite(double(eps2)) || !std::isfinite(double(clipThreshold)) ||
          !std::isfinite(double(decayRate)))
        return module.emitError("invalid Adafactor hyper-parameters (need adafactor-beta1 < 1, "
                                "eps2 >= 0, clip-threshold > 0, decay-rate <= 0)");
      if (warmupInit && !relativeStep)
        return module.emitError("warmup-init warms up the relative step: give relative-step");
      if (relativeStep && (lr > 0 || schedule != "constant" || warmupSteps > 0 || !lrScale.empty()))
        return module.emitError("relative-step computes each step's lr from the step "
                                "(Hugging Face's relative_step ignores the lr): drop ")
               << (lr > 0             ? "lr"
                   : !lrScale.empty() ? "lr-scale"
                                      : "the lr schedule");
    }
    if (centered && optimizer != "rmsprop")
      return module.emitError("centered is RMSprop's; the ") << optimizer
                                                               << " optimizer has none";
    if (momentum != 0 && optimizer != "sgd" && optimizer != "rmsprop")
      return module.emitError("momentum is SGD's and RMSprop's; the ")
             << optimizer << " optimizer has none";
    if (nesterov && (momentum <= 0 || dampening != 0))
      return module.emitError("nesterov needs momentum > 0 and zero dampening");
    if (microBatches < 1)
      return module.emitError("micro-batches must be at least 1, got ")
             << static_cast<int64_t>(microBatches);
    if (!(emaDecay == 0 || (emaDecay > 0 && emaDecay < 1)))
      return module.emitError("ema-decay must be in (0, 1) (0: no EMA), got ")
             << double(emaDecay);
    const std::pair<const char *, bool> emaOptions[] = {
        {"ema-warmup", emaWarmup},           {"ema-buffers", emaBuffers},
        {"ema-power", emaPower != 0},        {"ema-inv-gamma", emaInvGamma != 1},
        {"ema-min-decay", emaMinDecay != 0}, {"ema-start", emaStart != 0},
        {"ema-every", emaEvery != 1}};
    for (auto [name, given] : emaOptions)
      if (given && emaDecay == 0)
        return module.emitError(name) << " needs an EMA: give ema-decay";
    if (!(emaPower >= 0 && std::isfinite(double(emaPower))))
      return module.emitError("ema-power must be >= 0 (0: no power warm-up), got ")
             << double(emaPower);
    if (!(emaInvGamma > 0 && std::isfinite(double(emaInvGamma))))
      return module.emitError("ema-inv-gamma must be > 0, got ") << double(emaInvGamma);
    if (emaPower > 0 && emaWarmup)
      return module.emitError("ema-power and ema-warmup are two warm-ups of the EMA's decay; "
                              "give one");
    if (emaInvGamma != 1 && emaPower == 0)
      return module.emitError("ema-inv-gamma is the power warm-up's: give ema-power");
    if (!(emaMinDecay >= 0 && emaMinDecay <= emaDecay))
      return module.emitError("ema-min-decay must be in [0, ema-decay ")
             << double(emaDecay) << "], got " << double(emaMinDecay);
    if (emaStart < 0 || emaEvery < 1)
      return module.emitError("ema-start must be >= 0 and ema-every >= 1, got ")
             << int64_t(emaStart) << " and " << int64_t(emaEvery);
    return success();
  }

  /// plait.weight_ema's attributes from the --ema-* options: the decay, and each part of the
  /// schedule that is not its default.
  SmallVector<NamedAttribute> emaAttributes(Builder &b) {
    SmallVector<NamedAttribute> attrs{b.getNamedAttr("decay", b.getF64FloatAttr(emaDecay))};
    if (emaWarmup)
      attrs.push_back(b.getNamedAttr("warmup", b.getBoolAttr(true)));
    if (emaPower > 0)
      attrs.push_back(b.getNamedAttr("power", b.getF64FloatAttr(emaPower)));
    if (emaInvGamma != 1)
      attrs.push_back(b.getNamedAttr("inv_gamma", b.getF64FloatAttr(emaInvGamma)));
    if (emaMinDecay > 0)
      attrs.push_back(b.getNamedAttr("min_decay", b.getF64FloatAttr(emaMinDecay)));
    if (emaStart > 0)
      attrs.push_back(b.getNamedAttr("start", b.getI64IntegerAttr(emaStart)));
    if (emaEvery > 1)
      attrs.push_back(b.getNamedAttr("every", b.getI64IntegerAttr(emaEvery)));
    return attrs;
  }

  /// One --lr-scale rule: a regex of param names and its learning-rate factor.
  struct LrScale {
    std::string text;
    std::regex regex;
    double factor;
  };

  /// The rules of --lr-scale 'REGEX=F,...' in order (first match wins); one-line errors.
  FailureOr<std::vector<LrScale>> parseLrScales(ModuleOp module) {
    std::vector<LrScale> out;
    StringRef rest = lrScale;
    while (!rest.empty()) {
      auto [rule, tail] = rest.split(',');
      rest = tail;
      size_t eq = rule.rfind('=');
      double factor = 0;
      if (eq == StringRef::npos || eq == 0 || rule.drop_front(eq + 1).getAsDouble(factor) ||
          !(factor >= 0) || !std::isfinite(factor)) {
        module.emitError("--lr-scale expects REGEX=F with F finite and >= 0, got '") << rule << "'";
        return failure();
      }
      try {
        out.push_back({rule.str(), std::regex(rule.take_front(eq).str()), factor});
      } catch (const std::regex_error &e) {
        module.emitError("invalid --lr-scale regex '") << rule.take_front(eq) << "': "
                                                        << e.what();
        return failure();
      }
    }
    return out;
  }

  /// One --param-group: a regex of param names and the settings its params take instead of
  /// the optimizer's (a torch param group's own betas, eps, momentum, weight_decay, ...).
  struct ParamGroup {
    std::string text;
    std::regex regex;
    SmallVector<std::pair<double OptimizerConfig::*, double>> settings;
    SmallVector<std::pair<bool OptimizerConfig::*, bool>> switches; // nesterov, amsgrad, ...
    bool setsWeightDecay = false;

    /// `base` with this group's settings and switches.
    OptimizerConfig over(const OptimizerConfig &base) const {
      OptimizerConfig out = base;
      for (auto [field, value] : settings)
        out.*field = value;
      for (auto [field, value] : switches)
        out.*field = value;
      return out;
    }
  };

  /// A true/false key of --param-group: the switch it sets and the optimizers that have it.
  struct GroupSwitch {
    StringRef name;
    bool OptimizerConfig::*field;
    std::initializer_list<StringRef> optimizers; // empty: every optimizer
  };

  /// A scalar key of --param-group: the setting it overrides, the optimizers that have it
  /// and its valid range, [lo, hi] or with an open end.
  struct GroupKey {
    StringRef name;
    double OptimizerConfig::*field;
    std::initializer_list<StringRef> optimizers; // empty: every optimizer
    const char *range;                           // as the error states it
    double lo;
    bool loOpen;
    double hi;
    bool hiOpen;
  };

  /// The groups of --param-group 'REGEX:KEY=V,...;...' in order (first match wins); each key
  /// must be one the optimizer has and its value valid for it, and each group's settings over
  /// `base` (the run's) a valid whole. One-line errors.
  FailureOr<std::vector<ParamGroup>> parseParamGroups(ModuleOp module,
                                                      const OptimizerConfig &base) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    static const GroupKey kKeys[] = {
        {"eps",
         &OptimizerConfig::eps,
         {"adam", "adamw", "adagrad", "rmsprop", "adamax", "nadam", "radam", "adadelta", "lamb",
          "adafactor"},
         "> 0",
         0,
         true,
         kInf,
         true},
        {"momentum", &OptimizerConfig::momentum, {"sgd", "rmsprop"}, ">= 0", 0, false, kInf, true},
        {"weight_decay",
         &OptimizerConfig::weightDecay,
         {"sgd", "adam", "adamw", "adagrad", "rmsprop", "lion", "adamax", "nadam", "radam",
          "adadelta", "asgd", "lamb", "adafactor"},
         ">= 0",
         0,
         false,
         kInf,
         true},
        {"dampening", &OptimizerConfig::dampening, {"sgd"}, "finite", -kInf, true, kInf, true},
        {"alpha", &OptimizerConfig::alpha, {"rmsprop"}, "in [0, 1)", 0, false, 1, true},
        // ASGD's alpha (eta's power) shares the key torch's param groups give it.
        {"alpha", &OptimizerConfig::asgdAlpha, {"asgd"}, ">= 0", 0, false, kInf, true},
        {"lambd", &OptimizerConfig::lambd, {"asgd"}, ">= 0", 0, false, kInf, true},
        {"t0", &OptimizerConfig::t0, {"asgd"}, ">= 0", 0, false, kInf, true},
        {"lr_decay", &OptimizerConfig::lrDecay, {"adagrad"}, ">= 0", 0, false, kInf, true},
        {"initial_accumulator_value",
         &OptimizerConfig::initialAccumulatorValue,
         {"adagrad"},
         ">= 0",
         0,
         false,
         kInf,
         true},
        {"rho", &OptimizerConfig::rho, {"adadelta"}, "in [0, 1]", 0, false, 1, false},
        {"momentum_decay",
         &OptimizerConfig::momentumDecay,
         {"nadam"},
         ">= 0",
         0,
         false,
         kInf,
         true}};
    static const GroupSwitch kSwitches[] = {
        {"nesterov", &OptimizerConfig::nesterov, {"sgd"}},
        {"amsgrad", &OptimizerConfig::amsgrad, {"adam", "adamw"}},
        {"centered", &OptimizerConfig::centered, {"rmsprop"}},
        {"decoupled_weight_decay", &OptimizerConfig::decoupledWeightDecay, {"nadam", "radam"}},
        {"always_adapt", &OptimizerConfig::alwaysAdapt, {"lamb"}},
        {"trust_clip", &OptimizerConfig::trustClip, {"lamb"}},
        {"maximize", &OptimizerConfig::maximize, {}}};
    static constexpr const char *kKeyList =
        "betas=B1/B2, etas=MINUS/PLUS, step_sizes=MIN/MAX, eps, momentum, weight_decay, "
        "dampening, alpha, lr_decay, lambd, t0, "
        "initial_accumulator_value, rho, momentum_decay; true/false: nesterov, amsgrad, "
        "centered, decoupled_weight_decay, always_adapt, trust_clip, maximize";
    std::vector<ParamGroup> out;
    auto has = [&](std::initializer_list<StringRef> optimizers) {
      return optimizers.size() == 0 || llvm::is_contained(optimizers, StringRef(optimizer));
    };
    StringRef rest = paramGroups;
    while (!rest.empty()) {
      auto [text, tail] = rest.split(';');
      rest = tail;
      size_t colon = text.rfind(':');
      auto fail = [&](const Twine &why) {
        module.emitError("--param-group '") << text << "': " << why;
        return failure();
      };
      if (colon == StringRef::npos || colon == 0 || colon + 1 == text.size())
        return fail(Twine("expected REGEX:KEY=V,... (keys ") + kKeyList + ")");
      ParamGroup group{text.str(), std::regex(), {}, {}, false};
      try {
        group.regex = std::regex(text.take_front(colon).str());
      } catch (const std::regex_error &e) {
        return fail(Twine("invalid regex: ") + e.what());
      }
      StringRef settings = text.drop_front(colon + 1);
      while (!settings.empty()) {
        auto [setting, more] = settings.split(',');
        settings = more;
        auto [key, value] = setting.split('=');
        double x = 0;
        if (key == "betas") {
          auto [b1, b2] = value.split('/');
          double y = 0;
          if (b1.getAsDouble(x) || b2.getAsDouble(y) || !(x >= 0 && x < 1 && y >= 0 && y < 1))
            return fail("betas must be B1/B2 with 0 <= B < 1, got '" + value + "'");
          if (!has({"adam", "adamw", "lion", "adamax", "nadam", "radam", "lamb"}))
            return fail("the " + optimizer + " optimizer has no betas");
          group.settings.push_back({&OptimizerConfig::beta1, x});
          group.settings.push_back({&OptimizerConfig::beta2, y});
          continue;
        }
        if (key == "etas" || key == "step_sizes") {
          // Rprop's pairs, as torch's etas=(etaminus, etaplus), step_sizes=(min, max).
          const bool etas = key == "etas";
          auto [first, second] = value.split('/');
          double y = 0;
          if (first.getAsDouble(x) || second.getAsDouble(y) || !std::isfinite(y) ||
              !(etas ? 0 < x && x < 1 && 1 < y : 0 <= x && x <= y))
            return fail(etas ? "etas must be MINUS/PLUS with 0 < MINUS < 1 < PLUS, got '" +
                                   value + "'"
                             : "step_sizes must be MIN/MAX with 0 <= MIN <= MAX, got '" +
                                   value + "'");
          if (!has({"rprop"}))
            return fail("the " + optimizer + " optimizer has no " + key);
          group.settings.push_back(
              {etas ? &OptimizerConfig::etaminus : &OptimizerConfig::stepSizeMin, x});
          group.settings.push_back(
              {etas ? &OptimizerConfig::etaplus : &OptimizerConfig::stepSizeMax, y});
          continue;
        }
        const GroupSwitch *sw =
            llvm::find_if(kSwitches, [&](const GroupSwitch &s) { return s.name == key; });
        if (sw != std::end(kSwitches)) {
          if (!has(sw->optimizers))
            return fail("the " + optimizer + " optimizer has no " + key);
          std::optional<bool> on = llvm::StringSwitch<std::optional<bool>>(value.lower())
                                       .Cases("true", "1", true)
                                       .Cases("false", "0", false)
                                       .Default(std::nullopt);
          if (!on)
            return fail(key + " must be true or false, got '" + value + "'");
          group.switches.push_back({sw->field, *on});
          continue;
        }
        // A key two optimizers name alike (alpha: RMSprop's and ASGD's) is this optimizer's.
        const GroupKey *k = llvm::find_if(
            kKeys, [&](const GroupKey &k) { return k.name == key && has(k.optimizers); });
        if (k == std::end(kKeys))
          k = llvm::find_if(kKeys, [&](const GroupKey &k) { return k.name == key; });
        if (k == std::end(kKeys))
          return fail("unknown key '" + key + "' (expected " + kKeyList +
                      "; per-param learning rates are --lr-scale)");
        if (value.getAsDouble(x))
          return fail("expected KEY=NUMBER, got '" + setting + "'");
        if (!has(k->optimizers))
          return fail("the " + optimizer + " optimizer has no " + key);
        if (!std::isfinite(x))
          return fail(key + " must be a finite number, got " + value);
        if (x < k->lo || (k->loOpen && x == k->lo) || x > k->hi || (k->hiOpen && x == k->hi))
          return fail(key + " must be " + k->range + ", got " + value);
        group.settings.push_back({k->field, x});
        group.setsWeightDecay |= key == "weight_decay";
      }
      OptimizerConfig merged = group.over(base);
      if (merged.nesterov && (merged.momentum <= 0 || merged.dampening != 0))
        return fail("nesterov needs momentum > 0 and zero dampening (or nesterov=false)");
      out.push_back(std::move(group));
    }
    return out;
  }

  /// Whether the schedule cycles the momentum: onecycle or cyclic, with cycle-momentum.
  bool cyclesMomentum() const {
    return (schedule == "onecycle" || schedule == "cyclic") && cycleMomentum;
  }

  /// The cycled momentum's base and max, each kind's defaults where not given.
  std::pair<double, double> cycleMomenta() const {
    const bool one = schedule == "onecycle";
    return {baseMomentum >= 0 ? double(baseMomentum) : (one ? 0.85 : 0.8),
            maxMomentum >= 0 ? double(maxMomentum) : (one ? 0.95 : 0.9)};
  }

  /// Whether the cycle moves the optimizer's momentum (SGD, RMSprop), else its first beta.
  bool cyclesMomentumField() const { return optimizer == "sgd" || optimizer == "rmsprop"; }

  /// An update's momentum_cycle (runtime/OptimizerSchedule.h MomentumCycle's layout).
  DenseF64ArrayAttr momentumCycleAttr(OpBuilder &b) {
    const rt::LrCycle c = lrSchedule(1.0).cycle();
    auto [base, max] = cycleMomenta();
    const bool one = c.kind == rt::LrCycle::OneCycle;
    SmallVector<double, rt::MomentumCycle::kValues> v{double(c.kind),
                                                      base,
                                                      max,
                                                      one ? c.totalSteps : c.stepSizeUp,
                                                      one ? c.pctStart : c.stepSizeDown,
                                                      one ? double(c.linear) : double(c.mode),
                                                      one ? double(c.threePhase) : c.gamma};
    return b.getDenseF64ArrayAttr(v);
  }

  /// The schedule the options describe, at peak learning rate `peak`.
  rt::LrSchedule lrSchedule(double peak) {
    rt::LrSchedule s;
    s.kind = schedule;
    s.lr = peak;
    s.warmupSteps = warmupSteps;
    s.totalSteps = totalSteps;
    s.minLr = minLr;
    s.gamma = schedule == "plateau" && lrGamma == 0 ? 0.1 : double(lrGamma); // torch's factor
    s.stepSize = lrStepSize;
    s.power = lrPower;
    s.decaySteps = decaySteps;
    s.milestones.assign(lrMilestones.begin(), lrMilestones.end());
    s.cycleSteps = lrCycleSteps;
    s.cycleMult = lrCycleMult;
    s.pctStart = lrPctStart;
    s.annealLinear = lrAnneal == "linear";
    s.threePhase = lrThreePhase;
    s.divFactor = lrDivFactor;
    s.finalDivFactor = lrFinalDivFactor;
    s.stepSizeDown = lrStepSizeDown;
    s.cyclicMode = lrCyclicMode;
    s.patience = lrPatience;
    s.threshold = lrThreshold;
    s.thresholdAbs = lrThresholdMode == "abs";
    s.cooldown = lrCooldown;
    s.eps = lrEps;
    s.plateauSteps = lrPlateauSteps;
    return s;
  }

  void recordSchedule(ModuleOp module, double weightDecayUsed, int64_t buffers,
                      ArrayRef<ParamGroup> groups) {
    OpBuilder b(module.getContext());
    SmallVector<NamedAttribute> entries{
        b.getNamedAttr("kind", b.getStringAttr(schedule)),
        b.getNamedAttr("lr", b.getF64FloatAttr(lr > 0 ? double(lr) : defaultLr(optimizer))),
        b.getNamedAttr("warmup_steps", b.getI64IntegerAttr(warmupSteps)),
        b.getNamedAttr("total_steps", b.getI64IntegerAttr(totalSteps)),
        b.getNamedAttr("min_lr", b.getF64FloatAttr(minLr))};
    // The later kinds' own parameters (the first three's schedules stay as they were).
    if (schedule == "step" || schedule == "multistep" || schedule == "exponential")
      entries.push_back(b.getNamedAttr("gamma", b.getF64FloatAttr(lrGamma)));
    if (schedule == "cosine-restarts") {
      entries.push_back(b.getNamedAttr("cycle_steps", b.getI64IntegerAttr(lrCycleSteps)));
      entries.push_back(b.getNamedAttr("cycle_mult", b.getI64IntegerAttr(lrCycleMult)));
    }
    if (schedule == "multistep")
      entries.push_back(b.getNamedAttr(
          "milestones", b.getDenseI64ArrayAttr(SmallVector<int64_t>(lrMilestones.begin(),
                                                                    lrMilestones.end()))));
    if (schedule == "step" || schedule == "cyclic")
      entries.push_back(b.getNamedAttr("step_size", b.getI64IntegerAttr(lrStepSize)));
    if (schedule == "onecycle") {
      entries.push_back(b.getNamedAttr("pct_start", b.getF64FloatAttr(lrPctStart)));
      entries.push_back(b.getNamedAttr("anneal_linear", b.getBoolAttr(lrAnneal == "linear")));
      entries.push_back(b.getNamedAttr("three_phase", b.getBoolAttr(lrThreePhase)));
      entries.push_back(b.getNamedAttr("div_factor", b.getF64FloatAttr(lrDivFactor)));
      entries.push_back(b.getNamedAttr("final_div_factor", b.getF64FloatAttr(lrFinalDivFactor)));
    }
    if (schedule == "cyclic") {
      entries.push_back(b.getNamedAttr("step_size_down", b.getI64IntegerAttr(lrStepSizeDown)));
      entries.push_back(b.getNamedAttr("cyclic_mode", b.getStringAttr(lrCyclicMode)));
      entries.push_back(b.getNamedAttr("gamma", b.getF64FloatAttr(lrGamma)));
    }
    // The momentum the cyclical kinds cycle (each update's momentum_cycle), for --explain.
    if (cyclesMomentum()) {
      auto [base, max] = cycleMomenta();
      entries.push_back(b.getNamedAttr("base_momentum", b.getF64FloatAttr(base)));
      entries.push_back(b.getNamedAttr("max_momentum", b.getF64FloatAttr(max)));
      entries.push_back(
          b.getNamedAttr("cycled", b.getStringAttr(cyclesMomentumField() ? "momentum" : "beta1")));
    }
    if (schedule == "plateau") {
      const rt::LrSchedule s = lrSchedule(1.0);
      entries.push_back(b.getNamedAttr("gamma", b.getF64FloatAttr(s.gamma)));
      entries.push_back(b.getNamedAttr("patience", b.getI64IntegerAttr(s.patience)));
      entries.push_back(b.getNamedAttr("threshold", b.getF64FloatAttr(s.threshold)));
      entries.push_back(b.getNamedAttr("threshold_abs", b.getBoolAttr(s.thresholdAbs)));
      entries.push_back(b.getNamedAttr("cooldown", b.getI64IntegerAttr(s.cooldown)));
      entries.push_back(b.getNamedAttr("eps", b.getF64FloatAttr(s.eps)));
      entries.push_back(b.getNamedAttr("plateau_steps", b.getI64IntegerAttr(s.plateauSteps)));
    }
    if (schedule == "polynomial")
      entries.push_back(b.getNamedAttr("power", b.getF64FloatAttr(lrPower)));
    if (schedule == "wsd")
      entries.push_back(b.getNamedAttr("decay_steps", b.getI64IntegerAttr(decaySteps)));
    module->setAttr("plait.lr_schedule", b.getDictionaryAttr(entries));
    SmallVector<NamedAttribute> train{
        b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
        b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecayUsed)),
        b.getNamedAttr("clip_grad_norm", b.getF64FloatAttr(clipGradNorm))};
    if ((clipGradNorm > 0 || logGradNorm) && clipGradNormType != 2)
      train.push_back(
          b.getNamedAttr("clip_grad_norm_type", b.getStringAttr(normTypeName(clipGradNormType))));
    if (clipGradValue > 0)
      train.push_back(b.getNamedAttr("clip_grad_value", b.getF64FloatAttr(clipGradValue)));
    if (labelSmoothing > 0)
      train.push_back(b.getNamedAttr("label_smoothing", b.getF64FloatAttr(labelSmoothing)));
    if (microBatches > 1)
      train.push_back(b.getNamedAttr("micro_batches", b.getI64IntegerAttr(microBatches)));
    if (maximize)
      train.push_back(b.getNamedAttr("maximize", b.getBoolAttr(true)));
    // The regexes of the groups whose maximize is not the run's (their gradients negated),
    // ';'-separated as --param-group separates groups.
    std::string flipped;
    for (const ParamGroup &g : groups)
      for (auto [field, on] : g.switches)
        if (field == &OptimizerConfig::maximize && on != maximize)
          flipped += (flipped.empty() ? "" : ";") + g.text.substr(0, g.text.rfind(':'));
    if (!flipped.empty())
      train.push_back(b.getNamedAttr(maximize ? "minimize_groups" : "maximize_groups",
                                     b.getStringAttr(flipped)));
    if (decoupledWeightDecay)
      train.push_back(b.getNamedAttr("decoupled_weight_decay", b.getBoolAttr(true)));
    if (alwaysAdapt)
      train.push_back(b.getNamedAttr("always_adapt", b.getBoolAttr(true)));
    if (trustClip)
      train.push_back(b.getNamedAttr("trust_clip", b.getBoolAttr(true)));
    if (optimizer == "adafactor") { // what --explain says of its step size
      train.push_back(b.getNamedAttr("relative_step", b.getBoolAttr(relativeStep)));
      train.push_back(b.getNamedAttr("warmup_init", b.getBoolAttr(warmupInit)));
      train.push_back(b.getNamedAttr("scale_parameter", b.getBoolAttr(!noScaleParameter)));
      if (adafactorBeta1 >= 0)
        train.push_back(b.getNamedAttr("adafactor_beta1", b.getF64FloatAttr(adafactorBeta1)));
    }
    if (!noWeightDecay.empty())
      train.push_back(b.getNamedAttr("no_weight_decay", b.getStringAttr(noWeightDecay)));
    if (!lrScale.empty())
      train.push_back(b.getNamedAttr("lr_scale", b.getStringAttr(lrScale)));
    if (!paramGroups.empty())
      train.push_back(b.getNamedAttr("param_groups", b.getStringAttr(paramGroups)));
    if (buffers > 0)
      train.push_back(b.getNamedAttr("buffers", b.getI64IntegerAttr(buffers)));
    if (emaDecay > 0) {
      // The EMA's schedule under "ema_" names (ema_decay, ema_warmup, ema_power, ...).
      for (NamedAttribute attr : emaAttributes(b))
        train.push_back(b.getNamedAttr("ema_" + attr.getName().str(), attr.getValue()));
      if (emaBuffers)
        train.push_back(b.getNamedAttr("ema_buffers", b.getBoolAttr(true)));
    }
    module->setAttr("plait.train", b.getDictionaryAttr(train));
  }

  /// --label-smoothing: every softmax_cross_entropy of the step smooths its targets, as
  /// torch's CrossEntropyLoss(label_smoothing) (which ONNX cannot express, so an exported
  /// model never carries it). Recorded in plait.train by recordSchedule.
  LogicalResult smoothLabels(func::FuncOp func) {
    if (labelSmoothing == 0)
      return success();
    if (!(labelSmoothing > 0 && labelSmoothing <= 1)) {
      std::ostringstream value; // as written (a diagnostic prints doubles as %e)
      value << labelSmoothing;
      return func.emitOpError("label-smoothing must be in [0, 1], got ") << value.str();
    }
    SmallVector<SoftmaxCrossEntropyOp> losses(func.getOps<SoftmaxCrossEntropyOp>());
    if (losses.empty())
      return func.emitOpError("label-smoothing smooths a softmax cross-entropy loss (ONNX "
                              "SoftmaxCrossEntropyLoss, torch's cross_entropy); the model has "
                              "none");
    for (SoftmaxCrossEntropyOp op : losses)
      op.setLabelSmoothingAttr(
          FloatAttr::get(Float64Type::get(func.getContext()), double(labelSmoothing)));
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto func = entryFunction(module, "train");
    if (failed(checkOptions(module)) || failed(func))
      return signalPassFailure();
    auto loss = scalarLoss(*func);
    if (failed(loss) || failed(smoothLabels(*func)))
      return signalPassFailure();

    std::optional<std::regex> frozen;
    try {
      if (!freeze.empty())
        frozen.emplace(freeze.getValue());
    } catch (const std::regex_error &e) {
      module.emitError("invalid --freeze regex '") << freeze << "': " << e.what();
      return signalPassFailure();
    }
    // Buffers (BatchNorm's running statistics): never trained; the result marked
    // plait.buffer = NAME carries each one's value after the step.
    auto buffers = bufferResults(*func);
    if (failed(buffers))
      return signalPassFailure();
    SmallVector<Value> trainable;
    for (auto param : func->getOps<ParamOp>())
      if (!param.getBuffer() && (!frozen || !std::regex_search(param.getName().str(), *frozen)))
        trainable.push_back(param);
    if (trainable.empty()) {
      func->emitOpError("has no trainable params");
      return signalPassFailure();
    }

    if (precision != "fp32" && precision != "bf16-mixed") {
      module.emitError("unknown precision '") << precision << "' (expected fp32 or bf16-mixed)";
      return signalPassFailure();
    }
    if (precision == "bf16-mixed") {
      auto converted = convertToBf16Mixed(*func);
      if (failed(converted))
        return signalPassFailure();
      module->setAttr("plait.precision", StringAttr::get(&getContext(), "bf16-mixed"));
    }

    auto grads = differentiate(*func, *loss, trainable, maximize ? -1.0 : 1.0);
    if (failed(grads))
      return signalPassFailure();
    eraseStopGradients(*func); // the backward exists: they have done their work
    if (microBatches > 1 &&
        failed(accumulateMicroBatches(*func, microBatches, *loss, *grads, *buffers)))
      return signalPassFailure();

    Operation *terminator = func->getBody().front().getTerminator();
    OpBuilder b(terminator);
    Location loc = terminator->getLoc();
    if (clipGradValue > 0) // first, as a script calling clip_grad_value_ then clip_grad_norm_
      clampGradients(b, loc, *grads, clipGradValue);
    // torch's clip_grad_norm_ returns the norm: logged (the step's grad_norm output) where
    // it clips, or with --log-grad-norm only measured.
    Value gradNorm;
    if (clipGradNorm > 0 || logGradNorm)
      gradNorm = clipByGlobalNorm(b, loc, *grads, clipGradNorm, clipGradNormType);
    // The lr in f64, the double torch's schedulers compute and its optimizers read (an f32
    // lr is off by up to 3e-8 relative: an f64 model's every update drifts from torch's).
    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    auto f64Scalar = RankedTensorType::get({}, b.getF64Type());
    Value lrValue = b.create<HyperOp>(loc, f64Scalar, b.getStringAttr("lr"));
    Value stepValue = b.create<HyperOp>(loc, f32Scalar, b.getStringAttr("step"));
    Value prevLrValue = optimizer == "asgd"
                            ? b.create<HyperOp>(loc, f64Scalar, b.getStringAttr("prev_lr"))
                            : Value();
    OptimizerConfig opt{optimizer,
                        beta1,
                        beta2 >= 0 ? double(beta2) : (optimizer == "lion" ? 0.99 : 0.999),
                        eps > 0 ? double(eps) : defaultEps(optimizer),
                        weightDecay >= 0
                            ? double(weightDecay)
                            : (optimizer == "adamw" || optimizer == "lamb" ? 0.01 : 0.0),
                        momentum,
                        dampening,
                        nesterov,
                        alpha,
                        lrDecay,
                        centered,
                        amsgrad,
                        rho,
                        momentumDecay,
                        initialAccumulatorValue,
                        decoupledWeightDecay,
                        alwaysAdapt,
                        trustClip,
                        etaminus,
                        etaplus,
                        stepSizeMin,
                        stepSizeMax,
                        lambd,
                        asgdAlpha,
                        t0,
                        maximize};
    opt.adafactorBeta1 = adafactorBeta1;
    opt.eps2 = eps2;
    opt.clipThreshold = clipThreshold;
    opt.decayRate = decayRate;
    opt.scaleParameter = !noScaleParameter;
    opt.relativeStep = relativeStep;
    opt.warmupInit = warmupInit;
    // --no-weight-decay: those params' updates take weight decay 0 (plait-shard keeps them in
    // units of their own, so that each unit's params share one update's settings).
    std::optional<std::regex> noDecay;
    if (!noWeightDecay.empty()) {
      try {
        noDecay.emplace(noWeightDecay.getValue());
      } catch (const std::regex_error &e) {
        module.emitError("invalid --no-weight-decay regex '") << noWeightDecay << "': " << e.what();
        return signalPassFailure();
      }
      if (opt.weightDecay == 0) {
        module.emitError("--no-weight-decay '")
            << noWeightDecay << "' has no effect: the " << optimizer
            << " optimizer's weight decay is 0 (give --weight-decay)";
        return signalPassFailure();
      }
    }
    OptimizerConfig undecayed = opt;
    undecayed.weightDecay = 0;
    auto scales = parseLrScales(module);
    if (failed(scales))
      return signalPassFailure();
    std::vector<bool> scaleUsed(scales->size(), false);
    auto groups = parseParamGroups(module, opt);
    if (failed(groups))
      return signalPassFailure();
    std::vector<bool> groupUsed(groups->size(), false);
    int64_t excluded = 0;
    PendingAssigns assigns;
    // onecycle and cyclic: every update's momentum_cycle (the same for all of them).
    const DenseF64ArrayAttr cycleAttr = cyclesMomentum() ? momentumCycleAttr(b) : nullptr;
    for (auto &[param, grad] : *grads) {
      auto op = param.getDefiningOp<ParamOp>();
      std::string name = op.getName().str();
      bool exclude = noDecay && std::regex_search(name, *noDecay);
      excluded += exclude;
      size_t before = assigns.size();
      // --param-group: the first matching group's settings over the optimizer's.
      OptimizerConfig settings = exclude ? undecayed : opt;
      for (size_t i = 0; i < groups->size(); ++i) {
        const ParamGroup &g = (*groups)[i];
        if (!std::regex_search(name, g.regex))
          continue;
        groupUsed[i] = true;
        if (g.setsWeightDecay && exclude) {
          op.emitOpError("matches --no-weight-decay '")
              << noWeightDecay << "' and --param-group '" << g.text
              << "', which sets its weight_decay: give it one";
          return signalPassFailure();
        }
        settings = g.over(settings);
        break;
      }
      // A group's maximize other than the run's (whose backward starts from a loss gradient
      // of -1 with --maximize): the update reads the exact negation of the gradient, as
      // torch's step negates it first thing, after clipping (the norm ignores the sign).
      Value stepGrad = grad;
      if (settings.maximize != maximize) {
        stepGrad = b.create<NegOp>(op.getLoc(), grad);
        stepGrad.getDefiningOp()->setAttr(kMaximizeNegationAttr, b.getUnitAttr());
      }
      // onecycle and cyclic cycle the momentum (or first beta) of every param group, as
      // torch's schedulers set each group's: the update's attribute holds step 1's (the max),
      // which gives SGD and RMSprop their buffer, and momentum_cycle the rest.
      if (cycleAttr)
        (cyclesMomentumField() ? settings.momentum : settings.beta1) = cycleMomenta().second;
      appendUpdate(b, op, stepGrad, lrValue, prevLrValue, stepValue, settings, assigns);
      if (cycleAttr)
        assigns[before].second.getDefiningOp()->setAttr(kMomentumCycleAttr, cycleAttr);
      // --lr-scale: the first matching factor, on the update just built (the op assigned to
      // the param).
      for (size_t i = 0; i < scales->size(); ++i)
        if (std::regex_search(name, (*scales)[i].regex)) {
          scaleUsed[i] = true;
          if ((*scales)[i].factor != 1.0)
            assigns[before].second.getDefiningOp()->setAttr(
                "lr_scale", b.getF64FloatAttr((*scales)[i].factor));
          break;
        }
    }
    for (size_t i = 0; i < groups->size(); ++i)
      if (!groupUsed[i]) {
        module.emitError("--param-group '") << (*groups)[i].text
                                            << "' matches no trainable param";
        return signalPassFailure();
      }
    if (noDecay && excluded == 0) {
      module.emitError("--no-weight-decay '") << noWeightDecay << "' matches no trainable param";
      return signalPassFailure();
    }
    for (size_t i = 0; i < scales->size(); ++i)
      if (!scaleUsed[i]) {
        module.emitError("--lr-scale: '") << (*scales)[i].text << "' matches no trainable param";
        return signalPassFailure();
      }
    // Each buffer takes its new value (cast back from bf16 under bf16-mixed).
    for (auto [param, result] : *buffers) {
      Value value = terminator->getOperand(result);
      if (value.getType() != param.getType())
        value = b.create<CastOp>(loc, param.getType(), value);
      assigns.push_back({param, value});
    }
    // --ema-decay: each trainable param's average, from its value after the update, built
    // after every update so that the updates stay next to each other (plait-group-updates);
    // with --ema-buffers each float buffer's too, from its value after the step.
    if (emaDecay > 0) {
      PendingAssigns averages;
      for (auto &[target, value] : assigns) {
        auto param = target.getDefiningOp<ParamOp>();
        if (!param || (param.getBuffer() &&
                       !(emaBuffers && isa<FloatType>(param.getType().getElementType()))))
          continue;
        Value ema = b.create<StateOp>(param.getLoc(), param.getType(),
                                      b.getStringAttr(param.getName() + ".ema"));
        Value next = b.create<WeightEmaOp>(param.getLoc(), TypeRange{param.getType()},
                                           ValueRange{value, ema, stepValue}, emaAttributes(b))
                         ->getResult(0);
        averages.push_back({ema, next});
      }
      llvm::append_range(assigns, averages);
    }
    // Assigns end the step: the runtime copies their values after the last instruction.
    for (auto &[target, value] : assigns)
      b.create<AssignOp>(loc, target, value);

    // The step returns only the loss.
    b.create<func::ReturnOp>(loc, ValueRange{*loss});
    terminator->erase();
    DictionaryAttr lossAttrs = func->getResultAttrDict(0);
    SmallVector<DictionaryAttr> resultAttrs{lossAttrs ? lossAttrs : b.getDictionaryAttr({})};
    func->setType(FunctionType::get(&getContext(), func->getArgumentTypes(), {loss->getType()}));
    func->setAllResultAttrs(resultAttrs);
    recordSchedule(module, opt.weightDecay, int64_t(buffers->size()), *groups);
    if (gradNorm)
      appendGradNormOutput(*func, gradNorm);
    eraseDeadOps(*func);
  }

  /// The buffer params and the results carrying their values after the step (marked
  /// plait.buffer = NAME); one-line errors for a mark naming no buffer, or one named twice.
  FailureOr<SmallVector<std::pair<Value, unsigned>>> bufferResults(func::FuncOp func) {
    llvm::StringMap<ParamOp> byName;
    for (auto param : func.getOps<ParamOp>())
      if (param.getBuffer())
        byName.try_emplace(param.getName(), param);
    SmallVector<std::pair<Value, unsigned>> out;
    llvm::StringSet<> seen;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "plait.buffer");
      if (!name)
        continue;
      auto it = byName.find(name.getValue());
      if (i == 0 || it == byName.end() || !seen.insert(name.getValue()).second) {
        func.emitOpError("result #")
            << i << " is marked plait.buffer = '" << name.getValue() << "', "
            << (i == 0 ? "but the first result is the loss"
                : it == byName.end() ? "which names no plait.param marked buffer"
                                     : "which an earlier result updates too");
        return failure();
      }
      auto type = cast<RankedTensorType>(func.getResultTypes()[i]);
      auto paramType = it->second.getType();
      if (type.getShape() != paramType.getShape()) {
        func.emitOpError("result #") << i << " (plait.buffer = '" << name.getValue()
                                     << "') has type " << type << ", the buffer " << paramType;
        return failure();
      }
      out.push_back({it->second.getResult(), i});
    }
    return out;
  }
};

} // namespace
} // namespace plait
