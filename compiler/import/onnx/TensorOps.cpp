// Importers of ONNX's data-movement and shape ops: Reshape and friends, Transpose, Expand, Tile,
// Concat, Split, Slice, Pad, Gather, the shape queries and constant sources. Shape operands must
// be compile-time constants; results computed only from constants are folded.
#include "codegen/schema/DropoutMask.h"
#include "compiler/import/onnx/Importer.h"
#include "ir/ShapeRules.h"

#include <cmath>

using namespace mlir;

namespace plait::onnx_import {

std::optional<int64_t> normalizedAxis(NodeContext &ctx, int64_t axis, int64_t rank,
                                      llvm::StringRef what) {
  auto norm = normalizeAxis(axis, rank);
  if (!norm)
    (void)ctx.error(what + " " + llvm::Twine(axis) + " is out of range for rank " +
                    llvm::Twine(rank));
  return norm;
}

Value sliceAlong(NodeContext &ctx, Value x, int64_t d, int64_t start, int64_t end, int64_t step) {
  llvm::ArrayRef<int64_t> shape = shapeOf(x);
  llvm::SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  starts[d] = start;
  ends[d] = end;
  steps[d] = step;
  return ctx.create<SliceOp>({x}, {ctx.arrayAttr("starts", starts), ctx.arrayAttr("ends", ends),
                                   ctx.arrayAttr("steps", steps)});
}

AxisMove moveAxis(int64_t rank, int64_t axis, int64_t to) {
  AxisMove m;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      m.perm.push_back(d);
  m.perm.insert(m.perm.begin() + to, axis);
  m.inverse.assign(size_t(rank), 0);
  for (int64_t d = 0; d < rank; ++d)
    m.inverse[size_t(m.perm[size_t(d)])] = d;
  m.moves = axis != to;
  return m;
}

Value AxisMove::apply(NodeContext &ctx, Value x) const {
  return x && moves ? ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", perm)}) : x;
}

Value AxisMove::undo(NodeContext &ctx, Value x) const {
  return x && moves ? ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", inverse)}) : x;
}

llvm::SmallVector<int64_t> AxisMove::shape(llvm::ArrayRef<int64_t> in) const {
  llvm::SmallVector<int64_t> out;
  for (int64_t d : perm)
    out.push_back(in[size_t(d)]);
  return out;
}

Value wrapNegativeIndex(NodeContext &ctx, Value idx, int64_t extent) {
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value negative = ctx.create<LessOp>({idx, ctx.scalar(0, i64)});
  Value wrapped = negative ? ctx.create<AddOp>({idx, ctx.scalar(double(extent), i64)}) : Value();
  return wrapped ? ctx.create<WhereOp>({negative, wrapped, idx}) : Value();
}

namespace {

/// A shape operand as written in the model, e.g. "[5, -1]" (shapes of values print as "2x6").
std::string listStr(llvm::ArrayRef<int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Reshape family
//===----------------------------------------------------------------------===//

/// Output = input 0 with `shape` (validated by the caller).
LogicalResult reshapeTo(NodeContext &ctx, llvm::ArrayRef<int64_t> shape) {
  if (const HostTensor *x = ctx.foldedInput(0)) {
    ctx.setOutput(0, x->reshaped(shape));
    return success();
  }
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.reshape(x, shape) : Value());
}

LogicalResult importReshape(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  auto requested = ctx.requireIntsInput(1, "shape");
  if (!requested)
    return failure();
  bool allowZero = ctx.intAttr("allowzero", 0) != 0;
  llvm::SmallVector<int64_t> shape;
  std::optional<size_t> inferred;
  for (auto [i, d] : llvm::enumerate(*requested)) {
    if (d == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return ctx.error("shape " + listStr(*requested) + " copies dimension " + llvm::Twine(i) +
                         " of a rank-" + llvm::Twine(type.getRank()) + " input");
      d = type.getDimSize(i);
    } else if (d == -1) {
      if (inferred)
        return ctx.error("shape " + listStr(*requested) + " has more than one -1");
      inferred = i;
      shape.push_back(1);
      continue;
    } else if (d < -1) {
      return ctx.error("shape " + listStr(*requested) + " has a negative dimension");
    }
    shape.push_back(d);
  }
  int64_t known = numElementsOf(shape); // the -1 counts as 1 here; saturates on overflow
  int64_t total = type.getNumElements();
  if (inferred) {
    if (allowZero && llvm::is_contained(*requested, 0))
      return ctx.error("shape " + listStr(*requested) + " has both 0 (allowzero) and -1");
    if (known == 0 || total % known != 0)
      return ctx.error("cannot reshape " + shapeToString(type.getShape()) + " to " +
                       listStr(*requested));
    shape[*inferred] = total / known;
  } else if (known != total) {
    return ctx.error("cannot reshape " + shapeToString(type.getShape()) + " (" + llvm::Twine(total) +
                     " elements) to " + listStr(shape));
  }
  return reshapeTo(ctx, shape);
}

LogicalResult importFlatten(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t rank = type.getRank(), axis = ctx.intAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + llvm::Twine(axis) + " is out of range for rank " +
                     llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  int64_t outer = numElementsOf(type.getShape().take_front(axis));
  int64_t inner = numElementsOf(type.getShape().drop_front(axis));
  return reshapeTo(ctx, {outer, inner});
}

LogicalResult importSqueeze(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t rank = type.getRank();
  llvm::SmallVector<bool> drop(rank, false);
  if (ctx.hasInput(1) || ctx.hasAttr("axes")) {
    auto axes = ctx.intsInputOrAttr(1, "axes");
    if (!axes)
      return failure();
    for (int64_t a : *axes) {
      auto norm = normalizedAxis(ctx, a, rank);
      if (!norm)
        return failure();
      if (type.getDimSize(*norm) != 1)
        return ctx.error("cannot squeeze dimension " + llvm::Twine(a) + " of size " +
                         llvm::Twine(type.getDimSize(*norm)));
      drop[*norm] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = type.getDimSize(d) == 1;
  }
  llvm::SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      shape.push_back(type.getDimSize(d));
  return reshapeTo(ctx, shape);
}

LogicalResult importUnsqueeze(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  auto axesOr = ctx.intsInputOrAttr(1, "axes");
  if (!axesOr)
    return failure();
  llvm::SmallVector<int64_t> axes = std::move(*axesOr);
  int64_t outRank = type.getRank() + static_cast<int64_t>(axes.size());
  llvm::SmallVector<bool> inserted(outRank, false);
  for (int64_t a : axes) {
    auto norm = normalizedAxis(ctx, a, outRank);
    if (!norm)
      return failure();
    if (inserted[*norm])
      return ctx.error("axis " + llvm::Twine(a) + " is repeated");
    inserted[*norm] = true;
  }
  llvm::SmallVector<int64_t> shape;
  int64_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(inserted[d] ? 1 : type.getDimSize(next++));
  return reshapeTo(ctx, shape);
}

//===----------------------------------------------------------------------===//
// Transpose, Expand, Tile
//===----------------------------------------------------------------------===//

LogicalResult importTranspose(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  llvm::SmallVector<int64_t> perm = ctx.intsAttr("perm");
  if (!ctx.hasAttr("perm"))
    for (int64_t d = type.getRank() - 1; d >= 0; --d)
      perm.push_back(d);
  llvm::SmallVector<bool> seen(type.getRank(), false);
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return ctx.error("perm has " + llvm::Twine(perm.size()) + " entries for rank " +
                     llvm::Twine(type.getRank()));
  for (int64_t &p : perm) {
    if (p < 0)
      p += type.getRank();
    if (p < 0 || p >= type.getRank() || seen[p])
      return ctx.error("perm is not a permutation");
    seen[p] = true;
  }
  if (const HostTensor *x = ctx.foldedInput(0)) {
    ctx.setOutput(0, foldTranspose(*x, perm));
    return success();
  }
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", perm)})
                          : Value());
}

LogicalResult importExpand(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  auto requested = ctx.requireIntsInput(1, "shape");
  if (!requested)
    return failure();
  auto shape = broadcastShapes(type.getShape(), *requested);
  if (!shape || llvm::any_of(*requested, [](int64_t d) { return d < 0; }))
    return ctx.error("cannot expand " + shapeToString(type.getShape()) + " to " +
                     listStr(*requested));
  const HostTensor *x = ctx.foldedInput(0);
  if (numElementsOf(*shape) > kMaxTensorElements)
    return ctx.error("cannot expand to " + listStr(*shape) + ": too many elements");
  if (x && (x->isSplat() || x->numElements() == 1 || fitsFolding(*shape))) {
    ctx.setOutput(0, foldBroadcastTo(*x, *shape));
    return success();
  }
  Value v = ctx.input(0);
  return ctx.setResult(v ? ctx.broadcastTo(v, *shape) : Value());
}

/// Tile as reshape [1, d0, 1, d1, ...] -> broadcast [r0, d0, r1, d1, ...] -> reshape.
LogicalResult importTile(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  auto repeats = ctx.requireIntsInput(1, "repeats");
  if (!repeats)
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return ctx.error("repeats has " + llvm::Twine(repeats->size()) + " entries for rank " +
                     llvm::Twine(type.getRank()));
  llvm::SmallVector<int64_t> interleaved, broadcast, result;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t r = (*repeats)[d];
    if (r < 0)
      return ctx.error("repeats must be >= 0");
    if (r > 0 && type.getDimSize(d) > kMaxTensorElements / r)
      return ctx.error("tiling gives too many elements");
    interleaved.append({1, type.getDimSize(d)});
    broadcast.append({r, type.getDimSize(d)});
    result.push_back(r * type.getDimSize(d));
  }
  if (numElementsOf(result) > kMaxTensorElements)
    return ctx.error("tiling to " + listStr(result) + " gives too many elements");
  const HostTensor *x = ctx.foldedInput(0);
  if (x && fitsFolding(result)) {
    ctx.setOutput(0, foldBroadcastTo(x->reshaped(interleaved), broadcast).reshaped(result));
    return success();
  }
  Value v = ctx.input(0);
  if (!v)
    return failure();
  Value r = ctx.reshape(v, interleaved);
  r = r ? ctx.broadcastTo(r, broadcast) : Value();
  return ctx.setResult(r ? ctx.reshape(r, result) : Value());
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice, Pad, Gather
//===----------------------------------------------------------------------===//

LogicalResult importConcat(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("needs at least one input");
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    if (!ctx.hasInput(i))
      return ctx.error("input #" + llvm::Twine(i) + " is empty");
  RankedTensorType first = ctx.inputType(0);
  if (!first)
    return failure();
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), first.getRank());
  if (!axis)
    return failure();
  int64_t total = 0;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    RankedTensorType t = ctx.inputType(i);
    if (!t)
      return failure();
    if (t.getRank() > *axis)
      total += t.getDimSize(*axis);
  }
  llvm::SmallVector<int64_t> outShape(first.getShape());
  outShape[*axis] = total;
  if (ctx.allInputsFolded() && fitsFolding(outShape)) {
    llvm::SmallVector<const HostTensor *> inputs;
    for (unsigned i = 0; i < ctx.numInputs(); ++i) {
      const HostTensor *t = ctx.foldedInput(i);
      if (t->rank() != first.getRank() || t->kind() != ctx.foldedInput(0)->kind())
        return ctx.error("inputs differ in rank or element type");
      for (int64_t d = 0; d < t->rank(); ++d)
        if (d != *axis && t->shape()[d] != first.getDimSize(d))
          return ctx.error("inputs differ in dimension " + llvm::Twine(d));
      inputs.push_back(t);
    }
    ctx.setOutput(0, foldConcat(inputs, *axis));
    return success();
  }
  llvm::SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  if (inputs.size() == 1)
    return ctx.setResult(inputs[0]);
  return ctx.setResult(ctx.create<ConcatOp>(inputs, {ctx.i64Attr("axis", *axis)}));
}

