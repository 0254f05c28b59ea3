// What the CPU optimizer kernels share (OptimizerKernels.cpp, TwoStateUpdateKernels.cpp):
// reading the step's hyper-parameters and walking a gradient that may be bf16 or f16.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "runtime/OptimizerSchedule.h"
#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::cpu {

/// Reads the scalar hyper-parameter `what` (lr or step) set by the runtime: f64 (the lr of
/// plans since 2026-12-06) or f32 (the step, and older plans' lr).
inline Status readScalar(std::string_view kernel, std::string_view what, const TensorView &t,
                  double &value) {
  if ((t.dtype != DType::F32 && t.dtype != DType::F64) || t.numel() != 1)
    return Status::errorf("{}: {} must be an f32 or f64 scalar, got {} {}", kernel, what,
                          dtypeName(t.dtype), shapeString(t.shape));
  value = t.dtype == DType::F64 ? *t.as<double>() : double(*t.as<float>());
  return Status();
}

/// The learning rate of this update: the step's lr times the update's lr_scale (--lr-scale:
/// a torch param group's lr relative to the base, applied as the schedule scales the base).
inline Status readLr(std::string_view kernel, const Attrs &attrs, const TensorView &t, double &lr) {
  PLAIT_RETURN_IF_ERROR(readScalar(kernel, "lr", t, lr));
  double scale = attrs.getFloat("lr_scale", 1.0);
  if (!(scale >= 0))
    return Status::errorf("{}: lr_scale must be >= 0, got {}", kernel, scale);
  lr *= scale;
  return Status();
}

/// The 1-based step number; anything below 1 (or fractional) means the runtime's step
/// counter is broken, which must not silently skip the first-step rules.
inline Status readStep(std::string_view kernel, const TensorView &t, double &step) {
  PLAIT_RETURN_IF_ERROR(readScalar(kernel, "step", t, step));
  if (!(step >= 1) || step != std::floor(step))
    return Status::errorf("{}: step must be a whole number >= 1, got {}", kernel, step);
  return Status();
}

/// The update's momentum_cycle (--lr-schedule onecycle or cyclic cycling its momentum or first
/// beta; kind None when absent), checked: kValues numbers, a known kind, momenta in (0, 1)
/// and the cycle's steps > 0 (the verifier's rules, for plans read from disk).
inline Status readMomentumCycle(std::string_view kernel, const Attrs &attrs, MomentumCycle &cycle) {
  cycle = MomentumCycle();
  if (!attrs.has("momentum_cycle"))
    return Status();
  const std::vector<double> &v = attrs.getFloats("momentum_cycle");
  if (v.size() != size_t(MomentumCycle::kValues))
    return Status::errorf("{}: momentum_cycle needs {} numbers, got {}", kernel,
                          MomentumCycle::kValues, v.size());
  cycle = momentumCycle(v.data(), int(v.size()));
  const LrCycle &c = cycle.cycle;
  const bool steps =
      c.kind == LrCycle::OneCycle
          ? c.totalSteps > 0 && c.pctStart >= 0 && c.pctStart <= 1
          : c.stepSizeUp > 0 && c.stepSizeDown > 0 && c.mode >= 0 && c.mode <= 2 && c.gamma > 0;
  if ((c.kind != LrCycle::OneCycle && c.kind != LrCycle::Cyclic) || !(cycle.base > 0) ||
      !(cycle.base < 1) || !(cycle.max > 0) || !(cycle.max < 1) || !steps)
    return Status::errorf("{}: momentum_cycle [{}] is not a one-cycle (1) or cyclic (2) "
                          "schedule with momenta in (0, 1) and steps > 0",
                          kernel, fmt::join(v, ", "));
  return Status();
}

