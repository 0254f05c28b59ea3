// Importers of ONNX's element and tuple indexing: GatherElements, GatherND, ScatterElements,
// ScatterND and TopK. Each becomes plait.gather (or plait.gather_grad, a scatter-add) at flat
// indices computed from the ONNX indices (TopK's from ranks), so they train through those
// ops' VJPs.
#include "compiler/import/onnx/Importer.h"

#include <climits>
#include <cmath>
#include <map>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// Wraps i64 `idx` (negative counting from the end of `extent`) and ors into `outside`
/// which entries are not in [-extent, extent). Null after an error.
Value wrapIndex(NodeContext &ctx, Value idx, int64_t extent, Value &outside) {
  Type i64 = IntegerType::get(ctx.context(), 64);
  idx = wrapNegativeIndex(ctx, idx, extent);
  Value below = idx ? ctx.create<LessOp>({idx, ctx.scalar(0, i64)}) : Value();
  Value above = below ? ctx.create<GreaterEqualOp>({idx, ctx.scalar(double(extent), i64)})
                      : Value();
  Value bad = above ? ctx.create<OrOp>({below, above}) : Value();
  outside = !bad ? Value() : outside ? ctx.create<OrOp>({outside, bad}) : bad;
  return outside ? idx : Value();
}

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// The flat index into data of `shape` of each element of `indices` (same rank, each other
/// dimension at most data's) taken along `axis`, as GatherElements and ScatterElements
/// address data: wrapped(indices) * stride(axis) plus the other dimensions' offsets (a
/// [1, ..., n_d, ..., 1] range times the stride, added with broadcasting). An index outside
/// [-n, n) becomes numel(data), one past the data, which plait.gather and plait.gather_grad
/// report at run time. Null after an error.
Value elementFlatIndex(NodeContext &ctx, Value indices, llvm::ArrayRef<int64_t> shape,
                       int64_t axis) {
  const int64_t rank = int64_t(shape.size());
  llvm::ArrayRef<int64_t> indexShape = shapeOf(indices);
  llvm::SmallVector<int64_t> strides = stridesOf(shape);
  const int64_t numel = strides[0] * shape[0];
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value outside;
  Value idx = wrapIndex(ctx, ctx.cast(indices, i64), shape[size_t(axis)], outside);
  if (!idx)
    return Value();
  Value flat = strides[size_t(axis)] != 1
                   ? ctx.create<MulOp>({idx, ctx.scalar(double(strides[size_t(axis)]), i64)})
                   : idx;
  for (int64_t d = 0; d < rank && flat; ++d) {
    if (d == axis || indexShape[size_t(d)] == 1)
      continue;
    llvm::SmallVector<int64_t> offsets, offsetShape(size_t(rank), 1);
    offsetShape[size_t(d)] = indexShape[size_t(d)];
    for (int64_t i = 0; i < indexShape[size_t(d)]; ++i)
      offsets.push_back(i * strides[size_t(d)]);
    flat = ctx.create<AddOp>(
        {flat, ctx.constant(HostTensor::fromInts(ElemKind::I64, offsetShape, offsets))});
  }
  return flat ? ctx.create<WhereOp>({outside, ctx.scalar(double(numel), i64), flat}) : Value();
}

