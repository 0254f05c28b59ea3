// Permuted operands and results of plait.matmul (lhs_perm, rhs_perm, result_perm), shared by
// the verifier, plait-fold-transposes, the cost model and the runtime kernel. No MLIR or
// runtime dependencies.
//
// With `lhs_perm` P the product reads its lhs as transpose(lhs, P): logical dimension i is
// the stored dimension P[i]. With `result_perm` Q it stores transpose(product, Q). A GEMM reads
// a matrix through a row pitch when one of its two dimensions is contiguous, so an operand's
// permutation must put the stored innermost dimension last or second to last, and a result's
// must keep its innermost dimension last (BLAS writes rows of C): then the batch loop calls
// one GEMM per batch entry at strided offsets, and no transposed copy exists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace plait::matmul {

/// Whether `perm` is a permutation of 0..rank-1.
template <typename Perm> bool isPermutation(const Perm &perm, size_t rank) {
  if (perm.size() != rank || rank > 64)
    return false;
  uint64_t seen = 0; // no allocation: the runtime checks this on every call
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(rank) || (seen >> p) & 1)
      return false;
    seen |= uint64_t(1) << p;
  }
  return true;
}

/// What is wrong with `perm` as the permutation of an operand (`result` false) or of the
/// result of rank `rank`, or "".
template <typename Perm> std::string checkPerm(const Perm &perm, size_t rank, bool result) {
  if (rank < 2)
    return "needs rank >= 2";
  if (!isPermutation(perm, rank))
    return "is not a permutation of the " + std::to_string(rank) + " dimensions";
  int64_t inner = int64_t(rank) - 1;
  if (result ? perm[rank - 1] != inner
             : perm[rank - 1] != inner && perm[rank - 2] != inner)
    return result ? "must keep the innermost dimension last (BLAS writes rows)"
                  : "must keep the innermost dimension among the last two (BLAS reads rows "
                    "or columns)";
  return "";
}

/// shape permuted: result[i] = shape[perm[i]].
template <typename Shape, typename Perm>
std::vector<int64_t> permuted(const Shape &shape, const Perm &perm) {
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    out[i] = shape[size_t(perm[i])];
  return out;
}

/// A permuted matmul whose rhs has no batch of its own (one matrix for every batch entry)
/// computes each logical row of its lhs against that matrix. Its `entries` GEMMs of `m` rows
/// each would be small where a permutation moved the batch next to K (plait-fold-transposes
/// folding the [B, T, D] -> [T, B, D] of nn.MultiheadAttention's in-projection: GEMMs of B
/// rows, 0.4x the GEMM rate of one of B x T rows on this VM). The CPU kernel folds them
/// instead: it takes the result's stored rows in order, a chunk at a time, gathers their lhs
/// rows into its workspace, and runs one GEMM per chunk (LinalgKernels.cpp foldedMatmul).
/// The rows of a chunk, or 0 where the entries' own GEMMs are kept: a single entry, entries
/// of kFoldMinRows rows or more, or a gathered chunk above kFoldMaxElements elements.
constexpr int64_t kFoldMinRows = 256;
constexpr int64_t kFoldChunkElements = int64_t(1) << 19; // 2 MiB of f32
constexpr int64_t kFoldMaxElements = int64_t(1) << 22;
inline int64_t foldedChunkRows(int64_t entries, int64_t m, int64_t k) {
  if (entries <= 1 || m <= 0 || k <= 0 || m >= kFoldMinRows)
    return 0;
  const int64_t rows = entries > INT64_MAX / m ? INT64_MAX : entries * m;
  const int64_t chunk = std::min(rows, std::max(kFoldMinRows, kFoldChunkElements / k));
  return chunk > kFoldMaxElements / k ? 0 : chunk;
}

} // namespace plait::matmul
