// The device side of the CUDA kernels, as plain launch functions: what runtime/cuda/kernels/
// *.cu define and the host kernels (runtime/cuda/Cuda*Kernels.cpp) call. Only PODs cross this
// line (no Status, no fmt, no std::vector), so nvcc compiles nothing of the runtime's host code.
// Every function enqueues on `stream` and returns cudaGetLastError() of its launches.
//
// Element types use the numbering of plait::rt::DType (runtime/Tensor.h). 16-bit floats are
// computed in f32 and rounded once on the store, as the CPU kernels stage them through f32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "codegen/schema/Determinant.h"
#include "runtime/AdafactorSettings.h"
#include "runtime/OptimizerSchedule.h"

namespace plait::rt::cuda {

/// runtime/Tensor.h's DType numbering. The small data integers (kI8..kU64) reach only the
/// movement kernels and cast.
enum DTypeCode : int {
  kF32 = 0, kF64 = 1, kBF16 = 2, kF16 = 3, kI64 = 4, kI32 = 5, kI1 = 6,
  kI8 = 7, kU8 = 8, kI16 = 9, kU16 = 10, kU32 = 11, kU64 = 12
};

/// The most dimensions a geometry holds (the loader's kMaxRank).
constexpr int kMaxDims = 16;

/// A dense row-major result of `shape` (merged as runtime/cpu/Broadcast.h merges it) and, per
/// operand, the element stride of each dimension (0 along broadcast dimensions).
struct StridedGeometry {
  int32_t rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[3][kMaxDims] = {};
};

//===--- elementwise (Elementwise.cu) ---------------------------------------------------===//

enum class UnaryOp : int {
  Exp, Log, Sqrt, Rsqrt, Reciprocal, Erf, Tanh, Sin, Cos, Sigmoid, Silu, Softplus, Floor,
  Ceil, Round, GeluErf, GeluTanh, LeakyRelu, Elu, HardSigmoid, // float ops
  Neg, Abs, Relu, Sign, Clamp,                                 // numeric ops (ints too)
  Not                                                          // i1 only
};
/// Attributes of the unary ops that have some: alpha/beta (leaky_relu, elu, hard_sigmoid),
/// clamp's bounds (already the dtype's extremes where absent; integers pre-rounded).
struct UnaryParams {
  double alpha = 0, beta = 0;
  double lo = 0, hi = 0;
};
cudaError_t launchUnary(UnaryOp op, int dtype, const void *x, void *y, int64_t n,
                        const UnaryParams &params, cudaStream_t stream);

enum class BinaryOp : int {
  Add, Sub, Mul, Div, Mod, Pow, Max, Min,           // numeric, result of the operand dtype
  Equal, Less, LessEqual, Greater, GreaterEqual,    // compare, i1 result (Equal: i1 operands too)
  And, Or, Xor                                      // i1 operands and result
};
/// out = op(a, b) with numpy broadcasting: `g` from planBroadcast<2> of the output's shape.
cudaError_t launchBinary(BinaryOp op, int dtype, const void *a, const void *b, void *out,
                         const StridedGeometry &g, int64_t n, cudaStream_t stream);
/// out = a << b (left) or a >> b, unsigned integers (kU8..kU64) only, a shift by the width or
/// more giving 0; numpy broadcasting as launchBinary's.
cudaError_t launchShift(bool left, int dtype, const void *a, const void *b, void *out,
                        const StridedGeometry &g, int64_t n, cudaStream_t stream);
/// out = cond ? x : y (cond i1), whole elements of `elementBytes`; `g` from planBroadcast<3>.
cudaError_t launchWhere(int elementBytes, const void *cond, const void *x, const void *y,
                        void *out, const StridedGeometry &g, int64_t n, cudaStream_t stream);
/// y = dropout mask (0 or 1 / (1 - ratio), codegen/schema/DropoutMask.h's draw) of float dtype
/// `dtype`, keyed by (seed, stream, *step, rank); `step` is a device pointer to one f32.
cudaError_t launchDropoutMask(int dtype, const float *step, void *y, int64_t n, uint64_t seed,
                              uint64_t stream, uint64_t rank, double ratio,
                              cudaStream_t cudaStream);
/// y = plait.random's draw (codegen/schema/RandomDraw.h) of float dtype `dtype`: uniform in
/// [a, b), or normal with mean a and scale b; keyed as launchDropoutMask's.
cudaError_t launchRandom(int dtype, const float *step, void *y, int64_t n, uint64_t seed,
                         uint64_t stream, uint64_t rank, bool normal, double a, double b,
                         cudaStream_t cudaStream);
/// y = x converted from dtype `from` to `to` (runtime/cpu/CastKernels.cpp's rules).
cudaError_t launchCast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t stream);
/// One cast of grouped_cast: y = x converted, n elements.
struct CastTensor {
  const void *x = nullptr;
  void *y = nullptr;
  int64_t n = 0;
};
/// The casts of `count` tensors from dtype `from` to `to` (as launchCast converts), in one
/// launch per kMaxCastTensors (their pointers travel in the kernel's parameters), each block a
/// chunk of one tensor. Float dtypes only.
constexpr int kMaxCastTensors = 96;
cudaError_t launchGroupedCast(int from, int to, const CastTensor *tensors, int64_t count,
                              cudaStream_t stream);
