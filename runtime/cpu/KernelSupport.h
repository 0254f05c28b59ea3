// Helpers shared by the CPU kernels: argument checks, dtype dispatch, half-precision staging.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "runtime/Kernel.h"
#include "runtime/OptimizerSchedule.h"
#include "runtime/cpu/Dims.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {

/// Storage types of the two 16-bit float formats, so that dispatch can tell them apart.
struct Bf16Bits {
  uint16_t bits;
};
struct F16Bits {
  uint16_t bits;
};
/// Storage type of i1: one byte holding 0 or 1.
using BoolByte = uint8_t;

/// Integral element types that take part in arithmetic (i1 does not).
template <typename T>
inline constexpr bool kIsIndexLike = std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t>;

/// Checks the number of inputs (in [minInputs, maxInputs]) and outputs of a call, and that no
/// operand has more than kMaxRank dimensions, so that a malformed plan yields an error
/// instead of an out-of-bounds access.
Status checkArity(const KernelCall &call, std::string_view kernel, size_t minInputs,
                  size_t maxInputs, size_t outputs);

/// Error when an operand of the call has more than kMaxRank dimensions (checkArity does this
/// too; kernels with any number of operands call it themselves).
Status checkOperandRanks(const KernelCall &call, std::string_view kernel);

/// `axis` in [-rank, rank) mapped to [0, rank), or an error naming the kernel.
Status normalizeAxis(std::string_view kernel, int64_t axis, int64_t rank, int64_t &out);

/// Error for an element type the kernel does not implement: "add: unsupported dtype bf16 x i64".
Status unsupportedDtype(std::string_view kernel, DType a);
Status unsupportedDtype(std::string_view kernel, DType a, DType b);

/// Error unless `actual` equals `expected`; `what` names the tensor ("output", "bias").
Status checkShape(std::string_view kernel, std::string_view what, ShapeRef actual,
                  ShapeRef expected);

/// Error unless every tensor of the call has dtype `dtype` (index inputs are checked apart).
Status checkSameDtype(std::string_view kernel, const TensorView &a, const TensorView &b);

/// Error unless `t` (an index tensor: gather indices, loss targets) is i64 or i32;
/// `what` names it ("indices", "target").
Status checkIndexDtype(std::string_view kernel, std::string_view what, const TensorView &t);

/// Element `i` of an i64 or i32 index tensor, as int64.
inline int64_t indexAt(const TensorView &t, int64_t i) {
  return t.dtype == DType::I64 ? t.as<int64_t>()[i] : (int64_t)t.as<int32_t>()[i];
}

/// Reads every index of `indices` into `rows` (indices.numel() entries), mapping negative ones
/// from the end, and rejects any outside [0, size) -- a bad token id must be an error naming
/// it, not a wild access. gather and gather_grad share it so that both read an index the
/// same way.
Status normalizeIndices(std::string_view kernel, const TensorView &indices, int64_t axis,
                        int64_t size, int64_t *rows);

/// A slice's view of its input: the first element's offset and the element strides of the
/// result, from normalised (start, end, step) per dimension (step > 0 needs
/// 0 <= start <= end <= n, step < 0 needs -1 <= end <= start <= n - 1), the result's shape
/// checked. Shared by the CPU and CUDA kernels.
Status sliceView(const Attrs &attrs, const TensorView &x, const TensorView &y, int64_t &offset,
                 Dims &strides);

/// top_k's call checked (one input of rank >= 1, an i64 output of its shape with the last axis
/// k in [0, n]), its geometry returned: rows of n elements, k of each. Shared by the CPU and
/// CUDA kernels.
Status planTopK(const KernelCall &call, int64_t &rows, int64_t &n, int64_t &k);

/// det's or (`cofactors`) cofactors' call checked (one float input [..., n, n], n >= 1; the
/// output of its dtype and of shape [...], or of x's shape): `batch` matrices of n x n.
Status planSquareMatrices(const KernelCall &call, bool cofactors, int64_t &batch, int64_t &n);

