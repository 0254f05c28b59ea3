// Importers of the ONNX ops whose output shape depends on their input's values: NonZero,
// Compress and Unique. plait plans static shapes, so the values that decide the shape must
// be known at import time (folded constants, initializers, or graph inputs bound with
// --const-input): NonZero and Unique then fold to constants; Compress, whose data may be
// computed at run time, becomes a gather of the kept positions, which trains.
#include "compiler/import/onnx/Importer.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The positions of `t`'s non-zero elements, in row-major order (getDouble reads a splat's one
/// value and an integer exactly as far as being non-zero goes).
std::vector<int64_t> nonZeroPositions(const HostTensor &t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (t.getDouble(i) != 0.0)
      out.push_back(i);
  return out;
}

/// NonZero: the indices of X's non-zero elements, [rank, count] int64, in row-major order.
LogicalResult importNonZero(NodeContext &ctx) {
  const HostTensor *x = ctx.requireConstInput(0, "X");
  if (!x)
    return failure();
  std::vector<int64_t> hits = nonZeroPositions(*x);
  const int64_t rank = std::max<int64_t>(x->rank(), 1), count = int64_t(hits.size());
  std::vector<int64_t> out(size_t(rank * count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t flat = hits[size_t(k)];
    for (int64_t d = x->rank() - 1; d >= 0; --d) {
      out[size_t(d * count + k)] = flat % x->shape()[d];
      flat /= x->shape()[d];
    }
  }
  if (x->rank() == 0) // a scalar: [1, count] of zeros (numpy's nonzero of an atleast_1d view)
    std::fill(out.begin(), out.end(), 0);
  return ctx.setFolded(0, HostTensor::fromInts(ElemKind::I64, {rank, count}, out));
}

/// Compress: the slices of `input` along `axis` (of the flattened input without one) whose
/// condition is true; a condition shorter than the axis keeps none of the rest.
LogicalResult importCompress(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  const HostTensor *condition = ctx.requireConstInput(1, "condition");
  if (!condition)
    return failure();
  if (condition->rank() != 1)
    return ctx.error("condition must be 1-D, got rank " + Twine(condition->rank()));
  std::optional<int64_t> axis;
  if (ctx.hasAttr("axis")) {
    axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), type.getRank());
    if (!axis)
      return failure();
  }
  const int64_t extent = axis ? type.getDimSize(*axis) : type.getNumElements();
  if (condition->numElements() > extent)
    return ctx.error("condition has " + Twine(condition->numElements()) +
                     " entries, more than the " + Twine(extent) + " it selects from");
  std::vector<int64_t> kept = nonZeroPositions(*condition);
  Value data = ctx.input(0);
  if (data && !axis)
    data = ctx.reshape(data, {extent});
  if (!data)
    return failure();
  Value indices = ctx.constant(HostTensor::fromInts(ElemKind::I64, {int64_t(kept.size())}, kept));
  return ctx.setResult(
      ctx.create<GatherOp>({data, indices}, {ctx.i64Attr("axis", axis ? *axis : 0)}));
}

/// Unique: X's distinct elements (or slices along `axis`), sorted ascending or in the order
/// they first occur, with the index of each one's first occurrence, each element's (slice's)
/// index into them and their counts, as numpy.unique computes them; folded.
LogicalResult importUnique(NodeContext &ctx) {
  const HostTensor *xIn = ctx.requireConstInput(0, "X");
  if (!xIn)
    return failure();
  HostTensor x = xIn->materialized();
  std::optional<int64_t> axis;
  if (ctx.hasAttr("axis")) {
    axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), x.rank());
    if (!axis)
      return failure();
  }
  const bool sorted = ctx.intAttr("sorted", 1) != 0;
  // Each of the n items (elements, or slices along the axis) as the list of its values.
  llvm::SmallVector<int64_t> shape(x.shape());
  const int64_t n = axis ? shape[size_t(*axis)] : x.numElements();
  int64_t outer = 1, inner = 1;
  if (axis) {
    for (int64_t d = 0; d < *axis; ++d)
      outer *= shape[size_t(d)];
    for (int64_t d = *axis + 1; d < x.rank(); ++d)
      inner *= shape[size_t(d)];
  }
  // Where element k of item's slice (k < outer * inner) is in X.
  auto at = [&](int64_t item, int64_t k) {
    return axis ? ((k / inner) * n + item) * inner + k % inner : item;
  };
  const int64_t width = axis ? outer * inner : 1;
  auto less = [&](int64_t a, int64_t b) { // integers compared as integers, exactly
    for (int64_t k = 0; k < width; ++k) {
      int64_t ia = at(a, k), ib = at(b, k);
      if (x.isFloat() ? x.getDouble(ia) != x.getDouble(ib) : x.getInt(ia) != x.getInt(ib))
        return x.isFloat() ? x.getDouble(ia) < x.getDouble(ib) : x.getInt(ia) < x.getInt(ib);
    }
    return false;
  };
  // Items in sorted order (stable: among equals, the first occurrence first).
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  // The distinct items: each one's first occurrence, in sorted order.
  std::vector<int64_t> firsts, groupOf(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || less(order[i - 1], order[i]))
      firsts.push_back(order[i]);
    groupOf[size_t(order[i])] = int64_t(firsts.size()) - 1;
  }
  // sorted = 0: the distinct items in the order they first occur.
  std::vector<int64_t> rank(firsts.size());
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> byFirst(firsts.size());
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int64_t a, int64_t b) { return firsts[size_t(a)] < firsts[size_t(b)]; });
    std::vector<int64_t> reordered;
    for (size_t j = 0; j < byFirst.size(); ++j) {
      rank[size_t(byFirst[j])] = int64_t(j);
      reordered.push_back(firsts[size_t(byFirst[j])]);
    }
    firsts = std::move(reordered);
  }
  const int64_t u = int64_t(firsts.size());
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts(size_t(u), 0);
  for (int64_t i = 0; i < n; ++i) {
    inverse[size_t(i)] = rank[size_t(groupOf[size_t(i)])];
    ++counts[size_t(inverse[size_t(i)])];
  }
  // Y: the distinct items, laid out as X with the axis (or the flattened X) of length u.
  llvm::SmallVector<int64_t> yShape = axis ? shape : llvm::SmallVector<int64_t>{u};
  if (axis)
    yShape[size_t(*axis)] = u;
  HostTensor y(x.kind(), yShape);
  for (int64_t j = 0; j < u; ++j)
    for (int64_t k = 0; k < width; ++k) {
      int64_t to = axis ? ((k / inner) * u + j) * inner + k % inner : j;
      int64_t from = at(firsts[size_t(j)], k);
      if (y.isFloat())
        y.setDouble(to, x.getDouble(from));
      else
        y.setInt(to, x.getInt(from));
    }
  if (failed(ctx.setFolded(0, std::move(y))))
    return failure();
  const std::pair<unsigned, std::vector<int64_t> *> rest[] = {
      {1, &firsts}, {2, &inverse}, {3, &counts}};
  for (auto [i, values] : rest)
    if (ctx.hasOutput(i) &&
        failed(ctx.setFolded(
            i, HostTensor::fromInts(ElemKind::I64, {int64_t(values->size())}, *values))))
      return failure();
  return success();
}

} // namespace

void registerDataShapeOps(OpImporterMap &map) {
  map["NonZero"] = importNonZero;
  map["Compress"] = importCompress;
  map["Unique"] = importUnique;
}

} // namespace plait::onnx_import