/// y[i] = x[offset(i)] for the dense result of `g` (operand 0's strides, in elements), as
/// opaque elements of `elementBytes`: transpose, broadcast_to, slice, gemm's bias.
cudaError_t launchStridedCopy(int elementBytes, const void *x, void *y, const StridedGeometry &g,
                              int64_t n, cudaStream_t stream);
/// Constant padding: y (shape `outShape`) holds x (shape `inShape`) at offset `padBegin` per
/// dimension, and `fillBits` (the fill value stored in y's dtype, little-endian) elsewhere.
struct PadGeometry {
  int32_t rank = 0;
  int64_t outShape[kMaxDims] = {}, inShape[kMaxDims] = {}, padBegin[kMaxDims] = {};
};
cudaError_t launchPad(int elementBytes, const void *x, void *y, const PadGeometry &g,
                      uint64_t fillBits, int64_t n, cudaStream_t stream);
/// trilu over `matrices` trailing [rows, cols] matrices: keeps j - i >= k (upper) or
/// j - i <= k (lower), zero elsewhere.
cudaError_t launchTrilu(int elementBytes, const void *x, void *y, int64_t matrices, int64_t rows,
                        int64_t cols, bool upper, int64_t k, cudaStream_t stream);
/// x[i] /= divisor in x's own precision: a collective's mean (Executor::divideInPlace).
cudaError_t launchDivideInPlace(int dtype, void *x, int64_t n, float divisor,
                                cudaStream_t stream);

//===--- GEMM fallback (Gemm.cu) ----------------------------------------------------------===//

/// Row-major C = alpha op(A) op(B) + beta C for `batch` GEMMs at element strides, one thread per
/// result element accumulating in double: what the CUDA matmul runs when cuBLASLt offers no
/// algorithm for a layout (e.g. operands aligned to less than 16 bytes), or when
/// PLAIT_CUDA_GEMM=fallback asks for it. Slow, simple, and independent of cuBLASLt.
struct GemmGeometry {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
};
cudaError_t launchGemmFallback(int dtype, const GemmGeometry &g, const void *a, const void *b,
                               void *c, double alpha, double beta, cudaStream_t stream);

//===--- reductions, normalisation, losses (Reduce.cu) ----------------------------------===//

enum class ReduceOp : int { Sum, Mean, Max, Min, Prod };
/// Output element o reduces the input elements kept(o) + reduced(r) for r over the reduced
/// index space: kept dims (row-major over the output) and reduced dims, with input strides.
struct ReduceGeometry {
  int32_t keptRank = 0, reducedRank = 0;
  int64_t keptShape[kMaxDims] = {}, keptStride[kMaxDims] = {};
  int64_t reducedShape[kMaxDims] = {}, reducedStride[kMaxDims] = {};
  int64_t outCount = 0, reducedCount = 0;
};
/// A thread, warp or block per output element (reduceShapeFor, LaunchGeometry.h), reducing
/// in double for floats, wrapping long long for ints.
cudaError_t launchReduce(ReduceOp op, int dtype, const void *x, void *y,
                         const ReduceGeometry &g, cudaStream_t stream);
/// softmax / log_softmax along an axis of [outer, n, inner]: a warp per row where
/// softmaxByWarps (LaunchGeometry.h), else a block per (outer, inner) row.
cudaError_t launchSoftmax(bool log, int dtype, const void *x, void *y, int64_t outer,
                          int64_t n, int64_t inner, cudaStream_t stream);
