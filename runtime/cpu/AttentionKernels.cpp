// Fused scaled-dot-product attention (plait.attention) and its gradient (attention_grad) on
// [batch, seq, heads, dim] operands. Each head is worked through kAttentionRowBlock query rows
// at a time (fewer when the heads are split across threads: forEachBlock): the rows' scores
// come from one OpenBLAS GEMM reading q and k in place (a head is a strided matrix, row pitch
// heads * dim), are turned into probabilities in the workspace, and meet v in a second GEMM
// that writes the output rows in place. No [S, T] matrix is ever
// stored: the backward recomputes each block's probabilities from the saved log-sum-exp.
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "codegen/schema/DropoutMask.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// One head of one batch entry: where its q, k, v (and out, dout, ...) rows start, and the
/// row pitches of the [B, seq, H, dim] tensors.
struct Head {
  int64_t qOffset, kOffset, vOffset, oOffset, lseOffset; // in elements
  int64_t qPitch, vPitch, oPitch;                        // q and k rows; v rows; out rows
  /// Query row 0's row in the [B, H, S, T] probabilities a dropout mask is drawn over,
  /// counting the entries before a staged slice (`batchOffset`).
  uint64_t maskRow;
};

Head headAt(const AttentionShape &a, int64_t b, int64_t h, int64_t batchOffset) {
  Head head;
  head.maskRow = uint64_t(((batchOffset + b) * a.heads + h) * a.queries);
  head.qOffset = (b * a.queries * a.heads + h) * a.dim;
  head.kOffset = (b * a.keys * a.heads + h) * a.dim;
  head.vOffset = (b * a.keys * a.heads + h) * a.valueDim;
  head.oOffset = (b * a.queries * a.heads + h) * a.valueDim;
  head.lseOffset = (b * a.heads + h) * a.queries;
  head.qPitch = a.heads * a.dim;
  head.vPitch = a.heads * a.valueDim;
  head.oPitch = a.heads * a.valueDim;
  return head;
}

/// The keys any of the query rows [i0, i0 + rows) sees: the block's score columns.
int64_t blockKeys(const AttentionShape &a, int64_t i0, int64_t rows) {
  return a.causal ? std::min(a.keys, i0 + rows) : a.keys;
}

/// Calls fn(slotRow, head, i0, rows, keys) for every block of query rows [i0, i0 + rows) of
/// every head, with the keys the block scores, and returns the first error. The heads are
/// split across the kernels' threads (Parallel.h), each thread a slot of the workspace's
/// `blockRows` rows starting at row `slotRow`: with S slots a block has at most blockRows / S
/// rows (attentionWorkspaceRows leaves room for 4 whole heads of a short sequence). A
/// head is one thread's, its blocks in order, so dk and dv accumulate as on one thread, but
/// over smaller blocks (more threads round their sums differently).
template <typename Fn>
Status forEachBlock(const AttentionShape &a, int64_t batchOffset, int64_t blockRows, Fn &&fn) {
  const int64_t heads = a.batch * a.heads;
  // Heads per chunk: kMultiplyAddGrain or more (a 16-token head is about 1 us), and at most
  // blockRows slots.
  const int64_t headWork = std::max<int64_t>(1, a.queries * a.keys * (a.dim + a.valueDim));
  const int64_t grain = std::max<int64_t>((kMultiplyAddGrain + headWork - 1) / headWork,
                                          (heads + blockRows - 1) / blockRows);
  const int64_t rowsPerSlot = std::min(a.queries, blockRows / parallelChunks(heads, grain));
  std::mutex failedLock;
  Status failed;
  parallelFor(heads, grain, [&](int64_t slot, int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const Head head = headAt(a, bh / a.heads, bh % a.heads, batchOffset);
      for (int64_t i0 = 0; i0 < a.queries; i0 += rowsPerSlot) {
        const int64_t rows = std::min(rowsPerSlot, a.queries - i0);
        Status s = fn(slot * rowsPerSlot, head, i0, rows, blockKeys(a, i0, rows));
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(failedLock);
          if (failed.ok())
            failed = std::move(s);
          return;
        }
      }
    }
  });
  return failed;
}