/// The row of data viewed as [prod(shape[:k]), prod(shape[k:])] that each k-tuple in the last
/// dimension of `indices` addresses (GatherND, ScatterND): the sum of its wrapped entries
/// times the strides of data's first k dimensions; a tuple with an entry out of range becomes
/// the row count, one past the rows. Shaped like indices without its last dimension.
Value tupleFlatIndex(NodeContext &ctx, Value indices, llvm::ArrayRef<int64_t> shape) {
  llvm::ArrayRef<int64_t> indexShape = shapeOf(indices);
  const int64_t k = indexShape.back();
  llvm::SmallVector<int64_t> strides = stridesOf(shape.take_front(size_t(k)));
  int64_t rows = 1;
  for (int64_t d = 0; d < k; ++d)
    rows *= shape[size_t(d)];
  llvm::SmallVector<int64_t> batch(indexShape.drop_back());
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value all = ctx.cast(indices, i64), outside, flat;
  for (int64_t j = 0; j < k && all; ++j) {
    Value part = k == 1 ? all : sliceAlong(ctx, all, int64_t(indexShape.size()) - 1, j, j + 1, 1);
    part = part ? ctx.reshape(part, batch) : Value();
    part = part ? wrapIndex(ctx, part, shape[size_t(j)], outside) : Value();
    if (part && strides[size_t(j)] != 1)
      part = ctx.create<MulOp>({part, ctx.scalar(double(strides[size_t(j)]), i64)});
    flat = !part ? Value() : flat ? ctx.create<AddOp>({flat, part}) : part;
    if (!flat)
      return Value();
  }
  return flat ? ctx.create<WhereOp>({outside, ctx.scalar(double(rows), i64), flat}) : Value();
}

/// The normalised axis of GatherElements and ScatterElements, after checking their indices:
/// data's rank (>= 1), each dimension but the axis at most data's, and data not empty.
std::optional<int64_t> elementAxis(NodeContext &ctx, RankedTensorType type,
                                   RankedTensorType indexType) {
  const int64_t rank = type.getRank();
  if (rank == 0 || indexType.getRank() != rank) {
    (void)ctx.error("data and indices must have the same rank >= 1");
    return std::nullopt;
  }
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), rank);
  for (int64_t d = 0; axis && d < rank; ++d)
    if (d != *axis && indexType.getDimSize(d) > type.getDimSize(d)) {
      (void)ctx.error("indices dimension " + llvm::Twine(d) + " (" +
                      llvm::Twine(indexType.getDimSize(d)) + ") exceeds data's (" +
                      llvm::Twine(type.getDimSize(d)) + ")");
      return std::nullopt;
    }
  if (axis && type.getNumElements() == 0) {
    (void)ctx.unsupported("empty data");
    return std::nullopt;
  }
  return axis;
}

/// GatherElements (torch.gather): result[i...] = data[i... with i_axis = indices[i...]], the
/// result shaped like indices (each of its other dimensions at most data's). One plait.gather
/// from data flattened at elementFlatIndex, so the gradient is gather's: a scatter-add of the
/// result's gradient into data, duplicates summed in index order.
LogicalResult importGatherElements(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  if (!indexType)
    return failure();
  auto axis = elementAxis(ctx, type, indexType);
  if (!axis)
    return failure();
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value flatIndex = indices ? elementFlatIndex(ctx, indices, type.getShape(), *axis) : Value();
  Value flat = flatIndex ? ctx.reshape(data, {type.getNumElements()}) : Value();
  return ctx.setResult(flat ? ctx.create<GatherOp>({flat, flatIndex}, {ctx.i64Attr("axis", 0)})
                            : Value());
}

/// Checks GatherND's and ScatterND's indices: rank >= 1, a last dimension k of 1 to data's
/// rank (batch_dims 0 only); returns k or nullopt after an error.
std::optional<int64_t> tupleLength(NodeContext &ctx, RankedTensorType type,
                                   RankedTensorType indexType, int64_t batchDims = 0) {
  if (indexType.getRank() < 1 || indexType.getShape().back() < 1 ||
      indexType.getShape().back() > type.getRank() - batchDims) {
    (void)ctx.error("indices' last dimension must be 1 to data's rank " +
                    llvm::Twine(type.getRank()) +
                    (batchDims ? " minus batch_dims " + llvm::Twine(batchDims) : llvm::Twine()));
    return std::nullopt;
  }
  if (type.getNumElements() == 0) {
    (void)ctx.unsupported("empty data");
    return std::nullopt;
  }
  return indexType.getShape().back();
}