/// layer_norm (rms false: (x - mean) * rstd * scale + bias, two-pass variance) or rms_norm
/// (x * rstd * scale) over rows of n elements; `bias` may be null. With `residual` (and `sum`;
/// both null otherwise): add_layer_norm / add_rms_norm, sum = x + residual normalised.
cudaError_t launchNorm(bool rms, int dtype, const void *x, const void *residual,
                       const void *scale, const void *bias, void *y, void *sum, int64_t rows,
                       int64_t n, double eps, cudaStream_t stream);

/// Blocks of a norm gradient's first phase, and the double rows of workspace it sums into
/// (per parameter gradient): a block per row up to kNormGradBlocks, a fixed function of the
/// shape so the sums do not depend on the device.
inline constexpr int64_t kNormGradBlocks = 256;
inline int64_t normGradBlocks(int64_t rows) {
  return rows < 1 ? 1 : rows < kNormGradBlocks ? rows : kNormGradBlocks;
}
/// layer_norm_grad (rms false; dbias may be null) or rms_norm_grad (dbias null) over rows of
/// n elements: dx, then dscale (and dbias) summed over the rows through `partial`
/// (normGradBlocks(rows) x params x n doubles).
cudaError_t launchNormGrad(bool rms, int dtype, const void *x, const void *scale, const void *dy,
                           void *dx, void *dscale, void *dbias, double *partial, int64_t rows,
                           int64_t n, double eps, cudaStream_t stream);

/// batch_norm (x, scale, bias [, stats]) -> (y, mean, var) and batch_norm_grad (x, scale,
/// mean, var, dy [, sums]) -> (dx, dscale, dbias) over x as [batch, channels, spatial]: a
/// block per channel. `stats` (or null): every one of `ranks` ranks' [mean(C), var(C)] in
/// the compute type (f32 for bf16/f16), combined in place of x's own statistics; `sums` (or
/// null): the rank-mean of every rank's batch_norm_grad_sums, which dx reads in place of this
/// rank's (dscale and dbias stay this rank's).
cudaError_t launchBatchNorm(int dtype, const void *x, const void *scale, const void *bias,
                            const void *stats, int64_t ranks, void *y, void *mean, void *var,
                            int64_t batch, int64_t channels, int64_t spatial, double eps,
                            cudaStream_t stream);
cudaError_t launchBatchNormGrad(int dtype, const void *x, const void *scale, const void *mean,
                                const void *var, const void *dy, const void *sums, void *dx,
                                void *dscale, void *dbias, int64_t batch, int64_t channels,
                                int64_t spatial, double eps, cudaStream_t stream);
/// A SyncBatchNorm's batch_norm_stats (x) -> stats [mean(C), var(C)] (batch_norm's own
/// statistics of x) and batch_norm_grad_sums (x, mean, var, dy) -> sums [sum(dy) (C),
/// sum(dy * xhat) (C)] (batch_norm_grad's sums with the given statistics), both vectors of
/// the compute type: a block per channel.
cudaError_t launchBatchNormStats(int dtype, const void *x, void *stats, int64_t batch,
                                 int64_t channels, int64_t spatial, cudaStream_t stream);
cudaError_t launchBatchNormGradSums(int dtype, const void *x, const void *mean, const void *var,
                                    const void *dy, void *sums, int64_t batch, int64_t channels,
                                    int64_t spatial, double eps, cudaStream_t stream);

/// argmax / argmin along the middle axis of [outer, n, inner] into i64 (the first extreme;
/// NaN counts as the extreme; select_last_index takes the last).
cudaError_t launchArgExtreme(bool max, bool selectLast, int dtype, const void *x, int64_t *out,
                             int64_t outer, int64_t n, int64_t inner, cudaStream_t stream);

/// det (`cofactors` false: y [batch]) or cofactors (y [batch, n, n]) of the `batch` n x n
/// matrices of float `x`, one thread per matrix in f64 (codegen/schema/Determinant.h), with
/// `workspace` of detWorkspaceDoubles doubles.
cudaError_t launchDet(bool cofactors, int dtype, const void *x, void *y, int64_t batch, int64_t n,
                      double *workspace, cudaStream_t stream);
/// The doubles of workspace launchDet takes: a matrix and its pivots per matrix (det), or
/// Determinant.h's scratch and the f64 cofactors per matrix.
inline int64_t detWorkspaceDoubles(bool cofactors, int64_t batch, int64_t n) {
  return batch * (cofactors ? linalg::cofactorScratch(n) + n * n : n * n + n);
}

