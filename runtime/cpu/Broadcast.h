// Row-wise iteration over numpy-broadcast operands, shared by elementwise and movement kernels.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/cpu/Dims.h"

namespace plait::rt::cpu {

/// True when `from` broadcasts to `to` under numpy rules (missing leading dims, or size 1).
bool broadcastsTo(ShapeRef from, ShapeRef to);

/// The result shape of broadcasting `a` with `b`, or false when they do not broadcast. `out`
/// may be what `a` or `b` views (a running shape joined with the next operand's).
bool broadcastShapes(ShapeRef a, ShapeRef b, Dims &out);

/// How N operands are walked to produce a dense output: the output shape with adjacent
/// dimensions merged wherever every operand allows it, and each operand's element strides
/// (0 along broadcast dimensions). After merging, the innermost stride of each operand is 0
/// or 1, so rows are either contiguous or a repeated scalar, which keeps inner loops tight.
template <size_t N> struct BroadcastPlan {
  Dims shape;
  std::array<Dims, N> strides;
  int64_t numel = 0;
};

/// Builds the plan; every operand shape must broadcast to `out` (checked by the caller).
template <size_t N>
BroadcastPlan<N> planBroadcast(ShapeRef out, const std::array<ShapeRef, N> &operands) {
  BroadcastPlan<N> plan;
  plan.numel = 1;
  for (int64_t d : out)
    plan.numel *= d;
  size_t rank = out.size();
  std::array<Dims, N> full;
  for (size_t k = 0; k < N; ++k) {
    ShapeRef s = operands[k];
    full[k].assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      size_t od = rank - s.size() + i;
      full[k][od] = (s[i] == 1 && out[od] != 1) ? 0 : stride;
      stride *= s[i];
    }
  }
  // Drop size-1 output dimensions, then merge neighbours that are contiguous for everyone.
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1)
      continue;
    bool merge = !plan.shape.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = plan.strides[k].back() == full[k][d] * out[d];
    if (merge) {
      plan.shape.back() *= out[d];
      for (size_t k = 0; k < N; ++k)
        plan.strides[k].back() = full[k][d];
    } else {
      plan.shape.push_back(out[d]);
      for (size_t k = 0; k < N; ++k)
        plan.strides[k].push_back(full[k][d]);
    }
  }
  if (plan.shape.empty()) {
    plan.shape.push_back(1);
    for (size_t k = 0; k < N; ++k)
      plan.strides[k].push_back(0);
  }
  return plan;
}

/// Calls `row(outOffset, offsets, length, innerStrides)` for the innermost rows [rowBegin,
/// rowEnd) of the output, in order; offsets and strides are in elements of each operand.
template <size_t N, typename RowFn>
void forEachRowIn(const BroadcastPlan<N> &plan, int64_t rowBegin, int64_t rowEnd, RowFn &&row) {
  if (plan.numel == 0 || rowBegin >= rowEnd)
    return;
  size_t rank = plan.shape.size();
  int64_t inner = plan.shape[rank - 1];
  std::array<int64_t, N> innerStride, offsets{};
  for (size_t k = 0; k < N; ++k)
    innerStride[k] = plan.strides[k][rank - 1];
  Dims index(rank, 0);
  for (int64_t rest = rowBegin, d = int64_t(rank) - 2; d >= 0 && rest > 0; --d) {
    index[size_t(d)] = rest % plan.shape[size_t(d)];
    rest /= plan.shape[size_t(d)];
    for (size_t k = 0; k < N; ++k)
      offsets[k] += index[size_t(d)] * plan.strides[k][size_t(d)];
  }
  int64_t outOffset = rowBegin * inner;
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    row(outOffset, offsets, inner, innerStride);
    outOffset += inner;
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < plan.shape[d]) {
        for (size_t k = 0; k < N; ++k)
          offsets[k] += plan.strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= plan.strides[k][d] * (plan.shape[d] - 1);
      index[d] = 0;
    }
  }
}

/// Calls `row(outOffset, offsets, length, innerStrides)` for every innermost row of the
/// output, in order; offsets and strides are in elements of each operand.
template <size_t N, typename RowFn> void forEachRow(const BroadcastPlan<N> &plan, RowFn &&row) {
  if (plan.numel == 0)
    return;
  forEachRowIn(plan, 0, plan.numel / plan.shape.back(), std::forward<RowFn>(row));
}

} // namespace plait::rt::cpu
