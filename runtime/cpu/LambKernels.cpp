// LAMB (ir/PlaitTrainOps.td): lamb_update and lamb_norms, as timm's Lamb computes a step
// (bias correction, gradient averaging; the trust ratio where the weight decay is non-zero or
// always_adapt is set, at most 1 with trust_clip):
//   m = m * b1 + (1 - b1) * g;  v = v * b2 + (1 - b2) * g * g;
//   u = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps) + wd * param;
//   r = ||param|| / ||u|| (1 where either is 0);  param += -lr * (u * r).
// A whole tensor's update takes its two norms itself in a first pass that writes nothing, so
// every output may still be written over the input it replaces. On a flat shard the norms of
// each param (a segment of the unit's flat buffer) span every rank's shard: lamb_norms sums
// this rank's part, the plan all-reduces them, and lamb_update reads them.
//
// The sums are taken over fixed blocks of each range (16 lanes in the param's type, added into
// double every 1024 elements), combined in block order: the same bits on any number of
// threads.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

constexpr std::string_view kUpdate = "lamb_update", kNorms = "lamb_norms";

struct LambFactors {
  double beta1, beta2, eps, weightDecay;
  double bc1, sqrtBc2; // 1 - beta1^step, sqrt(1 - beta2^step)
  double negLr;
  bool adapt, trustClip;
};

/// Reads the attributes and the factors of step `step` (lr is read by the update only).
Status readLamb(std::string_view kernel, const Attrs &attrs, const TensorView &stepTensor,
                LambFactors &f) {
  double step;
  PLAIT_RETURN_IF_ERROR(readStep(kernel, stepTensor, step));
  f.beta1 = attrs.getFloat("beta1", 0.9);
  PLAIT_RETURN_IF_ERROR(cycleMomentum(kernel, attrs, step, f.beta1));
  f.beta2 = attrs.getFloat("beta2", 0.999);
  f.eps = attrs.getFloat("eps", 1e-6);
  f.weightDecay = attrs.getFloat("weight_decay", 0.01);
  f.adapt = f.weightDecay != 0 || attrs.getBool("always_adapt", false);
  f.trustClip = attrs.getBool("trust_clip", false);
  f.bc1 = 1 - std::pow(f.beta1, step);
  f.sqrtBc2 = std::sqrt(1 - std::pow(f.beta2, step));
  f.negLr = 0;
  return Status();
}

/// The T constants of one element's direction.
template <typename T> struct LambConstants {
  T b1, oneMinusB1, b2, oneMinusB2, eps, wd, bc1, sqrtBc2;
  explicit LambConstants(const LambFactors &f)
      : b1(T(f.beta1)), oneMinusB1(T(1 - f.beta1)), b2(T(f.beta2)), oneMinusB2(T(1 - f.beta2)),
        eps(T(f.eps)), wd(T(f.weightDecay)), bc1(T(f.bc1)), sqrtBc2(T(f.sqrtBc2)) {}

  /// The new moments of one element and its update direction u, as timm computes them.
  void direction(T p, T g, T m0, T v0, T &m, T &v, T &u) const {
    m = m0 * b1 + oneMinusB1 * g;
    v = v0 * b2 + oneMinusB2 * g * g;
    u = (m / bc1) / (std::sqrt(v) / sqrtBc2 + eps);
    u = u + wd * p;
  }
};

/// The operands of one LAMB tensor (whole, or this rank's shard).
template <typename T> struct LambArrays {
  const TensorView *grad; // may be bf16 or f16 (forGradPieces)
  const T *param, *m, *v;
};