LogicalResult importSplit(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  int64_t dim = type.getDimSize(*axis);
  unsigned n = ctx.numOutputs();
  llvm::SmallVector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    auto given = ctx.requireIntsInput(1, "split");
    if (!given)
      return failure();
    sizes = *given;
  } else if (ctx.hasAttr("split")) {
    sizes = ctx.intsAttr("split");
  } else if (ctx.hasAttr("num_outputs")) {
    int64_t parts = ctx.intAttr("num_outputs", n);
    if (parts < 1 || parts != static_cast<int64_t>(n))
      return ctx.error("num_outputs must equal the number of outputs");
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, std::max<int64_t>(left, 0)));
  } else {
    if (n == 0 || dim % n != 0)
      return ctx.error("dimension " + llvm::Twine(dim) + " does not split evenly into " +
                       llvm::Twine(n) + " outputs");
    sizes.assign(n, dim / n);
  }
  if (sizes.size() != n)
    return ctx.error("split has " + llvm::Twine(sizes.size()) + " sizes for " + llvm::Twine(n) +
                     " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return ctx.error("split sizes must be >= 0");
    total += s;
  }
  if (total != dim)
    return ctx.error("split sizes add up to " + llvm::Twine(total) + ", the dimension is " +
                     llvm::Twine(dim));
  if (const HostTensor *x = ctx.foldedInput(0)) {
    llvm::SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
        steps(type.getRank(), 1);
    for (unsigned i = 0; i < n; ++i) {
      ends[*axis] = starts[*axis] + sizes[i];
      ctx.setOutput(i, foldSlice(*x, starts, ends, steps));
      starts[*axis] = ends[*axis];
    }
    return success();
  }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  if (n == 1)
    return ctx.setResult(x);
  Operation *op = ctx.createOp(SplitOp::getOperationName(), {x},
                               {ctx.i64Attr("axis", *axis), ctx.arrayAttr("sizes", sizes)}, {}, n);
  if (!op)
    return failure();
  for (unsigned i = 0; i < n; ++i)
    ctx.setOutput(i, op->getResult(i));
  return success();
}