/// top_k of rows of n elements (n <= kTopKThreadRow: a thread per row; longer: a block per
/// row): the i64 indices of each row's k first elements, largest (smallest) first, ties to
/// the lower index, NaN larger than every number (TopKOp).
constexpr int64_t kTopKThreadRow = 64;
cudaError_t launchTopK(bool largest, int dtype, const void *x, int64_t *out, int64_t rows,
                       int64_t n, int64_t k, cudaStream_t stream);

/// Input [N, C, D] (D = spatial), targets [N, D].
struct LossGeometry {
  int64_t batch = 0, classes = 0, spatial = 1;
  int reduction = 0; // 0 mean, 1 sum, 2 none (runtime/cpu/LossSupport.h's Reduction)
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
  double smoothing = 0; // softmax_cross_entropy's label_smoothing (LossShape::smoothing)
};
/// Doubles of workspace a loss or loss gradient needs.
inline int64_t lossWorkspaceDoubles(const LossGeometry &g) { return 2 * g.batch * g.spatial + 1; }
/// softmax_cross_entropy (fromLogits) or nll_loss. `weight` (of `weightDtype`: the input's,
/// or f32 for half-precision input) may be null; out-of-range targets write `errorTag` to
/// `deviceError` and count as ignored.
/// The loss is of the input's `dtype`, or `outDtype` f32 for half-precision input.
cudaError_t launchLoss(bool fromLogits, int dtype, int targetDtype, int outDtype,
                       const void *input, const void *target, const void *weight,
                       int weightDtype, void *out, const LossGeometry &g, double *workspace,
                       int *deviceError, int errorTag, cudaStream_t stream);
/// The gradient: of the input's `dtype`, from the loss's gradient `grad` of `gradDtype` (the
/// input's, or f32 for a half-precision input: plait-fuse-loss-cast's form).
cudaError_t launchLossGrad(bool fromLogits, int dtype, int targetDtype, int gradDtype,
                           const void *input, const void *target, const void *grad,
                           const void *weight, int weightDtype, void *out,
                           const LossGeometry &g, double *workspace, int *deviceError,
                           int errorTag, cudaStream_t stream);

//===--- indexing (Indexing.cu) ----------------------------------------------------------===//

/// out[o, q, :] = data[o, indices[q], :]; indices may be negative (from the end).
cudaError_t launchGather(int elementBytes, int indexDtype, const void *data, const void *indices,
                         void *out, int64_t outer, int64_t size, int64_t inner, int64_t count,
                         int *deviceError, int errorTag, cudaStream_t stream);
/// out = 0; out[o, indices[q], :] += grad[o, q, :] (atomic adds into f32 `accumulator`, which
/// is `out` itself for f32 results, else workspace of outer * size * inner floats).
cudaError_t launchGatherGrad(int dtype, int indexDtype, const void *grad, const void *indices,
                             void *out, float *accumulator, int64_t outer, int64_t size,
                             int64_t inner, int64_t count, int *deviceError, int errorTag,
                             cudaStream_t stream);

//===--- optimizers (Optimizer.cu) -------------------------------------------------------===//

