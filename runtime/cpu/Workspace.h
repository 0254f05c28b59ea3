// How much scratch memory (workspace) each CPU kernel takes for one call, as a pure function
// of its operand types and attributes. The compiler declares it in the plan (per instruction
// and per rank), the loader recomputes and checks it, and the kernels take exactly these
// chunks from KernelCall::workspace. MLIR-free and runtime-free: it links on its own
// (PlaitKernelWorkspace) into the plan writer.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt {

/// The query rows an attention / attention_grad kernel scores at once: its workspace holds
/// this many rows of scores (and of their gradients), never a whole [S, T] matrix.
inline constexpr int64_t kAttentionRowBlock = 64;

/// The query rows an attention kernel's workspace holds: kAttentionRowBlock, or fewer for
/// short sequences, but room for 4 whole heads of them, so that heads split across threads
/// (AttentionKernels.cpp) still score a whole head per block.
inline int64_t attentionWorkspaceRows(int64_t queries) {
  return queries < kAttentionRowBlock / 4 ? 4 * queries : kAttentionRowBlock;
}

/// Accumulator copies a fused kernel keeps for a result it sums over outer dimensions (a bias
/// gradient), one per chunk when its tiles are split across threads (FusedKernels.cpp): each
/// chunk sums its rows into its own copy, and the copies are added in chunk order after.
/// kFusedSumSlots copies when the iteration shape has at least kFusedSumSplitElements
/// elements (two of Parallel.h's kElementGrain) and the result at most kFusedSumSplitMax;
/// otherwise one, and the kernel's walk stays on one thread.
inline constexpr int64_t kFusedSumSlots = 4;
inline constexpr int64_t kFusedSumSplitElements = 2 * 16384;
inline constexpr int64_t kFusedSumSplitMax = 65536;
inline int64_t fusedSumSlots(int64_t iterationNumel, int64_t resultNumel) {
  return iterationNumel >= kFusedSumSplitElements && resultNumel <= kFusedSumSplitMax
             ? kFusedSumSlots
             : 1;
}

/// Column matrices conv2d and its adjoints keep (ConvSupport.h forEachConvUnit,
/// GradKernels.cpp convGradWeight): one per chunk when their units (conv2d, conv2d_grad_input:
/// (image, group) pairs; conv2d_grad_weight: images) of `unitWork` multiply-adds each split
/// across threads, each chunk building and multiplying its own. As many as the units make
/// chunks of Parallel.h's kMultiplyAddGrain, at most kConvColumnSlots; 1 (no split) below two.
inline constexpr int64_t kConvColumnSlots = 4;
inline int64_t convColumnSlots(int64_t units, int64_t unitWork) {
  const int64_t grain = cpu::grainFor(cpu::kMultiplyAddGrain, unitWork);
  const int64_t chunks = units / grain;
  return chunks < 2 ? 1 : (chunks < kConvColumnSlots ? chunks : kConvColumnSlots);
}

/// Argmax planes max_pool2d_grad keeps (GradKernels.cpp), one per chunk when its planes split
/// across threads: kMaxPoolGradSlots (at most one per plane) when its planes of
/// `planeElements` (input plane + gradient plane) hold kFusedSumSplitElements or more in all;
/// otherwise one, and its planes stay on one thread.
inline constexpr int64_t kMaxPoolGradSlots = 4;
inline int64_t maxPoolGradSlots(int64_t planes, int64_t planeElements) {
  int64_t elements = 0;
  bool large = __builtin_mul_overflow(planes, planeElements, &elements) ||
               elements >= kFusedSumSplitElements;
  return planes >= 2 && large ? (planes < kMaxPoolGradSlots ? planes : kMaxPoolGradSlots) : 1;
}