LogicalResult importSlice(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t rank = type.getRank();
  auto starts = ctx.requireIntsInput(1, "starts");
  auto ends = starts ? ctx.requireIntsInput(2, "ends") : std::nullopt;
  if (!ends)
    return failure();
  llvm::SmallVector<int64_t> axes, steps;
  if (ctx.hasInput(3)) {
    auto given = ctx.requireIntsInput(3, "axes");
    if (!given)
      return failure();
    axes = *given;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (ctx.hasInput(4)) {
    auto given = ctx.requireIntsInput(4, "steps");
    if (!given)
      return failure();
    steps = *given;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return ctx.error("starts, ends, axes and steps differ in length");

  // Normalise per the ONNX rules into plait.slice's form: one (start, end, step) per dimension.
  llvm::SmallVector<int64_t> b(rank, 0), e(type.getShape()), s(rank, 1);
  llvm::SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizedAxis(ctx, axes[i], rank);
    if (!axis)
      return failure();
    if (seen[*axis])
      return ctx.error("axis " + llvm::Twine(axes[i]) + " is repeated");
    seen[*axis] = true;
    int64_t n = type.getDimSize(*axis), step = steps[i];
    if (step == 0)
      return ctx.error("step of axis " + llvm::Twine(axes[i]) + " is 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += n;
    if (end < 0)
      end += n;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, n);
      end = std::clamp<int64_t>(end, 0, n);
      end = std::max(end, start);
    } else {
      start = std::clamp<int64_t>(start, 0, n - 1);
      end = std::clamp<int64_t>(end, -1, n - 1);
      end = std::min(end, start);
      if (n == 0)
        start = end = -1;
    }
    b[*axis] = start;
    e[*axis] = end;
    s[*axis] = step;
  }
  if (const HostTensor *x = ctx.foldedInput(0)) {
    ctx.setOutput(0, foldSlice(*x, b, e, s));
    return success();
  }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  bool identity = llvm::all_of(s, [](int64_t v) { return v == 1; }) &&
                  llvm::all_of(b, [](int64_t v) { return v == 0; }) &&
                  llvm::ArrayRef<int64_t>(e) == type.getShape();
  if (identity)
    return ctx.setResult(x);
  return ctx.setResult(ctx.create<SliceOp>({x}, {ctx.arrayAttr("starts", b),
                                                  ctx.arrayAttr("ends", e),
                                                  ctx.arrayAttr("steps", s)}));
}