/// weight_ema's call checked (N params, their N averages, the step; N results: each param, its
/// average and new average of one float dtype and shape, an f32 scalar step) and its schedule
/// (0 < decay < 1, 0 <= min_decay <= decay, power >= 0, inv_gamma > 0, start >= 0, every >=
/// 1) returned. Shared by the CPU and CUDA kernels.
Status planWeightEma(const KernelCall &call, EmaSchedule &schedule);

/// The optimizer updates (OptimizerKernels.cpp). Each takes param, grad, lr, step and its
/// states (adamw_update: param, grad, exp_avg, exp_avg_sq, lr, step) and gives the new param
/// and the new value of each state.
enum class UpdateKind {
  Sgd,
  AdamW,
  Adagrad,
  RMSprop,
  Lion,
  Adamax,
  NAdam,
  RAdam,
  Adadelta,
  Rprop,
  Asgd,
  Lamb
};

/// The update named `name` (sgd_update, ...), false when it is none of them.
bool updateKindOf(std::string_view name, UpdateKind &kind);

/// How many states an update of `kind` takes with `attrs`: sgd 1 with momentum (else 0),
/// adamw 2 (3 with amsgrad: max_exp_avg_sq, after lr and step), adagrad 1, rmsprop 1 + 1
/// when centered + 1 with momentum, lion and asgd 1, adamax / nadam / radam / adadelta /
/// rprop / lamb 2.
size_t updateStateCount(UpdateKind kind, const Attrs &attrs);

/// grouped_update's layout: the update it repeats, the operands and results each update
/// takes, and how many updates the call holds.
struct GroupedUpdateLayout {
  UpdateKind kind = UpdateKind::Sgd;
  size_t perOperand = 0, perResult = 0, count = 0;
};

/// The layout of a grouped_update call, checked against its attributes (update,
/// operands_per_update, results_per_update) and its operand and result counts, or an error.
/// Shared by the CPU and CUDA kernels.
Status groupedUpdateLayout(const Attrs &attrs, size_t inputs, size_t outputs,
                           GroupedUpdateLayout &out);

/// An optimizer update's operand `t` (`what`: grad, exp_avg, new_param, ...) of its param's
/// dtype and shape. Shared by the CPU and CUDA kernels.
Status checkLikeParam(std::string_view kernel, std::string_view what, const TensorView &param,
                      const TensorView &t);

/// An update's gradient: like its param, or with `halfGrad` (grouped_update) also of the
/// param's shape in bf16 or f16. Shared by the CPU and CUDA kernels.
Status checkUpdateGrad(std::string_view kernel, const TensorView &param, const TensorView &grad,
                       bool halfGrad);

/// The operand of state `k` of an update of `kind`: adamw's exp_avg and exp_avg_sq at 2 and
/// 3, its max_exp_avg_sq at 6; the others' states from 4 (ir/OpKinds.h updateStateOperand).
size_t updateStateOperand(UpdateKind kind, size_t k);

/// One update's tensors, operands `in` and results `out` with `states` states (counted by the
/// caller against the attributes): the gradient (checkUpdateGrad), the new param, and each
/// state and its new value like the param, each named as torch names it (exp_avg, sum,
/// square_avg, ...). Shared by the CPU and CUDA kernels.
Status checkUpdateTensors(std::string_view kernel, UpdateKind kind, const Attrs &attrs,
                          const TensorView *in, const TensorView *out, size_t states,
                          bool halfGrad);

/// A grouped_cast call's operands and results: one result per operand, each pair floats of
/// one shape. Shared by the CPU and CUDA kernels.
Status checkGroupedCast(const std::vector<TensorView> &inputs,
                        const std::vector<TensorView> &outputs);

/// matmul's optional bias (plait-fuse-gemm-epilogue): a float vector [N] of the result's
/// type, N its last dimension, and no result_perm (as the verifier has it). Shared by the CPU
/// and CUDA kernels.
Status checkMatmulBias(const KernelCall &call, const TensorView &bias);