/// scores[rows, keys] = scale * q[i0, i0 + rows) k[0, keys)^T of one head, by one GEMM.
Status scoreBlock(const AttentionShape &a, const Head &hd, const float *q, const float *k,
                  int64_t i0, int64_t rows, int64_t keys, float *scores) {
  return gemmRowMajor<float>(false, true, rows, keys, a.dim, a.scale,
                             q + hd.qOffset + i0 * hd.qPitch, hd.qPitch, k + hd.kOffset,
                             hd.qPitch, 0.0, scores, keys);
}

// The row loops of a block, cloned for AVX-512 and AVX2 as the other kernels' hot loops are
// (VectorMath.h). Query row r (query i0 + r) sees its first n of the block's `keys`; the
// hidden ones are set to -inf and every loop runs over the whole row, which vectorises (a
// causal row of 16 keys sees 1 to 16: loops over n alone would mostly run their scalar
// tails), and e^-inf is exactly 0 in expApprox, as in the decomposed softmax.

/// Sets the keys row r of a block does not see to -inf.
PLAIT_VECTOR_INLINE void hideKeys(float *row, int64_t r, int64_t keys, int64_t i0, bool causal) {
  if (causal)
    for (int64_t j = std::min(keys, i0 + r + 1); j < keys; ++j)
      row[j] = -std::numeric_limits<float>::infinity();
}

/// Scores to probabilities in place (masked keys 0), each row's log-sum-exp into lse[r].
PLAIT_SIMD_CLONES void softmaxBlock(float *scores, int64_t rows, int64_t keys, int64_t i0,
                                    bool causal, float *lse) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = scores + r * keys;
    hideKeys(row, r, keys, i0, causal);
    const float m = maxFloats(row, keys); // finite: every row sees key 0
    for (int64_t j = 0; j < keys; ++j)
      row[j] = expApprox(row[j] - m);
    const double sum = sumFloats(row, keys);
    const float inverse = float(1.0 / sum);
    for (int64_t j = 0; j < keys; ++j)
      row[j] *= inverse;
    lse[r] = m + float(std::log(sum));
  }
}

/// Scores to the forward's probabilities exp(s - lse[r]) in place (masked keys 0).
PLAIT_SIMD_CLONES void probabilitiesBlock(float *scores, int64_t rows, int64_t keys, int64_t i0,
                                          bool causal, const float *lse) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = scores + r * keys;
    hideKeys(row, r, keys, i0, causal);
    const float shift = lse[r];
    for (int64_t j = 0; j < keys; ++j)
      row[j] = expApprox(row[j] - shift);
  }
}

/// Dropout of a block's probabilities (or of their gradients), `from` into `to` (the same
/// block or another): element (r, j) is kept and times `kept` where DropoutMask.h keeps
/// element (row + r) * T + j of the stream `key`, T the head's keys; else 0. The draws are
/// plait.dropout_mask's over the decomposed [B, H, S, T] probabilities, bit for bit.
void dropBlock(const float *from, float *to, int64_t rows, int64_t keys, int64_t keysTotal,
               uint64_t row, uint64_t key, uint64_t threshold, float kept) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t first = (row + uint64_t(r)) * uint64_t(keysTotal);
    for (int64_t j = 0; j < keys; ++j)
      to[r * keys + j] =
          dropout::keep(key, first + uint64_t(j), threshold) ? from[r * keys + j] * kept : 0.0f;
  }
}

/// dP to dS = P (dP - delta) in place, delta = sum_j P dP over the row, as softmax's backward
/// sums it (not dout . out, equal in exact arithmetic): a query that sees one key then gets
/// exactly 0, not rounding noise that AdamW would amplify into a real update. delta is
/// divided by the row's sum of P, which the recomputed probabilities miss 1 by rounding (the
/// lse's, exp's): each row of dS then sums to 0 as softmax's gradient does, where the
/// missing part would be delta times that rounding (an attention's key weights, whose
/// gradient is such sums, were 4x further from f64 than the decomposed ops' without it).
PLAIT_SIMD_CLONES void scoreGradBlock(const float *probs, float *dprobs, int64_t rows,
                                      int64_t keys) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *p = probs + r * keys;
    float *ds = dprobs + r * keys;
    double delta = 0, total = 0;
    for (int64_t j = 0; j < keys; ++j) {
      delta += double(p[j]) * double(ds[j]);
      total += double(p[j]);
    }
    const float d = float(delta / total); // total is about 1: never 0
    for (int64_t j = 0; j < keys; ++j)
      ds[j] = p[j] * (ds[j] - d);
  }
}