/// The scalar factors as runtime/cpu/OptimizerKernels.cpp computes them in double.
struct SgdFactors {
  double lr = 0, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false, first = false;
  MomentumCycle cycle; // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct AdamWFactors {
  double decay = 1, beta1 = 0.9, beta2 = 0.999, bc2Sqrt = 1, negStepSize = 0, eps = 1e-8;
  double weightDecay = 0.01; // decay's input (math::adamwStepFactors)
  double l2 = 0;             // torch.optim.Adam's weight_decay, added to the gradient
  bool amsgrad = false;      // the denominator from max_exp_avg_sq, the largest exp_avg_sq seen
  MomentumCycle cycle;       // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct AdagradFactors {
  double negClr = 0;  // -lr / (1 + (step - 1) * lrDecay) (math::adagradStepFactors)
  double lrDecay = 0; // negClr's input
  double weightDecay = 0, eps = 1e-10;
  double initialSum = 0; // initial_accumulator_value, read in place of the sum on step 1
  bool first = false;    // step 1 (math::adagradStepFactors)
};
struct RMSpropFactors {
  double negLr = 0; // -lr (math::rmspropStepFactors)
  double alpha = 0.99, eps = 1e-8, weightDecay = 0, momentum = 0;
  bool centered = false;
  MomentumCycle cycle; // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct LionFactors {
  double decay = 1, negLr = 0; // 1 - lr * weightDecay and -lr (math::lionStepFactors)
  double beta1 = 0.9, beta2 = 0.99, weightDecay = 0;
  MomentumCycle cycle; // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct AsgdFactors {
  // 1 - lambd * eta, -eta and mu, from the previous step's lr and the step number
  // (math::asgdStepFactors)
  double decay = 1, negEta = 0, mu = 1;
  double lambd = 1e-4, alpha = 0.75, t0 = 1e6, weightDecay = 0;
};
struct AdamaxFactors {
  double negClr = 0; // -lr / (1 - beta1^step) (math::adamaxStepFactors)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  MomentumCycle cycle; // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct NAdamFactors {
  // 1 - beta2^step, -lr (1 - mu_t) / (1 - mu_product), -lr mu_{t+1} / (1 - mu_product_next)
  // (math::nadamStepFactors)
  double bc2 = 1, gradStep = 0, avgStep = 0;
  double decay = 1; // 1 - lr * weightDecay when decoupled, else 1 (math::nadamStepFactors)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0, momentumDecay = 4e-3;
  bool decoupled = false; // PyTorch 2's decoupled_weight_decay: the params decayed
  MomentumCycle cycle;    // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct RAdamFactors {
  // 1 - beta1^step, lr, sqrt(1 - beta2^step), the rectification and whether it applies
  // (math::radamStepFactors)
  double bc1 = 1, lr = 0, sqrtBc2 = 1, rect = 0;
  bool rectified = false;
  double decay = 1; // 1 - lr * weightDecay when decoupled, else 1 (math::radamStepFactors)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool decoupled = false; // PyTorch 2's decoupled_weight_decay: the params decayed
  MomentumCycle cycle;    // momentum_cycle: the momentum (beta1) by step, kind None for none
};
struct AdadeltaFactors {
  double negLr = 0; // -lr (math::adadeltaStepFactors)
  double rho = 0.9, eps = 1e-6, weightDecay = 0;
};
struct RpropFactors {
  double lr = 0;      // step 1's step size (math::rpropStepFactors)
  bool first = false; // step 1: the step size is read as lr
  double etaminus = 0.5, etaplus = 1.2, stepSizeMin = 1e-6, stepSizeMax = 50;
};
struct LambFactors {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weightDecay = 0.01;
  bool adapt = true;      // the trust ratio applies: weight_decay != 0 or always_adapt
  bool trustClip = false; // the ratio at most 1
  // 1 - beta1^step, sqrt(1 - beta2^step) and -lr (math::lambStepFactors)
  double bc1 = 1, sqrtBc2 = 1, negLr = 0;
  MomentumCycle cycle; // momentum_cycle: the momentum (beta1) by step, kind None for none
};

/// One tensor of an optimizer update: its element count, the pointers the update reads and
/// writes, and its step's hyper-parameters in device memory. sgd_update: in = {param, grad,
/// momentum buffer or null}, out = {new param, new buffer or null}; adamw_update: in =
/// {param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq}, out = {new param, new exp_avg, new
/// exp_avg_sq, new max_exp_avg_sq}, max_exp_avg_sq null without amsgrad;
/// adagrad_update: in = {param, grad, sum}, out = {new param, new sum}; rmsprop_update: in =
/// {param, grad, square_avg, grad_avg, momentum buffer}, out = {new param, new square_avg,
/// new grad_avg, new buffer}, grad_avg null unless centered and the buffer null without
/// momentum; lion_update: in = {param, grad, exp_avg}, out = {new param, new exp_avg};
/// asgd_update: in = {param, grad, ax}, out = {new param, new ax};
/// adamax_update, nadam_update, radam_update, adadelta_update, rprop_update: in = {param,
/// grad, state 0,
/// state 1}, out = {new param, new state 0, new state 1}; lamb_update: in = {param, grad,
/// exp_avg, exp_avg_sq, ratio}, `ratio` a const double * to the trust ratio of the tensor (or
/// of its segment; null: 1), out = {new param, new exp_avg, new exp_avg_sq}. Any output may
/// alias the input it replaces.
struct UpdateTensor {
  const void *in[5] = {};
  void *out[4] = {};
  int64_t n = 0;
  const double *lr = nullptr; // f64, as plait-compile writes the lr
  const float *step = nullptr;
};

