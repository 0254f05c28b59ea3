// Host side of the sharded Adafactor step on the device: adafactor_stats, adafactor_norms and
// adafactor_update with `segments` (runtime/cpu/AdafactorShardKernels.cpp computes the same;
// the layout in codegen/schema/AdafactorShard.h). The operands are checked by the CPU
// kernels' shape checks (they read no data); the pieces of this rank's shard are found on the
// host from the attributes and the rank, and each is launched in turn (Adafactor.cu), its
// workspace reused by the next on the stream. The lr and step are read on the device.
#include <algorithm>

#include "runtime/cpu/AdafactorSupport.h"
#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {
namespace {

using namespace cuda;

constexpr std::string_view kStats = "adafactor_stats", kNorms = "adafactor_norms",
                           kUpdate = "adafactor_update";

/// The device piece of segment `s` [lo, hi) on this rank (AdafactorPiece).
AdafactorPiece pieceOf(const cpu::AdafactorShardLayout &l, size_t k, const adafactor::Segment &s,
                       int64_t lo, int64_t hi) {
  AdafactorPiece p;
  p.k = int64_t(k);
  p.e0 = l.offset + lo - s.start;
  p.n = hi - lo;
  p.local = lo;
  p.length = s.length;
  p.rows = s.rows;
  p.cols = s.cols;
  p.stats = s.stats;
  return p;
}

/// The most workspace any piece of this rank's shard takes (adafactorShardWorkspaceBytes).
uint64_t shardWorkspace(const cpu::AdafactorShardLayout &l) {
  uint64_t bytes = 0;
  adafactor::forShardPieces(*l.lengths, *l.factors, l.offset, l.numel,
                            [&](size_t, const adafactor::Segment &s, int, int64_t lo, int64_t hi) {
                              int64_t batches = 0;
                              if (s.factored()) {
                                const int64_t e0 = l.offset + lo - s.start;
                                const int64_t e1 = e0 + (hi - lo);
                                batches = ((e1 - 1) / s.cols) / s.rows - (e0 / s.cols) / s.rows + 1;
                              }
                              bytes =
                                  std::max(bytes, adafactorShardWorkspaceBytes(hi - lo, batches));
                            });
  return std::max<uint64_t>(bytes, sizeof(double));
}

/// Fills the second-moment state pointers of segment `moment` (inputs from `first` on, and
/// with `results` their outputs).
void setMoments(const CudaKernelCall &call, const adafactor::Segment &s, int moment, size_t first,
                bool results, AdafactorShardTensors &t) {
  const size_t at = first + size_t(moment);
  const auto &in = call.inputs;
  t.row = t.col = t.v = nullptr;
  t.newRow = t.newCol = t.newV = nullptr;
  if (s.factored()) {
    t.row = in[at].data;
    t.col = in[at + 1].data;
    if (results) {
      t.newRow = call.outputs[at - 3].data;
      t.newCol = call.outputs[at - 2].data;
    }
  } else {
    t.v = in[at].data;
    if (results)
      t.newV = call.outputs[at - 3].data;
  }
}

/// adafactor_stats(param, grad) -> f64 stats.
Status statsKernel(const CudaKernelCall &call) {
  const KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(host, kStats, 2, 2, 1));
  cpu::AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(cpu::readAdafactorShard(kStats, host, l));
  const TensorView &stats = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(cpu::checkAdafactorSums(kStats, "stats", stats, l.statsLength));
  const DType dtype = call.inputs[0].dtype;
  PLAIT_RETURN_IF_ERROR(checkFloat(kStats, dtype));
  const double eps1 = call.attrs.getFloat("eps1", 1e-30);
  if (!(eps1 >= 0))
    return Status::errorf("{}: needs eps1 >= 0, got {}", kStats, eps1);
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kStats, shardWorkspace(l), used, work));
  if (call.check)
    return {};
  double *out = static_cast<double *>(stats.data);
  PLAIT_RETURN_IF_ERROR(launched(cudaMemsetAsync(out, 0, stats.bytes(), call.stream), kStats));
  Status status;
  adafactor::forShardPieces(
      *l.lengths, *l.factors, l.offset, l.numel,
      [&](size_t k, const adafactor::Segment &s, int, int64_t lo, int64_t hi) {
        if (status.ok())
          status = launched(launchAdafactorStats(code(dtype), pieceOf(l, k, s, lo, hi),
                                                 call.inputs[0].data, call.inputs[1].data, eps1,
                                                 out, static_cast<double *>(work), call.stream),
                            kStats);
      });
  return status;
}