/// An attention / attention_grad call's operands checked (arity, q [B, S, H, D], k [B, T, H, D],
/// v [B, T, H, E] of one float dtype, out and dout [B, S, H, E], lse [B, H, S] f32, the results'
/// shapes, a finite scale > 0) and its sizes. Shared by the CPU and CUDA kernels.
struct AttentionShape {
  int64_t batch = 0, queries = 0, keys = 0, heads = 0, dim = 0, valueDim = 0;
  double scale = 1;
  bool causal = false;
  /// Dropout on the probabilities (the `dropout` attribute; 0: none) and its stream's key
  /// (DropoutMask.h streamKey of seed, stream, the step operand and the rank).
  double dropout = 0;
  uint64_t dropoutKey = 0;
};
Status checkAttentionCall(const KernelCall &call, bool grad, AttentionShape &out);

/// The key of a kernel's per-step draws (dropout_mask, random, attention's dropout):
/// DropoutMask.h's streamKey of the call's `seed` and `stream` attributes, the step (one f32
/// value on the host, checked: a step number) and the call's rank.
Status drawKeyOf(std::string_view kernel, const KernelCall &call, const TensorView &step,
                 uint64_t &key);

/// The calls of the norm kernels (checkNormCall).
enum class NormCall {
  Norm,    // layer_norm (x, scale, bias?) / rms_norm (x, scale) -> y
  AddNorm, // add_layer_norm (x, residual, scale, bias?) / add_rms_norm (x, residual, scale)
           //   -> (y, sum)
  Grad,    // layer_norm_grad (x, scale, dy) -> (dx, dscale, dbias?) / rms_norm_grad
           //   (x, scale, dy) -> (dx, dscale)
};
/// A norm kernel's operands checked: the values of x's shape and dtype (residual, dy, and
/// every result but the parameter gradients), the parameters and their gradients of the
/// normalised shape x.shape[axis:] and x's dtype; `rms`: no bias. Yields the normalised
/// axis. Shared by the CPU and CUDA kernels.
Status checkNormCall(const KernelCall &call, std::string_view kernel, NormCall kind, bool rms,
                     int64_t &axis);

/// The training-mode BatchNorm kernels: batch_norm (x, scale, bias [, stats]) -> (y, mean,
/// var), batch_norm_grad (x, scale, mean, var, dy [, sums]) -> (dx, dscale, dbias), and a
/// SyncBatchNorm's batch_norm_stats (x) -> stats and batch_norm_grad_sums (x, mean, var, dy)
/// -> sums.
enum class BatchNormKind { kForward, kGrad, kStats, kGradSums };
/// Their calls checked: x of rank >= 2 viewed as [N, C, S] (S the product of its axes from
/// 2), dy, y and dx of its shape, the per-channel operands and results [C], all of x's dtype;
/// `stats` [W * 2C] (W >= 1: every rank's [mean(C), var(C)]) and the stats and sums vectors
/// [2C] in batchNormComputeDtype. Shared by the CPU and CUDA kernels.
struct BatchNormShape {
  int64_t batch = 0, channels = 0, spatial = 0;
  int64_t ranks = 0; // batch_norm: the ranks whose statistics `stats` holds (0: none)
  bool sums = false; // batch_norm_grad: reads every rank's mean sums
  int64_t perChannel() const { return batch * spatial; }
};
/// The kernel's name: batch_norm, batch_norm_grad, batch_norm_stats or batch_norm_grad_sums.
constexpr std::string_view batchNormKernelName(BatchNormKind kind) {
  constexpr std::string_view kNames[] = {"batch_norm", "batch_norm_grad", "batch_norm_stats",
                                         "batch_norm_grad_sums"};
  return kNames[size_t(kind)];
}
/// f32 for bf16/f16, else `x` (the type the kernels compute the statistics in).
DType batchNormComputeDtype(DType x);
Status checkBatchNormCall(const KernelCall &call, BatchNormKind kind, BatchNormShape &out);

/// Product of shape[begin, end).
int64_t product(ShapeRef shape, size_t begin, size_t end);