/// A call's dropout on the probabilities: whether it has one, and the mask's draw.
struct Dropout {
  explicit Dropout(const AttentionShape &a)
      : on(a.dropout > 0), key(a.dropoutKey), threshold(dropout::threshold(a.dropout)),
        kept(float(1.0 / (1.0 - a.dropout))), keysTotal(a.keys) {}
  /// dropBlock of a block of `rows` query rows from `row` on, `keys` of them scored.
  void apply(const float *from, float *to, int64_t rows, int64_t keys, uint64_t row) const {
    dropBlock(from, to, rows, keys, keysTotal, row, key, threshold, kept);
  }
  bool on;
  uint64_t key, threshold;
  float kept; // 1 / (1 - dropout) in f32, as plait.dropout_mask stores it
  int64_t keysTotal;
};

/// f32 attention: out [B, S, H, E] and lse [B, H, S].
Status attentionF32(const KernelCall &call) {
  AttentionShape a;
  PLAIT_RETURN_IF_ERROR(checkAttentionCall(call, /*grad=*/false, a));
  const float *q = call.inputs[0].as<float>(), *k = call.inputs[1].as<float>(),
              *v = call.inputs[2].as<float>();
  float *out = call.outputs[0].as<float>(), *lse = call.outputs[1].as<float>();
  if (a.batch * a.heads * a.queries == 0)
    return Status();
  if (a.keys == 0 || a.valueDim == 0) { // no keys: an empty sum, as softmax over nothing
    std::fill(out, out + call.outputs[0].numel(), 0.0f);
    std::fill(lse, lse + call.outputs[1].numel(), -std::numeric_limits<float>::infinity());
    return Status();
  }
  const int64_t blockRows = attentionWorkspaceRows(a.queries);
  Scratch scratch(call, "attention");
  float *scores; // Workspace.cpp: blockRows x T floats
  PLAIT_RETURN_IF_ERROR(scratch.take(blockRows * a.keys, scores));
  const Dropout drop(a);
  auto block = [&](int64_t slotRow, const Head &hd, int64_t i0, int64_t rows,
                   int64_t keys) -> Status {
    float *slotScores = scores + slotRow * a.keys;
    PLAIT_RETURN_IF_ERROR(scoreBlock(a, hd, q, k, i0, rows, keys, slotScores));
    softmaxBlock(slotScores, rows, keys, i0, a.causal, lse + hd.lseOffset + i0);
    if (drop.on)
      drop.apply(slotScores, slotScores, rows, keys, hd.maskRow + uint64_t(i0));
    return gemmRowMajor<float>(false, false, rows, a.valueDim, keys, 1.0, slotScores, keys,
                               v + hd.vOffset, hd.vPitch, 0.0,
                               out + hd.oOffset + i0 * hd.oPitch, hd.oPitch);
  };
  return forEachBlock(a, call.batchOffset, blockRows, block);
}