/// adafactor_norms(param, grad, step, stats, second-moment states...) -> f64 norms.
Status normsKernel(const CudaKernelCall &call) {
  const KernelCall host = call.asHostCall();
  cpu::AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(cpu::readAdafactorShard(kNorms, host, l));
  const size_t inputs = 4 + size_t(l.moments);
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(host, kNorms, inputs, inputs, 1));
  PLAIT_RETURN_IF_ERROR(cpu::checkAdafactorShardOperands(kNorms, host, l, 4, 3, false, 0));
  const TensorView &norms = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(cpu::checkAdafactorSums(kNorms, "norms", norms, int64_t(l.segments)));
  const DType dtype = call.inputs[0].dtype;
  PLAIT_RETURN_IF_ERROR(checkFloat(kNorms, dtype));
  AdafactorFactors f;
  f.decayRate = call.attrs.getFloat("decay_rate", -0.8);
  if (!(f.decayRate <= 0))
    return Status::errorf("{}: needs decay_rate <= 0, got {}", kNorms, f.decayRate);
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kNorms, "step", 2, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kNorms, step));
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kNorms, shardWorkspace(l), used, work));
  if (call.check)
    return {};
  double *out = static_cast<double *>(norms.data);
  PLAIT_RETURN_IF_ERROR(launched(cudaMemsetAsync(out, 0, norms.bytes(), call.stream), kNorms));
  AdafactorShardTensors t;
  t.param = call.inputs[0].data;
  t.grad = call.inputs[1].data;
  t.step = static_cast<const float *>(call.inputs[2].data);
  t.stats = static_cast<const double *>(call.inputs[3].data);
  Status status;
  adafactor::forShardPieces(
      *l.lengths, *l.factors, l.offset, l.numel,
      [&](size_t k, const adafactor::Segment &s, int moment, int64_t lo, int64_t hi) {
        if (!status.ok())
          return;
        setMoments(call, s, moment, 4, false, t);
        status = launched(launchAdafactorNorms(code(dtype), pieceOf(l, k, s, lo, hi), t, f, out,
                                               static_cast<double *>(work), call.stream),
                          kNorms);
      });
  return status;
}

} // namespace