/// The updates of `count` tensors, sgd_update, adamw_update, adagrad_update, rmsprop_update,
/// lion_update, asgd_update, adamax_update, nadam_update, radam_update, adadelta_update,
/// rprop_update or
/// lamb_update (its
/// ratios already computed: launchLambNorms, launchLambRatios) as the type of
/// `f` says, every param and state of `dtype` and every gradient of
/// `gradDtype`: `dtype`, or bf16 / f16 widened exactly (grouped_update). One launch per
/// kMaxUpdateTensors tensors (their pointers travel in the kernel's parameters, as PyTorch's
/// multi-tensor apply passes them), each block a chunk of one tensor. The kernel reads each
/// tensor's lr and step and computes the factors that depend on them (f.lr and f.first for
/// SGD; decay, negStepSize and bc2Sqrt for AdamW; negClr for Adagrad; negLr for RMSprop; ...:
/// the math::*StepFactors), so a step replayed as a CUDA graph uses that step's values.
constexpr int kMaxUpdateTensors = 36;
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const SgdFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdamWFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdagradFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RMSpropFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const LionFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdamaxFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const NAdamFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RAdamFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AdadeltaFactors &f, double lrScale,
                          cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const RpropFactors &f, double lrScale, cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const AsgdFactors &f, double lrScale, cudaStream_t stream);
cudaError_t launchUpdates(int dtype, int gradDtype, const UpdateTensor *tensors, int64_t count,
                          const LambFactors &f, double lrScale, cudaStream_t stream);

/// A range of LAMB elements whose sums of param^2 and u^2 (u the update direction) launchLambNorms
/// takes: elements [0, n) of the operands (a whole tensor, or one segment's part of a shard,
/// the pointers offset to it), its step in device memory, and where the result goes.
struct LambNormsTensor {
  const void *param = nullptr, *grad = nullptr, *expAvg = nullptr, *expAvgSq = nullptr;
  int64_t n = 0;
  const float *step = nullptr;
  void *result = nullptr; // a double (the trust ratio) or two floats (the sums)
};
/// The slots a range of `n` elements is summed in: a block each, over a fixed share of the
/// range, so that the sums do not depend on the grid (or the device).
inline constexpr int64_t kLambSlotElements = 4096, kLambMaxSlots = 2048;
inline int64_t lambNormSlots(int64_t n) {
  const int64_t slots = (n + kLambSlotElements - 1) / kLambSlotElements;
  return slots < 1 ? 1 : slots < kLambMaxSlots ? slots : kLambMaxSlots;
}
/// Per range: the sums of param^2 and u^2 in double, each slot's by a block's tree into
/// `partial` (two doubles per slot of every range, lambNormSlots, in range order), then a
/// block per range adds its slots' in a fixed order; the result is the trust ratio (`ratios`:
/// math::lambTrustRatio, f.trustClip) or the two sums as f32 (lamb_norms). No atomics: the
/// same bits on every run. Params and states of `dtype`, gradients of `gradDtype` (as
/// launchUpdates takes them); each range's step factors read from its step.
cudaError_t launchLambNorms(int dtype, int gradDtype, const LambNormsTensor *tensors,
                            int64_t count, const LambFactors &f, bool ratios, double *partial,
                            cudaStream_t stream);
/// ratios[k] = math::lambTrustRatio of the f32 sums norms[2k], norms[2k + 1] (k < segments):
/// a sharded lamb_update's ratio per segment.
cudaError_t launchLambRatios(const float *norms, int64_t segments, bool trustClip,
                             double *ratios, cudaStream_t stream);
/// One average of launchWeightEmas: out = d * ema + (1 - d) * param over n elements (out may
/// alias ema).
struct EmaTensor {
  const void *param = nullptr, *ema = nullptr;
  void *out = nullptr;
  int64_t n = 0;
};

/// weight_ema: the averages of `count` tensors of float `dtype`, d = weightEmaDecay(schedule,
/// *step) read on the device (a copy of param while 0; each average kept as it is on a step
/// weightEmaUpdates refuses); the products in the param's dtype (through f32 for bf16 and
/// f16), as the CPU kernel computes. One launch per kMaxEmaTensors tensors, each block a
/// chunk of one tensor (as launchUpdates).
constexpr int kMaxEmaTensors = 80;
cudaError_t launchWeightEmas(int dtype, const EmaTensor *tensors, int64_t count, const float *step,
                             const EmaSchedule &schedule, cudaStream_t stream);