/// Pad in reflect or edge mode: per dimension, concatenate the mirrored (reflect) or repeated
/// (edge) border slices around the input.
LogicalResult padBySlices(NodeContext &ctx, llvm::ArrayRef<int64_t> pads, bool reflect) {
  Value v = ctx.input(0);
  if (!v)
    return failure();
  int64_t rank = shapeOf(v).size();
  for (int64_t d = 0; d < rank && v; ++d) {
    int64_t before = pads[d], after = pads[d + rank], n = shapeOf(v)[d];
    if (before < 0 || after < 0)
      return ctx.unsupported("negative pads with mode='" +
                             std::string(reflect ? "reflect" : "edge") + "'");
    if (before == 0 && after == 0)
      continue;
    if (reflect ? std::max(before, after) > n - 1 : n == 0)
      return ctx.error("cannot pad dimension " + llvm::Twine(d) + " of size " + llvm::Twine(n) +
                       " by " + llvm::Twine(std::max(before, after)) + " in " +
                       (reflect ? "reflect" : "edge") + " mode");
    llvm::SmallVector<Value> parts;
    auto edge = [&](int64_t at, int64_t count) {
      Value one = sliceAlong(ctx, v, d, at, at + 1, 1);
      llvm::SmallVector<int64_t> shape(shapeOf(v));
      shape[d] = count;
      return one ? ctx.broadcastTo(one, shape) : Value();
    };
    if (before > 0)
      parts.push_back(reflect ? sliceAlong(ctx, v, d, before, 0, -1) : edge(0, before));
    parts.push_back(v);
    if (after > 0)
      parts.push_back(reflect ? sliceAlong(ctx, v, d, n - 2, n - 2 - after, -1) : edge(n - 1, after));
    if (llvm::is_contained(parts, Value()))
      return failure();
    v = ctx.create<ConcatOp>(parts, {ctx.i64Attr("axis", d)});
  }
  return ctx.setResult(v);
}