/// GatherND: each k-tuple of indices picks the slice data[b..., i_0, ..., i_k-1], where b... are
/// the tuple's first batch_dims indices (its position in indices' batch dimensions). One
/// plait.gather of rows from data viewed as [batches * prod(shape[b:b+k]), rest], at the
/// tuple's row within its batch plus the batch's first row, reshaped to indices.shape[:-1] +
/// data.shape[b+k:]. A tuple out of range reads one past the data (the gather reports it).
LogicalResult importGatherND(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  if (!indexType)
    return failure();
  const int64_t batchDims = ctx.intAttr("batch_dims", 0);
  if (batchDims < 0 || batchDims >= std::min(type.getRank(), indexType.getRank()))
    return ctx.error("batch_dims " + llvm::Twine(batchDims) +
                     " must be below the ranks of data and indices");
  llvm::ArrayRef<int64_t> shape = type.getShape();
  if (shape.take_front(size_t(batchDims)) != indexType.getShape().take_front(size_t(batchDims)))
    return ctx.error("data and indices must agree on their first " + llvm::Twine(batchDims) +
                     " (batch) dimensions");
  auto k = tupleLength(ctx, type, indexType, batchDims);
  if (!k)
    return failure();
  int64_t batches = 1, rows = 1;
  for (int64_t d = 0; d < batchDims; ++d)
    batches *= shape[size_t(d)];
  for (int64_t d = batchDims; d < batchDims + *k; ++d)
    rows *= shape[size_t(d)];
  const int64_t rest = type.getNumElements() / (batches * rows);
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value row = indices ? tupleFlatIndex(ctx, indices, shape.drop_front(size_t(batchDims)))
                      : Value();
  if (row && batchDims > 0) {
    // The batch's first row, broadcast over the tuples of a batch; an out-of-range tuple
    // (row == rows) still reads one past all of the data.
    Type i64 = IntegerType::get(ctx.context(), 64);
    llvm::SmallVector<int64_t> offsetShape(shapeOf(row).size(), 1), offsets;
    for (int64_t d = 0; d < batchDims; ++d)
      offsetShape[size_t(d)] = shape[size_t(d)];
    for (int64_t b = 0; b < batches; ++b)
      offsets.push_back(b * rows);
    Value offset = ctx.constant(HostTensor::fromInts(ElemKind::I64, offsetShape, offsets));
    Value outside = ctx.create<EqualOp>({row, ctx.scalar(double(rows), i64)});
    Value shifted = outside ? ctx.create<AddOp>({row, offset}) : Value();
    row = shifted ? ctx.create<WhereOp>({outside, ctx.scalar(double(batches * rows), i64),
                                         shifted})
                  : Value();
  }
  Value table = row ? ctx.reshape(data, {batches * rows, rest}) : Value();
  Value picked = table ? ctx.create<GatherOp>({table, row}, {ctx.i64Attr("axis", 0)}) : Value();
  llvm::SmallVector<int64_t> outShape(indexType.getShape().drop_back());
  llvm::append_range(outShape, shape.drop_front(size_t(batchDims + *k)));
  return ctx.setResult(picked ? ctx.reshape(picked, outShape) : Value());
}

/// ScatterElements and ScatterND: data with `updates` scattered into it at flat rows `row`
/// of data viewed as `table` ([rows, rest]; rest 1 for ScatterElements). reduction "add"
/// adds the scatter-add of the updates (plait.gather_grad) to data; "none" replaces the
/// written elements by it, so an element written twice gets the sum of its updates where
/// ONNX leaves the outcome undefined. Into constant zeros, both are the scatter-add alone.
/// Gradients: through gather_grad (a gather of the output's gradient) and the where.
LogicalResult scatterInto(NodeContext &ctx, RankedTensorType type, Value data, Value row,
                          Value updates, llvm::ArrayRef<int64_t> table) {
  std::string reduction = ctx.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add") // mul: scatterMultiply
    return ctx.unsupported("reduction '" + reduction + "'");
  llvm::SmallVector<int64_t> grouped(shapeOf(row));
  grouped.push_back(table[1]);
  RankedTensorType tableType = RankedTensorType::get(table, type.getElementType());
  Value u = ctx.reshape(updates, grouped);
  Value scattered = u ? ctx.create<GatherGradOp>({u, row}, {ctx.i64Attr("axis", 0)}, tableType)
                      : Value();
  scattered = scattered ? ctx.reshape(scattered, type.getShape()) : Value();
  if (!scattered)
    return failure();
  // Into zeros (PyTorch's export of scatter_add): the scatter-add is the result, its
  // unwritten elements already 0.
  const HostTensor *folded = ctx.foldedInput(0);
  bool zeros = folded != nullptr;
  for (int64_t i = 0; zeros && i < (folded->isSplat() ? 1 : folded->numElements()); ++i)
    zeros = folded->getDouble(i) == 0;
  if (zeros)
    return ctx.setResult(scattered);
  if (reduction == "add")
    return ctx.setResult(ctx.create<AddOp>({data, scattered}));
  Value ones = ctx.constant(
      HostTensor::splat(*kindOf(type.getElementType()), grouped, 1.0));
  Value counts = ctx.create<GatherGradOp>({ones, row}, {ctx.i64Attr("axis", 0)}, tableType);
  counts = counts ? ctx.reshape(counts, type.getShape()) : Value();
  Value written = counts ? ctx.create<GreaterOp>({counts, ctx.scalar(0, type.getElementType())})
                         : Value();
  return ctx.setResult(written ? ctx.create<WhereOp>({written, scattered, data}) : Value());
}