/// Chunks of rows a norm gradient (layer_norm_grad, rms_norm_grad; NormalizationKernels.cpp)
/// splits into, each summing its rows' parameter gradients into its own double copy of n
/// elements; the copies are added in chunk order after, so the sums do not depend on the
/// threads. One chunk per kFusedSumSplitElements elements of x, at most kNormGradSlots and
/// at most one per row.
/// softmax_cross_entropy_grad of bf16 or f16 [N, C] logits without class weights, its result
/// of the logits' dtype and its incoming gradient of theirs or f32 (plait-fuse-loss-cast's
/// form), runs on the half-precision rows (LossKernels.cpp): each of lossRowSlots slots of C
/// floats of workspace takes a row widened, its f32 gradient row, and rounds it into the
/// result. Other half-precision calls are staged through f32 copies (runStagedInF32).
inline bool halfLossGradRows(DType input, DType grad, DType out, size_t rank, size_t operands) {
  bool half = input == DType::BF16 || input == DType::F16;
  return half && out == input && (grad == input || grad == DType::F32) && rank == 2 &&
         operands == 3;
}
/// softmax_cross_entropy of bf16 or f16 [N, C] logits without class weights with an f32
/// result (plait-fuse-loss-cast's form of the loss of their cast to f32) runs on the rows
/// the same way: each row widened into a slot, its loss computed as for f32 logits.
inline bool halfLossRows(DType input, DType out, size_t rank, size_t operands) {
  return (input == DType::BF16 || input == DType::F16) && out == DType::F32 && rank == 2 &&
         operands == 2;
}
inline constexpr int64_t kLossRowSlots = 8;
inline int64_t lossRowSlots(int64_t rows) {
  return rows < 1 ? 1 : rows < kLossRowSlots ? rows : kLossRowSlots;
}

inline constexpr int64_t kNormGradSlots = 16;
inline int64_t normGradSlots(int64_t rows, int64_t n) {
  int64_t elements = 0;
  int64_t slots = __builtin_mul_overflow(rows, n, &elements)
                      ? kNormGradSlots
                      : elements / kFusedSumSplitElements;
  int64_t most = rows < kNormGradSlots ? rows : kNormGradSlots;
  slots = slots < most ? slots : most;
  return slots < 1 ? 1 : slots;
}

/// The longest head dimension the CUDA attention kernels take (kernels/Launch.h
/// kAttentionMaxHeadDim, checked equal in CudaAttentionKernels.cpp): plait-fuse-attention
/// leaves longer heads decomposed for --device cuda.
inline constexpr int64_t kCudaAttentionMaxHeadDim = 256;

/// Workspace chunks start at multiples of this (the workspace base is aligned to it too).
inline constexpr uint64_t kWorkspaceAlignment = 64;

/// The bytes a chunk of `bytes` occupies: rounded up to kWorkspaceAlignment, saturating.
inline uint64_t workspaceChunkBytes(uint64_t bytes) {
  uint64_t rem = bytes % kWorkspaceAlignment;
  if (rem == 0)
    return bytes;
  uint64_t pad = kWorkspaceAlignment - rem;
  return bytes > UINT64_MAX - pad ? UINT64_MAX : bytes + pad;
}

/// The element type and shape of one kernel operand, as the plan declares it.
struct OperandType {
  DType dtype = DType::F32;
  const std::vector<int64_t> *shape = nullptr; // never null
};

/// A kernel's attributes for kernelWorkspaceBytes: given, or decoded on first use. Few
/// kernels' workspace depends on attributes, so the compiler, which sizes every instruction
/// of every candidate plan, decodes only theirs.
class LazyAttrs {
public:
  LazyAttrs(const Attrs &attrs) : attrs_(&attrs) {} // NOLINT: implicit, for callers with Attrs
  explicit LazyAttrs(std::function<void(Attrs &)> decode) : decode_(std::move(decode)) {}
  const Attrs &operator()() const {
    if (!attrs_) {
      decode_(decoded_);
      attrs_ = &decoded_;
    }
    return *attrs_;
  }

private:
  mutable const Attrs *attrs_ = nullptr;
  mutable Attrs decoded_;
  std::function<void(Attrs &)> decode_;
};

/// The workspace bytes kernel `kernel` takes for one call on operands of these types (0 for
/// kernels that need none, for collectives and for unknown kernels). Saturates at UINT64_MAX
/// instead of wrapping, so a crafted plan cannot make a huge need look small. Operands that
/// the kernel would reject (wrong count or rank) need 0: the kernel fails before taking any.
uint64_t kernelWorkspaceBytes(std::string_view kernel, const std::vector<OperandType> &inputs,
                              const std::vector<OperandType> &outputs, const LazyAttrs &attrs);

} // namespace plait::rt