//===--- Adafactor (Adafactor.cu) --------------------------------------------------------===//

/// adafactor_update's settings (runtime/cpu/AdafactorSupport.h reads and checks them); the
/// factors of the step (the relative step size, beta2t) are computed on the device from the
/// step's lr and step, as AdafactorStep::setStep does.
struct AdafactorFactors : AdafactorSettings {
  double lrScale = 1;
};
/// One adafactor_update: the param as [batches, rows, cols] (factored) or n elements, its
/// operands (m: exp_avg or null; row and col when factored, else v) and results (each may
/// alias the operand it replaces), and its lr (f64) and step (f32) in device memory.
struct AdafactorTensor {
  const void *param = nullptr, *grad = nullptr, *m = nullptr, *row = nullptr, *col = nullptr,
             *v = nullptr;
  void *newParam = nullptr, *newM = nullptr, *newRow = nullptr, *newCol = nullptr, *newV = nullptr;
  bool factored = false;
  int64_t batches = 1, rows = 1, cols = 1, n = 0;
  const double *lr = nullptr;
  const float *step = nullptr;
};
/// The slots the param's and the update's squares are summed in (a block each, over a fixed
/// share of the elements: sums that do not depend on the grid), as LAMB's norms.
inline int64_t adafactorSlots(int64_t n) { return lambNormSlots(n); }
/// Device workspace of launchAdafactor: two sums per slot, a row mean per batch, and the
/// step size and the update's divisor; for a bf16 or f16 param (`half`) also f32 copies of
/// the new second moment (rows and columns, or exp_avg_sq), which the later passes read
/// unrounded, as the CPU kernel's f32 staging keeps them, and which a last launch rounds
/// into the results.
inline uint64_t adafactorWorkspaceBytes(int64_t n, int64_t batches, int64_t rows, int64_t cols,
                                        bool factored, bool half) {
  uint64_t bytes = uint64_t(2 * adafactorSlots(n) + (factored ? batches : 0) + 2) * sizeof(double);
  if (half)
    bytes += uint64_t(factored ? batches * (rows + cols) : n) * sizeof(float);
  return bytes;
}
/// One Adafactor step of a tensor of float `dtype` (f32, f64, bf16 or f16; the 16-bit ones
/// computed in f32) in five launches (six for the 16-bit ones): the second moment (rows and
/// columns, or elementwise), the rows' means per batch, the slots' sums of param^2 and u^2, a
/// block that adds them in a fixed order into the step size and the update's divisor, the
/// update, and for 16-bit floats the new second moment rounded into its results. `work`:
/// adafactorWorkspaceBytes.
cudaError_t launchAdafactor(int dtype, const AdafactorTensor &t, const AdafactorFactors &f,
                            double *work, cudaStream_t stream);

/// One piece of a sharded Adafactor step (codegen/schema/AdafactorShard.h): segment k's
/// elements [e0, e0 + n), which are this rank's local elements from `local` on; the segment
/// `length` elements of [.., rows, cols] (rows 0: unfactored), its own stats from `stats` on.
/// launchAdafactorShardMoments takes the whole segment (e0 0, n its length).
struct AdafactorPiece {
  int64_t k = 0, e0 = 0, n = 0, local = 0;
  int64_t length = 0, rows = 0, cols = 0, stats = 0;
};
/// A sharded step's operands: this rank's shards (param, grad, exp_avg or null; their new
/// values), the piece's segment's whole second-moment states (row and col, or v; their new
/// values), the stats and norms summed over the group, and the lr (f64) and step (f32) in
/// device memory.
struct AdafactorShardTensors {
  const void *param = nullptr, *grad = nullptr, *m = nullptr;
  void *newParam = nullptr, *newM = nullptr;
  const void *row = nullptr, *col = nullptr, *v = nullptr;
  void *newRow = nullptr, *newCol = nullptr, *newV = nullptr;
  const double *stats = nullptr, *norms = nullptr, *lr = nullptr;
  const float *step = nullptr;
};
/// Device workspace of a sharded launch on a piece of `n` elements over `batches` batches
/// of rows: the batches' row means, then the slots' sums (or the step size and divisor).
inline uint64_t adafactorShardWorkspaceBytes(int64_t n, int64_t batches) {
  return uint64_t(batches + adafactorSlots(n) + 2) * sizeof(double);
}
/// adafactor_stats on a piece: its sum of param^2 into stats[k], and its rows' and columns'
/// sums of g^2 + eps1 (or its elements') into the segment's entries; `stats` zeroed first by
/// the caller, `param` and `grad` this rank's shards.
cudaError_t launchAdafactorStats(int dtype, const AdafactorPiece &p, const void *param,
                                 const void *grad, double eps1, double *stats, double *work,
                                 cudaStream_t stream);