/// Row-major strides (in elements) of `shape`.
Dims contiguousStrides(ShapeRef shape);

/// A kernel call's scratch memory: chunks taken in turn from KernelCall::workspace, each
/// rounded up to kWorkspaceAlignment, exactly as kernelWorkspaceBytes (Workspace.h) counts
/// them. When the workspace is too small, take() fails with a message naming both sizes; on
/// destruction the bytes used are recorded in KernelCall::workspaceUsed.
class Scratch {
public:
  Scratch(const KernelCall &call, std::string_view kernel) : call_(call), kernel_(kernel) {}
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  /// `count` elements of T (uninitialised).
  template <typename T> Status take(int64_t count, T *&out) {
    uint8_t *bytes = nullptr;
    PLAIT_RETURN_IF_ERROR(takeBytes(count, sizeof(T), bytes));
    out = reinterpret_cast<T *>(bytes);
    return Status();
  }

  /// The workspace left after the chunks taken so far, for a nested kernel call; `used` is
  /// what that call reports through KernelCall::workspaceUsed.
  uint8_t *rest() const { return call_.workspace ? call_.workspace + used_ : nullptr; }
  uint64_t restBytes() const { return call_.workspaceBytes - used_; }
  void addNested(uint64_t used) { nested_ = std::max(nested_, used); }

private:
  Status takeBytes(int64_t count, size_t elementSize, uint8_t *&out);

  const KernelCall &call_;
  std::string_view kernel_;
  uint64_t used_ = 0;   // chunks taken
  uint64_t nested_ = 0; // the most a nested call used after them
};

/// Calls `fn(T{})` with T = float or double by dtype; other dtypes are an error.
template <typename Fn>
Status dispatchF32F64(std::string_view kernel, DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(float{});
  case DType::F64:
    return fn(double{});
  default:
    return unsupportedDtype(kernel, t);
  }
}

