// Shape rules shared by the op verifiers, the importer and the passes.
#include "ir/ShapeRules.h"

#include <algorithm>

#include "llvm/Support/MathExtras.h"

namespace plait {

std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<llvm::SmallVector<int64_t>> normalizeAxes(llvm::ArrayRef<int64_t> axes,
                                                        int64_t rank) {
  llvm::SmallVector<int64_t> out;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      out.push_back(d);
  for (int64_t a : axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis)
      return std::nullopt;
    out.push_back(*axis);
  }
  llvm::sort(out);
  return out;
}

std::optional<int64_t> windowSpan(int64_t kernel, int64_t dilation) {
  int64_t span;
  if (llvm::MulOverflow(dilation, kernel - 1, span) || llvm::AddOverflow(span, int64_t(1), span))
    return std::nullopt;
  return span;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                         int64_t padEnd, int64_t dilation, bool ceilMode) {
  auto span = windowSpan(kernel, dilation);
  int64_t padded, numer;
  if (!span || llvm::AddOverflow(in, padBegin, padded) ||
      llvm::AddOverflow(padded, padEnd, padded) || padded < *span)
    return 0;
  numer = padded - *span;
  int64_t out = numer / stride + (ceilMode && numer % stride != 0 ? 1 : 0) + 1;
  // With ceil_mode, the last window must start inside the input or the begin padding.
  int64_t lastStart;
  if (ceilMode && (llvm::MulOverflow(out - 1, stride, lastStart) || lastStart >= in + padBegin))
    --out;
  return out;
}

std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (llvm::MulOverflow(count, d, count))
      return std::nullopt;
  return count;
}

std::string shapeToString(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

} // namespace plait
