// Importer of ONNX Einsum: diagonals as gathers, sums as reductions and contractions as
// batched matmuls, so an einsum trains through those ops' VJPs.
#include "compiler/import/onnx/Importer.h"

#include <map>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// An Einsum operand in flight: its value and one label per dimension (a letter's code, or
/// kEllipsisLabel + k for the k-th of the ellipsis's dimensions, counted so that the
/// ellipses of all operands line up from the right, as they broadcast).
struct EinsumTerm {
  Value value;
  llvm::SmallVector<int> labels;
};
constexpr int kEllipsisLabel = 256;

std::string einsumLabelName(int label) {
  return label >= kEllipsisLabel ? "..." : std::string(1, char(label));
}

/// Parses one side's term: letters and at most one "..." (spaces ignored); ellipsis labels
/// are filled in by the caller. Returns false on anything else.
bool parseEinsumTerm(llvm::StringRef text, llvm::SmallVectorImpl<int> &labels, int &ellipsisAt) {
  ellipsisAt = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ')
      continue;
    if (c == '.') {
      if (ellipsisAt >= 0 || text.substr(i, 3) != "...")
        return false;
      ellipsisAt = int(labels.size());
      i += 2;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return false;
    labels.push_back(int(c));
  }
  return true;
}

/// Moves `x`'s dimensions into `order` (a permutation), if that changes anything.
Value transposeTo(NodeContext &ctx, Value x, llvm::ArrayRef<int64_t> order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != int64_t(i))
      return ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", order)});
  return x;
}

/// Sums `t` over the dimensions whose labels `drop` says to.
template <typename Drop> LogicalResult sumLabels(NodeContext &ctx, EinsumTerm &t, Drop &&drop) {
  llvm::SmallVector<int64_t> axes;
  llvm::SmallVector<int> kept;
  for (size_t d = 0; d < t.labels.size(); ++d)
    (drop(t.labels[d]) ? axes.push_back(int64_t(d)) : kept.push_back(t.labels[d]));
  if (axes.empty())
    return success();
  t.value = ctx.create<ReduceSumOp>({t.value}, {ctx.arrayAttr("axes", axes),
                                                ctx.boolAttr("keepdims", false)});
  t.labels = kept;
  return success(bool(t.value));
}

/// Takes the diagonal of every label `t` repeats: the two dimensions moved last, merged, and
/// gathered at 0, n + 1, 2(n + 1), ... (so the gradient is gather's scatter-add).
LogicalResult takeEinsumDiagonals(NodeContext &ctx, EinsumTerm &t) {
  for (;;) {
    int p = -1, q = -1;
    for (size_t i = 0; i < t.labels.size() && p < 0; ++i)
      for (size_t j = i + 1; j < t.labels.size(); ++j)
        if (t.labels[i] == t.labels[j]) {
          p = int(i), q = int(j);
          break;
        }
    if (p < 0)
      return success();
    llvm::ArrayRef<int64_t> shape = shapeOf(t.value);
    const int64_t n = shape[size_t(p)];
    if (shape[size_t(q)] != n)
      return ctx.error("label '" + einsumLabelName(t.labels[size_t(p)]) + "' is repeated over "
                       "dimensions of sizes " + llvm::Twine(n) + " and " +
                       llvm::Twine(shape[size_t(q)]));
    llvm::SmallVector<int64_t> order, merged;
    llvm::SmallVector<int> labels;
    for (size_t d = 0; d < t.labels.size(); ++d)
      if (int(d) != p && int(d) != q) {
        order.push_back(int64_t(d));
        merged.push_back(shape[d]);
        labels.push_back(t.labels[d]);
      }
    order.push_back(p);
    order.push_back(q);
    merged.push_back(n * n);
    labels.push_back(t.labels[size_t(p)]);
    llvm::SmallVector<int64_t> diagonal;
    for (int64_t i = 0; i < n; ++i)
      diagonal.push_back(i * (n + 1));
    Value v = ctx.reshape(transposeTo(ctx, t.value, order), merged);
    v = v ? ctx.create<GatherOp>({v, ctx.constant(HostTensor::fromInts(ElemKind::I64, {n},
                                                                       diagonal))},
                                 {ctx.i64Attr("axis", int64_t(merged.size()) - 1)})
          : Value();
    if (!v)
      return failure();
    t.value = v;
    t.labels = labels;
  }
}