/// f32 attention_grad: dq, dk, dv from q, k, v, out, lse and dout.
Status attentionGradF32(const KernelCall &call) {
  AttentionShape a;
  PLAIT_RETURN_IF_ERROR(checkAttentionCall(call, /*grad=*/true, a));
  const float *q = call.inputs[0].as<float>(), *k = call.inputs[1].as<float>(),
              *v = call.inputs[2].as<float>(), *lse = call.inputs[4].as<float>(),
              *dout = call.inputs[5].as<float>(); // out (input 3): only the CUDA kernel reads it
  float *dq = call.outputs[0].as<float>(), *dk = call.outputs[1].as<float>(),
        *dv = call.outputs[2].as<float>();
  // dk and dv are sums over query blocks: accumulated in place by the GEMMs below.
  std::fill(dk, dk + call.outputs[1].numel(), 0.0f);
  std::fill(dv, dv + call.outputs[2].numel(), 0.0f);
  if (a.keys == 0 || a.valueDim == 0)
    std::fill(dq, dq + call.outputs[0].numel(), 0.0f);
  if (a.batch * a.heads * a.queries * a.keys == 0)
    return Status();
  const int64_t blockRows = attentionWorkspaceRows(a.queries);
  Scratch scratch(call, "attention_grad");
  float *probsAll, *dprobsAll; // Workspace.cpp: two blocks of blockRows x T floats
  PLAIT_RETURN_IF_ERROR(scratch.take(blockRows * a.keys, probsAll));
  PLAIT_RETURN_IF_ERROR(scratch.take(blockRows * a.keys, dprobsAll));
  const float scale = float(a.scale);
  const Dropout drop(a);
  auto block = [&](int64_t slotRow, const Head &hd, int64_t i0, int64_t rows,
                   int64_t keys) -> Status {
    float *probs = probsAll + slotRow * a.keys, *dprobs = dprobsAll + slotRow * a.keys;
    const float *qBlock = q + hd.qOffset + i0 * hd.qPitch;
    const float *doBlock = dout + hd.oOffset + i0 * hd.oPitch;
    // P = exp(scale q k^T - lse), zero where masked.
    PLAIT_RETURN_IF_ERROR(scoreBlock(a, hd, q, k, i0, rows, keys, probs));
    probabilitiesBlock(probs, rows, keys, i0, a.causal, lse + hd.lseOffset + i0);
    // dv[0, keys) += (P M)^T dout, M the dropout mask (1 without); dP = (dout v^T) M.
    const uint64_t maskRow = hd.maskRow + uint64_t(i0);
    if (drop.on)
      drop.apply(probs, dprobs, rows, keys, maskRow); // P M, in dprobs until dP
    PLAIT_RETURN_IF_ERROR(gemmRowMajor<float>(true, false, keys, a.valueDim, rows, 1.0,
                                              drop.on ? dprobs : probs, keys, doBlock, hd.oPitch,
                                              1.0, dv + hd.vOffset, hd.vPitch));
    PLAIT_RETURN_IF_ERROR(gemmRowMajor<float>(false, true, rows, keys, a.valueDim, 1.0,
                                              doBlock, hd.oPitch, v + hd.vOffset, hd.vPitch,
                                              0.0, dprobs, keys));
    if (drop.on)
      drop.apply(dprobs, dprobs, rows, keys, maskRow);
    scoreGradBlock(probs, dprobs, rows, keys); // dS = P (dP - delta), in dprobs
    // dq rows = scale dS k; dk[0, keys) += scale dS^T q rows.
    PLAIT_RETURN_IF_ERROR(gemmRowMajor<float>(false, false, rows, a.dim, keys, scale, dprobs,
                                              keys, k + hd.kOffset, hd.qPitch, 0.0,
                                              dq + hd.qOffset + i0 * hd.qPitch, hd.qPitch));
    return gemmRowMajor<float>(true, false, keys, a.dim, rows, scale, dprobs, keys, qBlock,
                               hd.qPitch, 1.0, dk + hd.kOffset, hd.qPitch);
  };
  return forEachBlock(a, call.batchOffset, blockRows, block);
}

/// attention (kGrad false) or attention_grad: operands checked, bf16 staged through f32 a
/// few batch entries at a time (batchStageEntries): the heads of different entries
/// never meet.
template <bool kGrad> Status attentionKernel(const KernelCall &call) {
  constexpr KernelFn kF32 = kGrad ? &attentionGradF32 : &attentionF32;
  AttentionShape a;
  PLAIT_RETURN_IF_ERROR(checkAttentionCall(call, kGrad, a));
  if (!hasHalfTensor(call))
    return kF32(call);
  // The step (dropout) is staged whole; every other operand by batch entries.
  return runStagedInF32Entries(
      call, kF32, uint64_t(batchStagedWholeInputs(kGrad ? "attention_grad" : "attention")));
}

} // namespace

void registerAttentionKernels() {
  registerKernel("attention", &attentionKernel<false>);
  registerKernel("attention_grad", &attentionKernel<true>);
}

} // namespace plait::rt::cpu