/// As dispatchF32F64, plus every integer type but i1: int64_t and int32_t, and the data
/// types int8_t, uint8_t, int16_t, uint16_t, uint32_t and uint64_t.
template <typename Fn>
Status dispatchNumeric(std::string_view kernel, DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(float{});
  case DType::F64:
    return fn(double{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  case DType::I8:
    return fn(int8_t{});
  case DType::U8:
    return fn(uint8_t{});
  case DType::I16:
    return fn(int16_t{});
  case DType::U16:
    return fn(uint16_t{});
  case DType::U32:
    return fn(uint32_t{});
  case DType::U64:
    return fn(uint64_t{});
  default:
    return unsupportedDtype(kernel, t);
  }
}

/// Calls `fn(U{})` with an unsigned integer type of the element's size: movement kernels
/// copy elements without looking at them, so one instantiation serves every dtype.
template <typename Fn> Status dispatchBySize(DType t, Fn &&fn) {
  switch (dtypeSize(t)) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

/// Float to integer truncates toward zero. Out-of-range values saturate and NaN becomes 0,
/// where C++ would leave the result undefined (casts, pad's constant, integer GEMM's alpha and
/// beta; the CUDA cast does the same).
template <typename I, typename F> I truncateToInteger(F v) {
  if (std::isnan(v))
    return 0;
  if (v <= F(std::numeric_limits<I>::lowest()))
    return std::numeric_limits<I>::lowest();
  if (v >= F(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return I(v);
}

inline bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// Fills `n` elements of `dtype` at `dst` with `value` converted to that dtype as pad's
/// constant: floats rounded, integers truncated toward zero and saturated (NaN 0), i1
/// value != 0 (MovementKernels.cpp; the CUDA pad stores the same bits).
void fillValue(void *dst, DType dtype, int64_t n, double value);

/// How a kernel reads and writes the elements of a dtype in its compute type `Value`: the
/// numeric types as they are (Plain), and bf16/f16 (Stored: their bits) widened exactly to
/// f32 and rounded back to nearest even, as a cast does. A kernel written over these computes
/// half tensors element by element, without f32 copies of them, with the bits the f32 kernel
/// gives on their widened copies.
template <typename T> struct PlainElements {
  using Stored = T;
  using Value = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
struct Bf16Elements {
  using Stored = uint16_t;
  using Value = float;
  static float load(uint16_t v) { return widenBf16(v); }
  static uint16_t store(float v) { return narrowBf16(v); }
};
struct F16Elements {
  using Stored = uint16_t;
  using Value = float;
  static float load(uint16_t v) { return widenF16(v); }
  static uint16_t store(float v) { return narrowF16(v); }
};

/// dispatchF32F64 (kIntegers false) or dispatchNumeric (true) that also takes bf16 and f16:
/// calls `fn(E{})` with E one of the element readers above.
template <bool kIntegers, typename Fn>
Status dispatchElements(std::string_view kernel, DType t, Fn &&fn) {
  if (t == DType::BF16)
    return fn(Bf16Elements{});
  if (t == DType::F16)
    return fn(F16Elements{});
  auto plain = [&](auto tag) { return fn(PlainElements<decltype(tag)>{}); };
  if constexpr (kIntegers)
    return dispatchNumeric(kernel, t, plain);
  else
    return dispatchF32F64(kernel, t, plain);
}

/// Runs `f32Kernel` on copies of the call's bf16/f16 tensors widened to f32 and narrows the
/// results back. Half precision on the CPU is a storage format: computing in f32 is what
/// PyTorch does too, and it spares every kernel a 16-bit instantiation. The copies live in
/// the workspace (one chunk per half tensor, inputs then outputs, then the f32 kernel's own).
Status runStagedInF32(const KernelCall &call, KernelFn f32Kernel);

/// runStagedInF32 a few batch entries at a time, for kernels whose operands are [batch, ...]
/// and whose batch entries are independent (attention and its gradient, the row-wise norms
/// and softmaxes, the convolutions' forward and input gradient, the pools):
/// batchStageEntries entries (Workspace.h, sized by the largest entry of the half operands it
/// slices) of each half tensor widened into the workspace (one chunk per half tensor, inputs
/// then outputs, at least one element each), the f32 kernel run on them with every operand's
/// view narrowed to those entries, and the results narrowed back; then the next entries. An
/// empty batch runs nothing. The inputs whose bit is set in `wholeInputs` (a norm's scale
/// and bias, a convolution's weight) are not sliced: a half one is widened whole, once, into
/// its chunk in the same order.
Status runStagedInF32Entries(const KernelCall &call, KernelFn f32Kernel,
                             uint64_t wholeInputs = 0);

/// A row-wise kernel's half-precision call along `axis` (Workspace.h rowWiseStaged): staged a
/// few entries of dimension 0 at a time, its lower-rank inputs whole (runStagedInF32Entries),
/// or along dimension 0 whole (runStagedInF32).
Status runStagedInF32Rows(const KernelCall &call, KernelFn f32Kernel, int64_t axis);

/// True when any input or output of the call is bf16 or f16.
bool hasHalfTensor(const KernelCall &call);

/// Converts `n` elements between f32 and a half type.
void widenToF32(const void *src, DType srcType, float *dst, int64_t n);
void narrowFromF32(const float *src, void *dst, DType dstType, int64_t n);
/// n bf16 (f16) elements widened to f32, and n f32 values rounded to bf16 (f16) as
/// floatToBf16 (floatToF16) rounds them, on the calling thread: vectorised loops (widenToF32
/// and narrowFromF32 split them across threads).
void widenBf16Row(const uint16_t *in, float *out, int64_t n);
void narrowBf16Row(const float *in, uint16_t *out, int64_t n);
void widenF16Row(const uint16_t *in, float *out, int64_t n);
void narrowF16Row(const float *in, uint16_t *out, int64_t n);
/// The rows above for either half dtype.
void widenHalfRow(const uint16_t *in, DType dtype, float *out, int64_t n);
void narrowHalfRow(const float *in, DType dtype, uint16_t *out, int64_t n);

} // namespace plait::rt::cpu