/// a x b over their shared labels: those in `keep` stay as a batch, the others are
/// contracted by one batched matmul ([batch, a's own, shared] x [batch, shared, b's own]).
/// Shared dimensions of size 1 on one side are broadcast to the other's.
LogicalResult contractEinsum(NodeContext &ctx, EinsumTerm &a, EinsumTerm &b,
                             const llvm::SmallDenseSet<int> &keep) {
  auto position = [](const EinsumTerm &t, int label) {
    return int64_t(llvm::find(t.labels, label) - t.labels.begin());
  };
  llvm::SmallVector<int> batch, own, shared, other;
  for (int l : a.labels)
    (llvm::is_contained(b.labels, l) ? (keep.contains(l) ? batch : shared) : own).push_back(l);
  for (int l : b.labels)
    if (!llvm::is_contained(a.labels, l))
      other.push_back(l);
  // Sizes of the shared labels, broadcasting 1 against n.
  llvm::SmallVector<int64_t> aShape(shapeOf(a.value)), bShape(shapeOf(b.value));
  bool broadcastA = false, broadcastB = false;
  for (int l : llvm::concat<int>(batch, shared)) {
    int64_t &x = aShape[size_t(position(a, l))], &y = bShape[size_t(position(b, l))];
    if (x == y)
      continue;
    if (x != 1 && y != 1)
      return ctx.error("label '" + einsumLabelName(l) + "' has sizes " + llvm::Twine(x) +
                       " and " + llvm::Twine(y));
    (x == 1 ? broadcastA : broadcastB) = true;
    x = y = std::max(x, y);
  }
  if (broadcastA)
    a.value = ctx.broadcastTo(a.value, aShape);
  if (broadcastB && a.value)
    b.value = ctx.broadcastTo(b.value, bShape);
  if (!a.value || !b.value)
    return failure();
  auto dims = [](const EinsumTerm &t, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int> labels,
                 llvm::SmallVectorImpl<int64_t> &order, llvm::SmallVectorImpl<int64_t> &sizes) {
    int64_t product = 1;
    for (int l : labels) {
      int64_t d = int64_t(llvm::find(t.labels, l) - t.labels.begin());
      order.push_back(d);
      sizes.push_back(shape[size_t(d)]);
      product *= shape[size_t(d)];
    }
    return product;
  };
  llvm::SmallVector<int64_t> aOrder, bOrder, batchSizes, ownSizes, sharedSizes, otherSizes;
  const int64_t nb = dims(a, aShape, batch, aOrder, batchSizes);
  const int64_t m = dims(a, aShape, own, aOrder, ownSizes);
  const int64_t k = dims(a, aShape, shared, aOrder, sharedSizes);
  llvm::SmallVector<int64_t> ignored;
  dims(b, bShape, batch, bOrder, ignored);
  dims(b, bShape, shared, bOrder, ignored);
  const int64_t n = dims(b, bShape, other, bOrder, otherSizes);
  Value x = ctx.reshape(transposeTo(ctx, a.value, aOrder), {nb, m, k});
  Value y = x ? ctx.reshape(transposeTo(ctx, b.value, bOrder), {nb, k, n}) : Value();
  Value z = y ? ctx.create<MatmulOp>({x, y}) : Value();
  llvm::SmallVector<int64_t> outShape(batchSizes);
  llvm::append_range(outShape, ownSizes);
  llvm::append_range(outShape, otherSizes);
  a.value = z ? ctx.reshape(z, outShape) : Value();
  a.labels = batch;
  llvm::append_range(a.labels, own);
  llvm::append_range(a.labels, other);
  return success(bool(a.value));
}