LogicalResult importPad(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  std::string mode = ctx.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.unsupported("attribute mode='" + mode + "' (plait pads in constant, reflect and "
                                                       "edge modes)");
  int64_t rank = type.getRank();
  auto given = ctx.requireIntsInput(1, "pads");
  if (!given)
    return failure();
  llvm::SmallVector<int64_t> pads(2 * rank, 0);
  if (ctx.hasInput(3)) { // axes (opset 18 form)
    auto axes = ctx.requireIntsInput(3, "axes");
    if (!axes)
      return failure();
    if (given->size() != 2 * axes->size())
      return ctx.error("pads needs two entries per axis");
    for (size_t i = 0; i < axes->size(); ++i) {
      auto axis = normalizedAxis(ctx, (*axes)[i], rank);
      if (!axis)
        return failure();
      pads[*axis] = (*given)[i];
      pads[*axis + rank] = (*given)[i + axes->size()];
    }
  } else {
    if (static_cast<int64_t>(given->size()) != 2 * rank)
      return ctx.error("pads has " + llvm::Twine(given->size()) + " entries for rank " +
                       llvm::Twine(rank));
    pads = *given;
  }
  double value = 0.0;
  if (ctx.hasInput(2)) {
    const HostTensor *v = ctx.requireConstInput(2, "constant_value");
    if (!v)
      return failure();
    if (v->numElements() != 1)
      return ctx.error("constant_value must hold one value");
    value = v->getDouble(0);
  }
  if (mode != "constant")
    return padBySlices(ctx, pads, mode == "reflect");
  // Negative pads crop: pad the positive parts, then slice the negative ones away.
  llvm::SmallVector<int64_t> grow(2 * rank), starts(rank), ends(rank), steps(rank, 1), padded(rank);
  bool crops = false;
  for (int64_t d = 0; d < rank; ++d) {
    grow[d] = std::max<int64_t>(pads[d], 0);
    grow[d + rank] = std::max<int64_t>(pads[d + rank], 0);
    padded[d] = type.getDimSize(d) + grow[d] + grow[d + rank];
    starts[d] = -std::min<int64_t>(pads[d], 0);
    ends[d] = padded[d] + std::min<int64_t>(pads[d + rank], 0);
    if (ends[d] < starts[d])
      return ctx.error("pads crop dimension " + llvm::Twine(d) + " below zero");
    crops |= pads[d] < 0 || pads[d + rank] < 0;
  }
  bool grows = llvm::any_of(grow, [](int64_t p) { return p > 0; });
  const HostTensor *x = ctx.foldedInput(0);
  if (numElementsOf(padded) > kMaxTensorElements)
    return ctx.error("padding gives too many elements");
  if (x && fitsFolding(padded)) {
    HostTensor r = grows ? foldPad(*x, grow, value) : *x;
    ctx.setOutput(0, crops ? foldSlice(r, starts, ends, steps) : r);
    return success();
  }
  Value v = ctx.input(0);
  if (v && grows)
    v = ctx.create<PadOp>({v}, {ctx.arrayAttr("pads", grow), ctx.f64Attr("value", value)});
  if (v && crops)
    v = ctx.create<SliceOp>({v}, {ctx.arrayAttr("starts", starts), ctx.arrayAttr("ends", ends),
                                  ctx.arrayAttr("steps", steps)});
  return ctx.setResult(v);
}

