// Names for the in-memory plan's enums (messages and summaries).
#include "runtime/Plan.h"

#include <algorithm>
#include <cmath>

namespace plait::rt {

const char *tensorKindName(TensorKind k) {
  switch (k) {
  case TensorKind::Activation:
    return "activation";
  case TensorKind::Input:
    return "input";
  case TensorKind::Param:
    return "param";
  case TensorKind::Constant:
    return "constant";
  case TensorKind::State:
    return "state";
  case TensorKind::Hyper:
    return "hyper";
  }
  return "unknown";
}

double LrSchedule::at(int64_t step) const {
  double warm = warmupSteps > 0 ? std::min(1.0, double(step) / double(warmupSteps)) : 1.0;
  if (kind == "cosine" && step > warmupSteps) {
    double span = double(totalSteps - warmupSteps);
    double p = span > 0 ? std::clamp(double(step - warmupSteps) / span, 0.0, 1.0) : 1.0;
    return minLr + (lr - minLr) * (1 + std::cos(M_PI * p)) / 2;
  }
  return kind == "constant" ? lr : lr * warm;
}

} // namespace plait::rt