/// The table row of each update of a ScatterND (`k` >= 1: the k-tuples in indices' last
/// dimension, rows of data viewed as [prod(shape[:k]), rest]) or of a ScatterElements (`k` 0:
/// each index along `axis`, rows of the flat data), from indices known at import; nullopt
/// after the error of an index out of range.
std::optional<std::vector<int64_t>> knownScatterRows(NodeContext &ctx, const HostTensor &indices,
                                                     llvm::ArrayRef<int64_t> shape, int64_t k,
                                                     int64_t axis) {
  llvm::ArrayRef<int64_t> indexShape = indices.shape();
  const int64_t count = k ? indices.numElements() / k : indices.numElements();
  llvm::SmallVector<int64_t> strides = stridesOf(k ? shape.take_front(size_t(k)) : shape);
  llvm::SmallVector<int64_t> indexStrides = stridesOf(indexShape);
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t u = 0; u < count; ++u) {
    int64_t row = 0;
    for (int64_t d = 0; d < (k ? k : int64_t(shape.size())); ++d) {
      // ScatterND: the tuple's entry d; ScatterElements: along the axis the update's index,
      // elsewhere its own coordinate d.
      const bool indexed = k || d == axis;
      const int64_t i = k         ? indices.getInt(u * k + d)
                        : indexed ? indices.getInt(u)
                                  : (u / indexStrides[size_t(d)]) % indexShape[size_t(d)];
      const int64_t extent = shape[size_t(d)];
      if (indexed && (i < -extent || i >= extent)) {
        (void)ctx.error("indices entry " + llvm::Twine(i) + " is out of range for dimension " +
                        llvm::Twine(d) + " of " + llvm::Twine(extent));
        return std::nullopt;
      }
      row += (i < 0 ? i + extent : i) * strides[size_t(d)];
    }
    rows[size_t(u)] = row;
  }
  return rows;
}

/// The most times a reduction 'mul' may write one row (scatterMultiply's rounds, some 6 ops
/// each).
constexpr int64_t kMaxScatterMulRounds = 4096;