/// adafactor_norms on a piece: its sum of u^2 into norms[k].
cudaError_t launchAdafactorNorms(int dtype, const AdafactorPiece &p, const AdafactorShardTensors &t,
                                 const AdafactorFactors &f, double *norms, double *work,
                                 cudaStream_t stream);
/// adafactor_update with segments on a piece: its step size and divisor, then its elements
/// (reading the old second moments).
cudaError_t launchAdafactorShardApply(int dtype, const AdafactorPiece &p,
                                      const AdafactorShardTensors &t, const AdafactorFactors &f,
                                      double *work, cudaStream_t stream);
/// A segment's new second moments, whole (after every piece's launchAdafactorShardApply).
cudaError_t launchAdafactorShardMoments(int dtype, const AdafactorPiece &segment,
                                        const AdafactorShardTensors &t, const AdafactorFactors &f,
                                        cudaStream_t stream);

//===--- pooling (Pool.cu) ---------------------------------------------------------------===//

struct PoolGeometry {
  int64_t planes = 0, height = 0, width = 0, outHeight = 0, outWidth = 0;
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, padBegin[2] = {0, 0}, padEnd[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool countIncludePad = false;
};
cudaError_t launchMaxPool(int dtype, const void *x, void *y, const PoolGeometry &g,
                          cudaStream_t stream);
cudaError_t launchAvgPool(int dtype, const void *x, void *y, const PoolGeometry &g,
                          cudaStream_t stream);
/// dx = adjoint of the forward pool; `accumulator` as in launchGatherGrad (planes * H * W
/// floats; dx itself for f32).
cudaError_t launchMaxPoolGrad(int dtype, const void *x, const void *dy, void *dx,
                              float *accumulator, const PoolGeometry &g, cudaStream_t stream);
cudaError_t launchAvgPoolGrad(int dtype, const void *dy, void *dx, float *accumulator,
                              const PoolGeometry &g, cudaStream_t stream);

//===--- attention (Attention.cu) ---------------------------------------------------------===//

/// The longest head dimension (D of q and k, E of v) the attention kernels take: each lane of
/// a warp keeps kAttentionMaxHeadDim / 32 accumulators of a row in registers.
constexpr int64_t kAttentionMaxHeadDim = 256;

/// q [batch, queries, heads, qkDim], k [batch, keys, heads, qkDim], v [batch, keys, heads,
/// vDim], out (and dout) [batch, queries, heads, vDim], lse [batch, heads, queries], dense.
/// With `causal`, query i sees the keys j <= i.
struct AttentionGeometry {
  int64_t batch = 0, queries = 0, keys = 0, heads = 0, qkDim = 0, vDim = 0;
  double scale = 1;
  bool causal = false;
};
/// out = softmax(scale * q k^T) v row by row (online softmax, f32 accumulators) and lse, the
/// natural log of each row's sum of exponentials (f32). A block of kThreads takes eight query
/// rows of one (batch, head), a warp each, and walks the keys they see in shared tiles of 32.
/// dtype f32 or bf16 (q, k, v, out).
cudaError_t launchAttention(int dtype, const void *q, const void *k, const void *v, void *out,
                            float *lse, const AttentionGeometry &g, cudaStream_t stream);
/// Floats of workspace launchAttentionGrad takes: each query row's dot(dout, out).
inline int64_t attentionGradWorkspaceFloats(const AttentionGeometry &g) {
  return g.batch * g.heads * g.queries;
}
/// dq, dk and dv of launchAttention, the probabilities recomputed from lse, without atomics:
/// the rows' dot(dout, out) into `delta`, then a key-parallel kernel (dk, dv; a warp per key
/// row over the queries that see it) and a query-parallel one (dq; a warp per query row).
cudaError_t launchAttentionGrad(int dtype, const void *q, const void *k, const void *v,
                                const void *out, const float *lse, const void *dout, void *dq,
                                void *dk, void *dv, float *delta, const AttentionGeometry &g,
                                cudaStream_t stream);

} // namespace plait::rt::cuda
