// The optimizer update plait-build-train-step appends for each trained param: the op of the
// run's optimizer (sgd_update, adamw_update, ...) with its states, named as torch names them.
#pragma once

#include <string>
#include <utility>

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace plait {

/// One param's optimizer and its settings (the run's, or its --param-group's).
struct OptimizerConfig {
  std::string kind;
  double beta1, beta2, eps, weightDecay, momentum, dampening;
  bool nesterov;
  double alpha, lrDecay; // RMSprop's smoothing constant, Adagrad's learning-rate decay
  bool centered;         // RMSprop
  bool amsgrad;          // Adam and AdamW
  double rho;            // Adadelta's decay
  double momentumDecay;  // NAdam's momentum schedule
  double initialAccumulatorValue; // Adagrad's sum before the first step
  bool decoupledWeightDecay;      // NAdam and RAdam: decay the params (NAdamW, RAdamW)
  bool alwaysAdapt, trustClip;    // LAMB: the trust ratio without weight decay; at most 1
  double etaminus, etaplus;       // Rprop: the step-size factors
  double stepSizeMin, stepSizeMax; // Rprop: the step-size bounds
  double lambd, asgdAlpha, t0;     // ASGD: eta's decay and power, where averaging starts
  bool maximize;                   // step along the negated gradient (torch's maximize)
  // Adafactor (Hugging Face's): beta1 (< 0: no first moment), eps[1], the update's RMS bound,
  // beta2's power of the step, and its three switches.
  double adafactorBeta1 = -1, eps2 = 1e-3, clipThreshold = 1, decayRate = -0.8;
  bool scaleParameter = true, relativeStep = false, warmupInit = false;
};

/// (target, new value) pairs stored by plait.assign once every update has been built.
using PendingAssigns = llvm::SmallVector<std::pair<mlir::Value, mlir::Value>>;

/// Appends the optimizer update of one param; its new values go to `assigns`. `prevLr` is the
/// previous step's lr (ASGD's eta follows it).
void appendUpdate(mlir::OpBuilder &b, ParamOp param, mlir::Value grad, mlir::Value lr,
                  mlir::Value prevLr, mlir::Value step, const OptimizerConfig &opt,
                  PendingAssigns &assigns);

} // namespace plait