/// adafactor_update with segments: param, grad, lr, step, [exp_avg,] second-moment states...,
/// stats, norms -> new param, [new exp_avg,] new second-moment states...
Status adafactorShardUpdate(const CudaKernelCall &call) {
  const KernelCall host = call.asHostCall();
  AdafactorFactors f;
  PLAIT_RETURN_IF_ERROR(cpu::readAdafactorSettings(kUpdate, call.attrs, f));
  f.lrScale = call.attrs.getFloat("lr_scale", 1.0);
  if (!(f.lrScale >= 0))
    return Status::errorf("{}: lr_scale must be >= 0, got {}", kUpdate, f.lrScale);
  cpu::AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(cpu::readAdafactorShard(kUpdate, host, l));
  const size_t first = 4 + (f.firstMoment ? 1 : 0), statsAt = first + size_t(l.moments);
  const size_t states = statsAt - 4;
  PLAIT_RETURN_IF_ERROR(cpu::checkArity(host, kUpdate, states + 6, states + 6, states + 1));
  const auto &in = call.inputs;
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kUpdate, "new_param", param, call.outputs[0]));
  if (f.firstMoment) {
    PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kUpdate, "exp_avg", param, in[4]));
    PLAIT_RETURN_IF_ERROR(cpu::checkLikeParam(kUpdate, "new_exp_avg", param, call.outputs[1]));
  }
  PLAIT_RETURN_IF_ERROR(
      cpu::checkAdafactorShardOperands(kUpdate, host, l, first, statsAt, true, first - 3));
  const TensorView &norms = in[statsAt + 1];
  PLAIT_RETURN_IF_ERROR(cpu::checkAdafactorSums(kUpdate, "norms", norms, int64_t(l.segments)));
  PLAIT_RETURN_IF_ERROR(checkFloat(kUpdate, param.dtype));
  double lr = 0, step = 0;
  PLAIT_RETURN_IF_ERROR(readScalar(call, kUpdate, "lr", 2, lr));
  PLAIT_RETURN_IF_ERROR(readScalar(call, kUpdate, "step", 3, step));
  PLAIT_RETURN_IF_ERROR(checkStep(call, kUpdate, step));
  uint64_t used = 0;
  void *work = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kUpdate, shardWorkspace(l), used, work));
  if (call.check)
    return {};
  const int dtype = code(param.dtype);
  AdafactorShardTensors t;
  t.param = param.data;
  t.grad = in[1].data;
  t.m = f.firstMoment ? in[4].data : nullptr;
  t.newParam = call.outputs[0].data;
  t.newM = f.firstMoment ? call.outputs[1].data : nullptr;
  t.lr = static_cast<const double *>(in[2].data);
  t.step = static_cast<const float *>(in[3].data);
  t.stats = static_cast<const double *>(in[statsAt].data);
  t.norms = static_cast<const double *>(norms.data);
  // The padding past the segments keeps its values (copied where the result is not the
  // operand itself).
  const int64_t covered = l.covered();
  const size_t elementBytes = param.bytes() / size_t(std::max<int64_t>(param.numel(), 1));
  if (covered < l.numel) {
    const size_t offset = size_t(covered) * elementBytes,
                 bytes = size_t(l.numel - covered) * elementBytes;
    auto copy = [&](const void *from, void *to) {
      if (from == to)
        return Status();
      return launched(cudaMemcpyAsync(static_cast<char *>(to) + offset,
                                      static_cast<const char *>(from) + offset, bytes,
                                      cudaMemcpyDeviceToDevice, call.stream),
                      kUpdate);
    };
    PLAIT_RETURN_IF_ERROR(copy(t.param, t.newParam));
    if (f.firstMoment)
      PLAIT_RETURN_IF_ERROR(copy(t.m, t.newM));
  }
  Status status;
  adafactor::forShardPieces(
      *l.lengths, *l.factors, l.offset, l.numel,
      [&](size_t k, const adafactor::Segment &s, int moment, int64_t lo, int64_t hi) {
        if (!status.ok())
          return;
        setMoments(call, s, moment, first, false, t);
        status = launched(launchAdafactorShardApply(dtype, pieceOf(l, k, s, lo, hi), t, f,
                                                    static_cast<double *>(work), call.stream),
                          kUpdate);
      });
  PLAIT_RETURN_IF_ERROR(status);
  // Every segment's new second moments, after the pieces that read the old ones.
  adafactor::forEachSegment(
      *l.lengths, *l.factors, [&](size_t k, const adafactor::Segment &s, int moment) {
        if (!status.ok())
          return;
        setMoments(call, s, moment, first, true, t);
        AdafactorPiece whole = pieceOf(l, k, s, s.start - l.offset, s.start - l.offset + s.length);
        status = launched(launchAdafactorShardMoments(dtype, whole, t, f, call.stream), kUpdate);
      });
  return status;
}

void registerCudaAdafactorShardKernels() {
  registerCudaKernel(kStats, &statsKernel);
  registerCudaKernel(kNorms, &normsKernel);
}

} // namespace plait::rt
