// Names for the in-memory plan's enums (messages and summaries).
#include "runtime/Plan.h"


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


} // namespace plait::rt