/// Sums of param^2 and u^2 over elements [begin, end): `kSlots` blocks at most, each summed
/// in double by one thread, added in block order.
template <typename T>
void lambSums(const LambArrays<T> &a, const LambConstants<T> &c, int64_t begin, int64_t end,
              double sums[2]) {
  constexpr int64_t kSlots = 64, kMinBlock = 4096;
  sums[0] = sums[1] = 0;
  const int64_t n = end - begin;
  if (n <= 0)
    return;
  const int64_t slots = std::clamp<int64_t>(n / kMinBlock, 1, kSlots);
  double partial[kSlots][2];
  parallelFor(slots, 1, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const int64_t lo = begin + n * s / slots, hi = begin + n * (s + 1) / slots;
      double pp = 0, uu = 0;
      forGradPieces<T>(*a.grad, lo, hi, [&](int64_t b, int64_t e, const T *g) {
        // kLanes independent sums in T (a loop the compiler vectorises; one running double
        // would be a serial chain), added into the double totals every kFlush elements.
        constexpr int64_t kLanes = 16, kFlush = 1024;
        for (int64_t f = b; f < e; f += kFlush) {
          const int64_t end = std::min(f + kFlush, e);
          T lanesP[kLanes] = {}, lanesU[kLanes] = {};
          int64_t i = f;
          for (; i + kLanes <= end; i += kLanes)
            for (int64_t j = 0; j < kLanes; ++j) {
              T m, v, u;
              const T p = a.param[i + j];
              c.direction(p, g[i + j - b], a.m[i + j], a.v[i + j], m, v, u);
              lanesP[j] += p * p;
              lanesU[j] += u * u;
            }
          for (; i < end; ++i) {
            T m, v, u;
            const T p = a.param[i];
            c.direction(p, g[i - b], a.m[i], a.v[i], m, v, u);
            lanesP[0] += p * p;
            lanesU[0] += u * u;
          }
          for (int64_t j = 0; j < kLanes; ++j) {
            pp += double(lanesP[j]);
            uu += double(lanesU[j]);
          }
        }
      });
      partial[s][0] = pp;
      partial[s][1] = uu;
    }
  });
  for (int64_t s = 0; s < slots; ++s) {
    sums[0] += partial[s][0];
    sums[1] += partial[s][1];
  }
}

/// timm's trust ratio from the two sums of squares: ||p|| / ||u||, 1 where either is 0.
double trustRatio(double paramSq, double updateSq, bool clip) {
  const double w = std::sqrt(paramSq), u = std::sqrt(updateSq);
  double r = (w > 0 && u > 0) ? w / u : 1.0;
  return clip ? std::min(r, 1.0) : r;
}

/// Writes the new param and moments of elements [begin, end), u scaled by `ratio`.
template <typename T>
void lambApply(const LambArrays<T> &a, const LambConstants<T> &c, T negLr, T ratio,
               const TensorView *out, int64_t begin, int64_t end) {
  T *newParam = out[0].as<T>(), *newM = out[1].as<T>(), *newV = out[2].as<T>();
  parallelFor(end - begin, kElementGrain, [&](int64_t, int64_t lo, int64_t hi) {
    forGradPieces<T>(*a.grad, begin + lo, begin + hi, [&](int64_t b, int64_t e, const T *g) {
#pragma GCC ivdep
      for (int64_t i = b; i < e; ++i) {
        T m, v, u;
        const T p = a.param[i];
        c.direction(p, g[i - b], a.m[i], a.v[i], m, v, u);
        newParam[i] = p + negLr * (u * ratio);
        newM[i] = m;
        newV[i] = v;
      }
    });
  });
}

/// Checks the tensors of a LAMB update (6 operands, or 7 with norms) and reads its factors.
Status prepareUpdate(const TensorView *in, const TensorView *out, const Attrs &attrs,
                     bool halfGrad, LambFactors &f) {
  PLAIT_RETURN_IF_ERROR(checkUpdateTensors(kUpdate, UpdateKind::Lamb, attrs, in, out, 2, halfGrad));
  double lr;
  PLAIT_RETURN_IF_ERROR(readLr(kUpdate, attrs, in[2], lr));
  PLAIT_RETURN_IF_ERROR(readLamb(kUpdate, attrs, in[3], f));
  f.negLr = -lr;
  return Status();
}

/// A whole tensor's update: its norms first (where it adapts), then the step.
template <typename T>
void wholeUpdate(const TensorView *in, const TensorView *out, const LambFactors &f) {
  const LambArrays<T> a{&in[1], in[0].as<T>(), in[4].as<T>(), in[5].as<T>()};
  const LambConstants<T> c(f);
  double ratio = 1;
  if (f.adapt) {
    double sums[2];
    lambSums<T>(a, c, 0, in[0].numel(), sums);
    ratio = trustRatio(sums[0], sums[1], f.trustClip);
  }
  lambApply<T>(a, c, T(f.negLr), T(ratio), out, 0, in[0].numel());
}