LogicalResult importGather(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  if (!indexType)
    return failure();
  if (type.getRank() == 0)
    return ctx.error("data must have rank >= 1");
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  llvm::SmallVector<int64_t> outShape(type.getShape().take_front(*axis));
  llvm::append_range(outShape, indexType.getShape());
  llvm::append_range(outShape, type.getShape().drop_front(*axis + 1));
  if (ctx.foldedInput(0) && ctx.foldedInput(1) && fitsFolding(outShape))
    return ctx.setFolded(0, foldGather(*ctx.foldedInput(0), *ctx.foldedInput(1), *axis));
  Value data = ctx.input(0), indices = ctx.input(1);
  if (!data || !indices)
    return failure();
  llvm::SmallVector<NamedAttribute> attrs{ctx.i64Attr("axis", *axis)};
  // --padding-idx: an embedding table's padding row (the export drops nn.Embedding's).
  if (auto padding = ctx.paddingIdx(ctx.inputName(0)); padding && data.getDefiningOp<ParamOp>()) {
    if (*axis != 0)
      return ctx.error("--padding-idx " + ctx.inputName(0) + "=" + llvm::Twine(*padding) +
                       ": the Gather is along axis " + llvm::Twine(*axis) +
                       ", not the table's rows (axis 0)");
    if (*padding < -type.getDimSize(0) || *padding >= type.getDimSize(0))
      return ctx.error("--padding-idx " + ctx.inputName(0) + "=" + llvm::Twine(*padding) +
                       ": not a row of a table of " + llvm::Twine(type.getDimSize(0)));
    attrs.push_back(ctx.i64Attr("padding_idx", *padding));
  }
  return ctx.setResult(ctx.create<GatherOp>({data, indices}, attrs));
}

/// Dropout in training mode: x times plait.dropout_mask, drawn afresh every step (the
/// plait.hyper "step" it reads) from the node's `seed` attribute and a stream of its own
/// (dropout::streamOf its output's name, unique in the graph). The optional mask output is mask != 0.
LogicalResult importTrainingDropout(NodeContext &ctx, RankedTensorType type, double ratio) {
  if (!(ratio > 0.0 && ratio < 1.0))
    return ctx.error("ratio " + std::to_string(ratio) + " is not in [0, 1)");
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  llvm::StringRef name = ctx.outputName(0).empty() ? ctx.outputName(1) : ctx.outputName(0);
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx.context()));
  Value step = ctx.create<HyperOp>({}, {ctx.attr("name", StringAttr::get(ctx.context(), "step"))},
                                   f32Scalar);
  Value mask = step ? ctx.create<DropoutMaskOp>(
                          {step}, {ctx.f64Attr("ratio", ratio),
                                   ctx.i64Attr("seed", ctx.intAttr("seed", 0)),
                                   ctx.i64Attr("stream", dropout::streamOf(name))},
                          type)
                    : Value();
  Value y = mask ? ctx.create<MulOp>({x, mask}) : Value();
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  if (ctx.hasOutput(1)) {
    Value kept = ctx.create<GreaterOp>({mask, ctx.scalar(0.0, type.getElementType())});
    if (!kept)
      return failure();
    ctx.setOutput(1, kept);
  }
  return success();
}