/// ScatterElements (`k` 0, along `axis`) and ScatterND (k-tuples) with reduction "mul", from
/// the node's indices, which must be known at import (knownScatterRows): data viewed as
/// `table` ([rows, rest]) multiplied by each update in turn, as ONNX's reference
/// applies them (in index order). Updates are taken in rounds, each the next update of every
/// row it writes, so that no round writes a row twice: a round's factor is its updates
/// scattered into zeros (plait.gather_grad) plus 1 on the rows it leaves alone (1 minus a
/// scatter of ones), and the product data * factor_1 * factor_2 * ... is exactly the
/// reference's. Trains through the products, the gathers and their scatter-adds.
LogicalResult scatterMultiply(NodeContext &ctx, RankedTensorType type, int64_t k, int64_t axis,
                              llvm::ArrayRef<int64_t> table) {
  const HostTensor *indices = ctx.requireConstInput(1, "indices");
  auto known = indices ? knownScatterRows(ctx, *indices, type.getShape(), k, axis) : std::nullopt;
  Value data = known ? ctx.input(0) : Value(), updates = data ? ctx.input(2) : Value();
  if (!updates)
    return failure();
  const std::vector<int64_t> &rows = *known;
  const int64_t count = int64_t(rows.size());
  Type element = type.getElementType();
  ElemKind kind = *kindOf(element);
  // round[j]: how many earlier updates write update j's row.
  std::vector<int64_t> round(static_cast<size_t>(count));
  std::map<int64_t, int64_t> seen;
  int64_t rounds = 0;
  for (int64_t j = 0; j < count; ++j) {
    round[size_t(j)] = seen[rows[size_t(j)]]++;
    rounds = std::max(rounds, round[size_t(j)] + 1);
  }
  if (rounds > kMaxScatterMulRounds)
    return ctx.unsupported("reduction 'mul' writing one element " + llvm::Twine(rounds) +
                           " times (at most " + llvm::Twine(kMaxScatterMulRounds) + ")");
  Value u = ctx.reshape(updates, {count, table[1]});
  Value result = u ? ctx.reshape(data, table) : Value();
  Value one = ctx.scalar(1.0, element);
  std::map<llvm::SmallVector<int64_t>, Value> untouchedBy;
  for (int64_t r = 0; r < rounds && result; ++r) {
    llvm::SmallVector<int64_t> picks, targets;
    for (int64_t j = 0; j < count; ++j)
      if (round[size_t(j)] == r) {
        picks.push_back(j);
        targets.push_back(rows[size_t(j)]);
      }
    const int64_t n = int64_t(picks.size());
    auto axis0 = ctx.i64Attr("axis", 0);
    Value mine =
        n == count
            ? u
            : ctx.create<GatherOp>(
                  {u, ctx.constant(HostTensor::fromInts(ElemKind::I64, {n}, picks))}, {axis0});
    Value at = ctx.constant(HostTensor::fromInts(ElemKind::I64, {n}, targets));
    Value scattered = mine && at ? ctx.create<GatherGradOp>({mine, at}, {axis0},
                                                            RankedTensorType::get(table, element))
                                 : Value();
    // 1 on the rows the round leaves, 0 on those it writes (1 minus a scatter of ones): once
    // per set of rows (a row written many times is many rounds of that one row).
    Value &untouched = untouchedBy[targets];
    if (!untouched && scattered) {
      Value written =
          ctx.create<GatherGradOp>({ctx.constant(HostTensor::splat(kind, {n, 1}, 1.0)), at},
                                   {axis0}, RankedTensorType::get({table[0], 1}, element));
      untouched = written ? ctx.create<SubOp>({one, written}) : Value();
    }
    Value factor = untouched ? ctx.create<AddOp>({scattered, untouched}) : Value();
    result = factor ? ctx.create<MulOp>({result, factor}) : Value();
  }
  return ctx.setResult(result ? ctx.reshape(result, type.getShape()) : Value());
}

/// ScatterElements (torch.scatter / scatter_add): updates shaped like indices written into
/// data at elementFlatIndex (reduction none or add), or multiplying it (mul, from indices
/// known at import: scatterMultiply).
LogicalResult importScatterElements(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  RankedTensorType updateType = indexType ? ctx.inputType(2) : RankedTensorType();
  if (!updateType || failed(ctx.requireFloatInput(0)))
    return failure();
  auto axis = elementAxis(ctx, type, indexType);
  if (!axis)
    return failure();
  if (updateType.getShape() != indexType.getShape())
    return ctx.error("updates must have indices' shape");
  if (ctx.stringAttr("reduction", "none") == "mul")
    return scatterMultiply(ctx, type, 0, *axis, {type.getNumElements(), 1});
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value updates = indices ? ctx.input(2) : Value();
  Value flat = updates ? elementFlatIndex(ctx, indices, type.getShape(), *axis) : Value();
  if (!flat)
    return failure();
  return scatterInto(ctx, type, data, flat, updates, {type.getNumElements(), 1});
}