Status lambUpdateKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kUpdate, 6, 7, 3));
  LambFactors f;
  PLAIT_RETURN_IF_ERROR(prepareUpdate(call.inputs.data(), call.outputs.data(), call.attrs,
                                      /*halfGrad=*/false, f));
  const bool sharded = call.attrs.has("segments");
  if (sharded != (call.inputs.size() == 7))
    return Status::errorf("{}: takes norms (a 7th operand) exactly when it has segments",
                          kUpdate);
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lambUpdateKernel);
  const TensorView *in = call.inputs.data();
  const TensorView *out = call.outputs.data();
  if (!sharded)
    return dispatchF32F64(kUpdate, in[0].dtype, [&](auto tag) -> Status {
      wholeUpdate<decltype(tag)>(in, out, f);
      return Status();
    });
  ShardSegments segments;
  const int64_t numel = in[0].numel();
  PLAIT_RETURN_IF_ERROR(readShardSegments(kUpdate, call.attrs, call.rank, numel, &in[6], segments));
  const float *norms = in[6].as<float>();
  return dispatchF32F64(kUpdate, in[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const LambArrays<T> a{&in[1], in[0].as<T>(), in[4].as<T>(), in[5].as<T>()};
    const LambConstants<T> c(f);
    forLocalSegments(segments, numel, [&](int64_t k, int64_t lo, int64_t hi) {
      double ratio = 1;
      if (k >= 0 && f.adapt)
        ratio = trustRatio(norms[2 * k], norms[2 * k + 1], f.trustClip);
      lambApply<T>(a, c, T(f.negLr), T(ratio), out, lo, hi);
    });
    return Status();
  });
}

/// lamb_norms(param, grad, step, exp_avg, exp_avg_sq) -> S x 2: per segment, this rank's
/// sums of param^2 and u^2.
Status lambNormsKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kNorms, 5, 5, 1));
  const TensorView *in = call.inputs.data();
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kNorms, "grad", param, in[1]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kNorms, "exp_avg", param, in[3]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kNorms, "exp_avg_sq", param, in[4]));
  LambFactors f;
  PLAIT_RETURN_IF_ERROR(readLamb(kNorms, call.attrs, in[2], f));
  ShardSegments segments;
  const int64_t numel = param.numel();
  PLAIT_RETURN_IF_ERROR(readShardSegments(kNorms, call.attrs, call.rank, numel, &call.outputs[0], segments));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lambNormsKernel);
  float *norms = call.outputs[0].as<float>();
  std::fill(norms, norms + call.outputs[0].numel(), 0.0f);
  return dispatchF32F64(kNorms, param.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const LambArrays<T> a{&in[1], param.as<T>(), in[3].as<T>(), in[4].as<T>()};
    const LambConstants<T> c(f);
    forLocalSegments(segments, numel, [&](int64_t k, int64_t lo, int64_t hi) {
      if (k < 0)
        return;
      double sums[2];
      lambSums<T>(a, c, lo, hi, sums);
      norms[2 * k] = float(sums[0]);
      norms[2 * k + 1] = float(sums[1]);
    });
    return Status();
  });
}

} // namespace

Status readShardSegments(std::string_view kernel, const Attrs &attrs, uint32_t rank,
                         int64_t numel, const TensorView *norms, ShardSegments &out) {
  const std::vector<int64_t> &lengths = attrs.getInts("segments");
  int64_t groupSize = 1, index = 0;
  if (attrs.has("groups")) {
    const std::vector<int64_t> &groups = attrs.getInts("groups");
    groupSize = attrs.getInt("group_size", 0);
    auto it = std::find(groups.begin(), groups.end(), int64_t(rank));
    if (groupSize < 1 || it == groups.end())
      return Status::errorf("{}: rank {} is in none of the groups (group size {})", kernel,
                            rank, groupSize);
    index = (it - groups.begin()) % groupSize;
  }
  int64_t total = 0;
  for (int64_t n : lengths) {
    if (n < 1)
      return Status::errorf("{}: segments must each be >= 1, got {}", kernel, n);
    total += n;
  }
  if (lengths.empty() || total > numel * groupSize)
    return Status::errorf("{}: segments ({} elements) do not fit {} x {} ranks", kernel, total,
                          numel, groupSize);
  if (norms && (norms->dtype != DType::F32 || norms->shape.size() != 2 ||
                norms->shape[0] != int64_t(lengths.size()) || norms->shape[1] != 2))
    return Status::errorf("{}: norms must be f32 {}x2, got {} {}", kernel, lengths.size(),
                          dtypeName(norms->dtype), shapeString(norms->shape));
  out.lengths = &lengths;
  out.offset = index * numel;
  return Status();
}

Status runLambUpdate(const TensorView *in, const TensorView *out, const Attrs &attrs,
                     bool halfGrad) {
  LambFactors f;
  PLAIT_RETURN_IF_ERROR(prepareUpdate(in, out, attrs, halfGrad, f));
  return dispatchF32F64(kUpdate, in[0].dtype, [&](auto tag) -> Status {
    wholeUpdate<decltype(tag)>(in, out, f);
    return Status();
  });
}

void registerLambKernels() {
  registerKernel("lamb_update", &lambUpdateKernel);
  registerKernel("lamb_norms", &lambNormsKernel);
}

} // namespace plait::rt::cpu