LogicalResult importDropout(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  bool training = false;
  if (ctx.hasInput(2)) {
    const HostTensor *mode = ctx.requireConstInput(2, "training_mode");
    if (!mode)
      return failure();
    training = mode->numElements() == 1 && mode->getInt(0) != 0;
  }
  double ratio = 0.5;
  if (ctx.hasInput(1)) {
    const HostTensor *r = ctx.requireConstInput(1, "ratio");
    if (!r)
      return failure();
    ratio = r->numElements() == 1 ? r->getDouble(0) : ratio;
  }
  if (training && ratio != 0.0)
    return importTrainingDropout(ctx, type, ratio);
  // Inference: the output is the input and the mask keeps everything.
  if (failed(ctx.forwardInput(0, 0)))
    return failure();
  if (ctx.hasOutput(1))
    ctx.setOutput(1, HostTensor::splatInt(ElemKind::Bool, type.getShape(), 1));
  return success();
}

LogicalResult importTrilu(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  if (type.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    const HostTensor *given = ctx.requireConstInput(1, "k");
    if (!given)
      return failure();
    if (given->numElements() != 1)
      return ctx.error("k must be a scalar");
    k = given->getInt(0);
  }
  bool upper = ctx.intAttr("upper", 1) != 0;
  const HostTensor *folded = ctx.foldedInput(0);
  if (folded && fitsFolding(type.getShape())) {
    HostTensor out = folded->materialized();
    int64_t rows = type.getDimSize(type.getRank() - 2), cols = type.getDimSize(type.getRank() - 1);
    for (int64_t i = 0, n = out.numElements(); i < n; ++i) {
      int64_t col = i % cols, row = (i / cols) % rows;
      bool keep = upper ? col - row >= k : col - row <= k;
      if (!keep)
        out.setInt(i, 0);
    }
    ctx.setOutput(0, std::move(out));
    return success();
  }
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<TriluOp>({x}, {ctx.boolAttr("upper", upper),
                                                      ctx.i64Attr("k", k)})
                          : Value());
}

//===----------------------------------------------------------------------===//
// Depth/space rearrangements and OneHot
//===----------------------------------------------------------------------===//

/// reshape -> transpose -> reshape of input 0, folded when the input is a constant.
LogicalResult rearrange(NodeContext &ctx, llvm::ArrayRef<int64_t> split,
                        llvm::ArrayRef<int64_t> perm, llvm::ArrayRef<int64_t> result) {
  if (const HostTensor *x = ctx.foldedInput(0)) {
    ctx.setOutput(0, foldTranspose(x->reshaped(split), perm).reshaped(result));
    return success();
  }
  Value v = ctx.input(0);
  v = v ? ctx.reshape(v, split) : Value();
  v = v ? ctx.create<TransposeOp>({v}, {ctx.arrayAttr("perm", perm)}) : Value();
  return ctx.setResult(v ? ctx.reshape(v, result) : Value());
}

LogicalResult importDepthToSpace(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t b = ctx.intAttr("blocksize", 0);
  if (type.getRank() != 4 || b < 1 || b > type.getDimSize(1) || type.getDimSize(1) % (b * b))
    return ctx.error("needs a 4-D input whose channels divide by blocksize^2");
  int64_t n = type.getDimSize(0), c = type.getDimSize(1), h = type.getDimSize(2),
          w = type.getDimSize(3);
  llvm::SmallVector<int64_t> result{n, c / (b * b), h * b, w * b};
  if (ctx.stringAttr("mode", "DCR") == "CRD")
    return rearrange(ctx, {n, c / (b * b), b, b, h, w}, {0, 1, 4, 2, 5, 3}, result);
  return rearrange(ctx, {n, b, b, c / (b * b), h, w}, {0, 3, 4, 1, 5, 2}, result);
}