/// ScatterND: each k-tuple of indices addresses a slice of data, replaced by (added to,
/// multiplied by: scatterMultiply) the matching slice of updates (indices.shape[:-1] +
/// data.shape[k:]).
LogicalResult importScatterND(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  RankedTensorType updateType = indexType ? ctx.inputType(2) : RankedTensorType();
  if (!updateType || failed(ctx.requireFloatInput(0)))
    return failure();
  auto k = tupleLength(ctx, type, indexType);
  if (!k)
    return failure();
  llvm::SmallVector<int64_t> expected(indexType.getShape().drop_back());
  llvm::append_range(expected, type.getShape().drop_front(size_t(*k)));
  if (updateType.getShape() != llvm::ArrayRef<int64_t>(expected))
    return ctx.error("updates must have indices' shape without its last dimension, then "
                     "data's after the first " + llvm::Twine(*k));
  int64_t rows = 1;
  for (int64_t d = 0; d < *k; ++d)
    rows *= type.getDimSize(d);
  if (ctx.stringAttr("reduction", "none") == "mul")
    return scatterMultiply(ctx, type, *k, 0, {rows, type.getNumElements() / rows});
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value updates = indices ? ctx.input(2) : Value();
  Value row = updates ? tupleFlatIndex(ctx, indices, type.getShape()) : Value();
  if (!row)
    return failure();
  return scatterInto(ctx, type, data, row, updates, {rows, type.getNumElements() / rows});
}