/// Sets `momentum` (the attribute's momentum or first beta) to step `step`'s cycled value
/// where the update has a momentum_cycle.
inline Status cycleMomentum(std::string_view kernel, const Attrs &attrs, double step,
                            double &momentum) {
  MomentumCycle cycle;
  PLAIT_RETURN_IF_ERROR(readMomentumCycle(kernel, attrs, cycle));
  momentum = cycledMomentum(cycle, step, momentum);
  return Status();
}

/// Calls body(begin, end, grad) over the pieces of elements [begin, end), `grad` the T values
/// of the gradient `g` there: g's own elements when it is of type T, else (bf16 or f16) those
/// elements widened exactly, as a cast to T computes them, into a buffer on the stack.
template <typename T, typename Body>
void forGradPieces(const TensorView &g, int64_t begin, int64_t end, Body &&body) {
  if (g.dtype != DType::BF16 && g.dtype != DType::F16) {
    body(begin, end, g.as<T>() + begin);
    return;
  }
  constexpr int64_t kPiece = 1024;
  T wide[kPiece];
  const uint16_t *half = g.as<uint16_t>();
  for (int64_t b = begin; b < end; b += kPiece) {
    const int64_t n = std::min(kPiece, end - b);
    if (g.dtype == DType::BF16)
      for (int64_t i = 0; i < n; ++i)
        wide[i] = T(widenBf16(half[b + i]));
    else
      for (int64_t i = 0; i < n; ++i)
        wide[i] = T(widenF16(half[b + i]));
    body(b, b + n, static_cast<const T *>(wide));
  }
}

/// One adamax, nadam, radam, adadelta or rprop update (`kind`) of grouped_update: operands `in` and
/// results `out` checked (`halfGrad`: its gradient may be bf16 or f16), then the update run.
Status runTwoStateUpdate(UpdateKind kind, const TensorView *in, const TensorView *out,
                         const Attrs &attrs, bool halfGrad);

/// Registers adamax_update, nadam_update, radam_update, adadelta_update and rprop_update.
void registerTwoStateUpdateKernels();

/// One lamb_update of grouped_update (a whole tensor: its norms taken by the kernel), checked
/// and run as runTwoStateUpdate runs the others.
Status runLambUpdate(const TensorView *in, const TensorView *out, const Attrs &attrs,
                     bool halfGrad);

/// The segments of a LAMB flat shard (lamb_update's and lamb_norms' `segments`, `groups`):
/// segment k covers [start_k, start_k + lengths[k]) of the unit's whole flat buffer, and this
/// rank's shard starts at `offset` there.
struct ShardSegments {
  const std::vector<int64_t> *lengths = nullptr;
  int64_t offset = 0;
};

/// Reads `segments` and `groups` (absent: one rank, offset 0) for this rank's shard of
/// `numel` elements; checks they fit the group's whole buffer and `norms` (when given) is
/// S x 2 f32. Both backends' LAMB kernels read their layout here.
Status readShardSegments(std::string_view kernel, const Attrs &attrs, uint32_t rank,
                         int64_t numel, const TensorView *norms, ShardSegments &out);

/// Calls fn(k, lo, hi) for each segment k that has elements [lo, hi) in this rank's shard
/// (local indices), in order; then fn(-1, lo, numel) for the elements past the last segment.
template <typename Fn> void forLocalSegments(const ShardSegments &s, int64_t numel, Fn &&fn) {
  int64_t start = 0, done = 0;
  for (size_t k = 0; k < s.lengths->size(); ++k) {
    const int64_t lo = std::max(start - s.offset, int64_t(0));
    const int64_t hi = std::min(start + (*s.lengths)[k] - s.offset, numel);
    if (lo < hi) {
      fn(int64_t(k), lo, hi);
      done = hi;
    }
    start += (*s.lengths)[k];
  }
  done = std::max(done, std::min(std::max(start - s.offset, int64_t(0)), numel));
  if (done < numel)
    fn(-1, done, numel);
}

/// Registers lamb_update and lamb_norms (LambKernels.cpp).
void registerLambKernels();

} // namespace plait::rt::cpu