LogicalResult importSpaceToDepth(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  int64_t b = ctx.intAttr("blocksize", 0);
  if (type.getRank() != 4 || b < 1 || b > type.getDimSize(2) || b > type.getDimSize(3) ||
      type.getDimSize(2) % b || type.getDimSize(3) % b)
    return ctx.error("needs a 4-D input whose height and width divide by blocksize");
  int64_t n = type.getDimSize(0), c = type.getDimSize(1), h = type.getDimSize(2),
          w = type.getDimSize(3);
  return rearrange(ctx, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4},
                   {n, c * b * b, h / b, w / b});
}

/// OneHot: where(unsqueeze(indices, axis) == range(depth), on, off), negative indices wrapped.
LogicalResult importOneHot(NodeContext &ctx) {
  RankedTensorType indexType = ctx.inputType(0);
  if (!indexType)
    return failure();
  const HostTensor *depthT = ctx.requireConstInput(1, "depth");
  const HostTensor *valuesT = depthT ? ctx.requireConstInput(2, "values") : nullptr;
  if (!valuesT)
    return failure();
  if (depthT->numElements() != 1 || valuesT->numElements() != 2)
    return ctx.error("depth must be a scalar and values must hold [off, on]");
  int64_t depth = depthT->getInt(0), rank = indexType.getRank() + 1;
  if (depth < 1 || depth > kMaxFoldedElements)
    return depth < 1 ? ctx.error("depth must be >= 1")
                     : ctx.unsupported("OneHot depth over " + llvm::Twine(kMaxFoldedElements));
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", -1), rank);
  if (!axis)
    return failure();
  Value indices = ctx.input(0);
  if (!indices)
    return failure();
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value idx = ctx.cast(indices, i64);
  idx = idx ? wrapNegativeIndex(ctx, idx, depth) : Value();
  if (!idx)
    return failure();
  llvm::SmallVector<int64_t> unsqueezed(indexType.getShape()), rangeShape(rank, 1);
  unsqueezed.insert(unsqueezed.begin() + *axis, 1);
  rangeShape[*axis] = depth;
  llvm::SmallVector<int64_t> iota;
  for (int64_t i = 0; i < depth; ++i)
    iota.push_back(i);
  Value range = ctx.constant(HostTensor::fromInts(ElemKind::I64, rangeShape, iota));
  Value u = ctx.reshape(idx, unsqueezed);
  Value hot = u ? ctx.create<EqualOp>({u, range}) : Value();
  Value offV = ctx.constant(foldSlice(*valuesT, {0}, {1}, {1}).reshaped({}));
  Value onV = ctx.constant(foldSlice(*valuesT, {1}, {2}, {1}).reshaped({}));
  return ctx.setResult(hot ? ctx.create<WhereOp>({hot, onV, offV}) : Value());
}

/// Det: plait.det of the matrices in the last two axes (its gradient: plait.cofactors).
LogicalResult importDet(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return x ? ctx.setResult(ctx.create<DetOp>({x})) : failure();
}

} // namespace

void registerTensorOps(OpImporterMap &map) {
  map["Det"] = importDet;
  map["Reshape"] = importReshape;
  map["Flatten"] = importFlatten;
  map["Squeeze"] = importSqueeze;
  map["Unsqueeze"] = importUnsqueeze;
  map["Transpose"] = importTranspose;
  map["Expand"] = importExpand;
  map["Tile"] = importTile;
  map["Concat"] = importConcat;
  map["Split"] = importSplit;
  map["Slice"] = importSlice;
  map["Pad"] = importPad;
  map["Gather"] = importGather;
  map["Dropout"] = importDropout;
  map["Trilu"] = importTrilu;
  map["DepthToSpace"] = importDepthToSpace;
  map["SpaceToDepth"] = importSpaceToDepth;
  map["OneHot"] = importOneHot;
}

} // namespace plait::onnx_import