/// Einsum: each operand's repeated labels become diagonals and the labels no other operand
/// and not the output has are summed; then the operands are contracted left to right by
/// batched matmuls; what remains is summed and transposed into the output's order. Every
/// step is a plait op with a VJP, so Einsum trains.
LogicalResult importEinsum(NodeContext &ctx) {
  std::string equation = ctx.stringAttr("equation", "");
  llvm::StringRef eq(equation);
  auto [lhs, rhs] = eq.split("->");
  const bool explicitOutput = eq.contains("->");
  llvm::SmallVector<llvm::StringRef> termTexts;
  lhs.split(termTexts, ',');
  const unsigned operands = ctx.numInputs();
  if (termTexts.size() != operands)
    return ctx.error("equation '" + equation + "' has " + llvm::Twine(termTexts.size()) +
                     " terms for " + llvm::Twine(operands) + " inputs");
  llvm::SmallVector<EinsumTerm> terms(operands);
  llvm::SmallVector<int> ellipsisAt(operands);
  int64_t ellipsisRank = 0;
  for (unsigned i = 0; i < operands; ++i) {
    RankedTensorType type = ctx.inputType(i);
    if (!type || failed(ctx.requireFloatInput(i)))
      return failure();
    if (!parseEinsumTerm(termTexts[i], terms[i].labels, ellipsisAt[i]))
      return ctx.error("cannot parse the equation's term '" + termTexts[i].trim() + "'");
    int64_t extra = type.getRank() - int64_t(terms[i].labels.size());
    if (extra < 0 || (extra > 0 && ellipsisAt[i] < 0))
      return ctx.error("term '" + termTexts[i].trim() + "' does not match input " +
                       llvm::Twine(i) + "'s rank " + llvm::Twine(type.getRank()));
    ellipsisRank = std::max(ellipsisRank, extra);
  }
  for (unsigned i = 0; i < operands; ++i) {
    int64_t extra = ctx.inputType(i).getRank() - int64_t(terms[i].labels.size());
    if (ellipsisAt[i] >= 0) {
      llvm::SmallVector<int> fill;
      for (int64_t j = 0; j < extra; ++j)
        fill.push_back(kEllipsisLabel + int(ellipsisRank - extra + j));
      terms[i].labels.insert(terms[i].labels.begin() + ellipsisAt[i], fill.begin(), fill.end());
    }
    if (!(terms[i].value = ctx.input(i)))
      return failure();
  }
  llvm::SmallVector<int> output;
  if (explicitOutput) {
    int at = -1;
    if (!parseEinsumTerm(rhs, output, at))
      return ctx.error("cannot parse the equation's output '" + rhs.trim() + "'");
    if (at >= 0) {
      llvm::SmallVector<int> fill;
      for (int64_t j = 0; j < ellipsisRank; ++j)
        fill.push_back(kEllipsisLabel + int(j));
      output.insert(output.begin() + at, fill.begin(), fill.end());
    }
  } else { // the ellipsis, then the letters that occur once, in alphabetical order
    std::map<int, int> counts;
    for (const EinsumTerm &t : terms)
      for (int l : t.labels)
        ++counts[l];
    for (int64_t j = 0; j < ellipsisRank; ++j)
      output.push_back(kEllipsisLabel + int(j));
    for (auto [l, c] : counts)
      if (c == 1 && l < kEllipsisLabel)
        output.push_back(l);
  }
  for (size_t i = 0; i < output.size(); ++i) {
    if (llvm::is_contained(llvm::ArrayRef<int>(output).take_front(i), output[i]))
      return ctx.error("output label '" + einsumLabelName(output[i]) + "' is repeated");
    if (llvm::none_of(terms, [&](const EinsumTerm &t) {
          return llvm::is_contained(t.labels, output[i]);
        }))
      return ctx.error("output label '" + einsumLabelName(output[i]) + "' is in no input");
  }
  // Labels needed after operand i: the output's and those of operands after it.
  auto neededAfter = [&](unsigned i) {
    llvm::SmallDenseSet<int> needed(output.begin(), output.end());
    for (unsigned j = i + 1; j < operands; ++j)
      needed.insert(terms[j].labels.begin(), terms[j].labels.end());
    return needed;
  };
  for (unsigned i = 0; i < operands; ++i) {
    if (failed(takeEinsumDiagonals(ctx, terms[i])))
      return failure();
    llvm::SmallDenseSet<int> needed = neededAfter(i);
    for (unsigned j = 0; j < i; ++j)
      needed.insert(terms[j].labels.begin(), terms[j].labels.end());
    if (failed(sumLabels(ctx, terms[i], [&](int l) { return !needed.contains(l); })))
      return failure();
  }
  EinsumTerm result = terms[0];
  for (unsigned i = 1; i < operands; ++i) {
    llvm::SmallDenseSet<int> keep = neededAfter(i);
    if (failed(contractEinsum(ctx, result, terms[i], keep)))
      return failure();
  }
  if (failed(sumLabels(ctx, result, [&](int l) { return !llvm::is_contained(output, l); })))
    return failure();
  llvm::SmallVector<int64_t> order;
  for (int l : output)
    order.push_back(int64_t(llvm::find(result.labels, l) - result.labels.begin()));
  return ctx.setResult(transposeTo(ctx, result.value, order));
}

} // namespace

void registerEinsumOps(OpImporterMap &map) { map["Einsum"] = importEinsum; }

} // namespace plait::onnx_import