/// ReverseSequence: the data viewed as [batch, time, rest] (a transpose first when time is axis
/// 0); in batch row b, time t < lens[b] reads time lens[b] - 1 - t and later times read
/// themselves. One gather of rows of [batch * time, rest] at b * time + that time, so it trains
/// through the gather. A length beyond the time axis reads out of the data, which the gather
/// reports at run time.
LogicalResult importReverseSequence(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType lensType = type ? ctx.inputType(1) : RankedTensorType();
  if (!lensType)
    return failure();
  const int64_t timeAxis = ctx.intAttr("time_axis", 0), batchAxis = ctx.intAttr("batch_axis", 1);
  if (type.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  if (timeAxis < 0 || timeAxis > 1 || batchAxis < 0 || batchAxis > 1 || timeAxis == batchAxis)
    return ctx.error("time_axis and batch_axis must be 0 and 1, one each");
  llvm::ArrayRef<int64_t> shape = type.getShape();
  const int64_t batch = shape[size_t(batchAxis)], time = shape[size_t(timeAxis)];
  if (lensType.getRank() != 1 || lensType.getDimSize(0) != batch ||
      !lensType.getElementType().isInteger(64))
    return ctx.error("sequence_lens must be int64 [" + llvm::Twine(batch) + "]");
  if (type.getNumElements() == 0)
    return ctx.unsupported("empty input");
  Value x = ctx.input(0), lens = x ? ctx.input(1) : Value();
  if (!lens)
    return failure();
  const AxisMove timeSecond = moveAxis(type.getRank(), timeAxis, 1); // [batch, time, ...]
  x = timeSecond.apply(ctx, x);
  const int64_t rest = type.getNumElements() / (batch * time);
  Value table = x ? ctx.reshape(x, {batch * time, rest}) : Value();
  llvm::SmallVector<int64_t> iota, bases;
  for (int64_t t = 0; t < time; ++t)
    iota.push_back(t);
  for (int64_t b = 0; b < batch; ++b)
    bases.push_back(b * time);
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value t = ctx.constant(HostTensor::fromInts(ElemKind::I64, {1, time}, iota));
  Value base = ctx.constant(HostTensor::fromInts(ElemKind::I64, {batch, 1}, bases));
  Value len = table ? ctx.reshape(lens, {batch, 1}) : Value();
  Value inside = len ? ctx.create<LessOp>({t, len}) : Value();
  Value last = inside ? ctx.create<SubOp>({len, ctx.scalar(1.0, i64)}) : Value();
  Value reversed = last ? ctx.create<SubOp>({last, t}) : Value();
  Value at = reversed ? ctx.create<WhereOp>({inside, reversed, t}) : Value(); // [batch, time]
  Value row = at ? ctx.create<AddOp>({at, base}) : Value();
  Value picked = row ? ctx.create<GatherOp>({table, row}, {ctx.i64Attr("axis", 0)}) : Value();
  Value y = picked ? ctx.reshape(picked, timeSecond.shape(shape)) : Value();
  return ctx.setResult(timeSecond.undo(ctx, y));
}

/// TopK (always sorted, which sorted=0 allows): the indices from plait.top_k along the axis
/// moved last (a heap of K per row on the CPU, K block-wide selections on CUDA: any K and
/// axis length), the values gathered from the flattened input at those indices, so their
/// gradient is a scatter-add into the input. Ties keep the lower index first, as ONNX asks;
/// NaN is larger than every number, as in torch.topk.
LogicalResult importTopK(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  if (!isa<FloatType>(type.getElementType()) &&
      !(isa<IntegerType>(type.getElementType()) && !type.getElementType().isInteger(1)))
    return ctx.unsupported("TopK of " + kindName(*kindOf(type.getElementType())) + " values");
  auto kValues = ctx.requireIntsInput(1, "K");
  if (!kValues)
    return failure();
  const int64_t rank = type.getRank();
  if (rank < 1)
    return ctx.error("X must have rank >= 1");
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", -1), rank);
  if (!axis)
    return failure();
  if (kValues->size() != 1)
    return ctx.error("K must hold one value");
  const int64_t n = type.getDimSize(*axis), k = (*kValues)[0];
  if (k < 0 || k > n)
    return ctx.error("K " + llvm::Twine(k) + " is not in [0, " + llvm::Twine(n) + "], the size "
                     "of axis " + llvm::Twine(*axis));
  const bool largest = ctx.intAttr("largest", 1) != 0;
  Value x = ctx.input(0);
  if (!x)
    return failure();
  // The axis last: [rows, n].
  const AxisMove last = moveAxis(rank, *axis, rank - 1);
  const int64_t rows = type.getNumElements() / std::max<int64_t>(n, 1);
  Value moved = last.apply(ctx, x);
  Value flatRows = moved ? ctx.reshape(moved, {rows, n}) : moved;
  if (!flatRows)
    return failure();
  Value indices = ctx.create<TopKOp>({flatRows}, {ctx.i64Attr("k", k),
                                                   ctx.boolAttr("largest", largest)}); // [rows, k]
  // Values: gathered from the rows flattened, at row * n + index.
  llvm::SmallVector<int64_t> offsets;
  for (int64_t r = 0; r < rows; ++r)
    offsets.push_back(r * n);
  Value flatAt = indices ? ctx.create<AddOp>(
                               {indices, ctx.constant(HostTensor::fromInts(ElemKind::I64,
                                                                           {rows, 1}, offsets))})
                         : Value();
  Value flat = flatAt ? ctx.reshape(flatRows, {rows * n}) : Value();
  Value values = flat ? ctx.create<GatherOp>({flat, flatAt}, {ctx.i64Attr("axis", 0)})
                      : Value(); // [rows, k]
  if (!values)
    return failure();
  llvm::SmallVector<int64_t> outShape = last.shape(type.getShape());
  outShape.back() = k;
  auto restore = [&](Value v) { return last.undo(ctx, ctx.reshape(v, outShape)); };
  Value outValues = restore(values), outIndices = outValues ? restore(indices) : Value();
  if (!outIndices)
    return failure();
  ctx.setOutput(0, outValues);
  ctx.setOutput(1, outIndices);
  return success();
}

} // namespace

void registerIndexingOps(OpImporterMap &map) {
  map["GatherElements"] = importGatherElements;
  map["GatherND"] = importGatherND;
  map["ScatterElements"] = importScatterElements;
  map["ScatterND"] = importScatterND;
  map["TopK"] = importTopK;
  map["ReverseSequence"] = importReverseSequence;
}

} // namespace plait::onnx_import
