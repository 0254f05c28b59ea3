// Importers of ONNX's data-movement and shape ops: Reshape and friends, Transpose, Expand, Tile,
// Concat, Split, Slice, Pad, Gather, the shape queries and constant sources. Shape operands must
// be compile-time constants; results computed only from constants are folded.
#include "compiler/import/onnx/Importer.h"
#include "ir/ShapeRules.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// A shape operand as written in the model, e.g. "[5, -1]" (shapes of values print as "2x6").
std::string listStr(llvm::ArrayRef<int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

/// Normalises `axis` against `rank` or reports it.
std::optional<int64_t> normalizedAxis(NodeContext &ctx, int64_t axis, int64_t rank,
                                      llvm::StringRef what = "axis") {
  auto norm = normalizeAxis(axis, rank);
  if (!norm)
    (void)ctx.error(what + " " + llvm::Twine(axis) + " is out of range for rank " +
                    llvm::Twine(rank));
  return norm;
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

/// `x` sliced along one dimension `d` (start, end, step normalised as plait.slice wants).
Value sliceAlong(NodeContext &ctx, Value x, int64_t d, int64_t start, int64_t end, int64_t step) {
  llvm::ArrayRef<int64_t> shape = shapeOf(x);
  llvm::SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  starts[d] = start;
  ends[d] = end;
  steps[d] = step;
  return ctx.create<SliceOp>({x}, {ctx.arrayAttr("starts", starts), ctx.arrayAttr("ends", ends),
                                   ctx.arrayAttr("steps", steps)});
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
  return ctx.setResult(ctx.create<GatherOp>({data, indices}, {ctx.i64Attr("axis", *axis)}));
}

/// Wraps i64 `idx` (negative counting from the end of `extent`) and reports in `outside`
/// which entries are not in [-extent, extent). Null after an error.
Value wrapIndex(NodeContext &ctx, Value idx, int64_t extent, Value &outside) {
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value negative = ctx.create<LessOp>({idx, ctx.scalar(0, i64)});
  Value wrapped = negative ? ctx.create<AddOp>({idx, ctx.scalar(double(extent), i64)}) : Value();
  idx = wrapped ? ctx.create<WhereOp>({negative, wrapped, idx}) : Value();
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
                                   RankedTensorType indexType) {
  if (ctx.intAttr("batch_dims", 0) != 0) {
    (void)ctx.unsupported("batch_dims " + llvm::Twine(ctx.intAttr("batch_dims", 0)));
    return std::nullopt;
  }
  if (indexType.getRank() < 1 || indexType.getShape().back() < 1 ||
      indexType.getShape().back() > type.getRank()) {
    (void)ctx.error("indices' last dimension must be 1 to data's rank " +
                    llvm::Twine(type.getRank()));
    return std::nullopt;
  }
  if (type.getNumElements() == 0) {
    (void)ctx.unsupported("empty data");
    return std::nullopt;
  }
  return indexType.getShape().back();
}

/// GatherND (batch_dims 0): each k-tuple of indices picks the slice data[i_0, ..., i_k-1];
/// one plait.gather of rows from data viewed as [prod(shape[:k]), rest], reshaped to
/// indices.shape[:-1] + data.shape[k:].
LogicalResult importGatherND(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  RankedTensorType indexType = type ? ctx.inputType(1) : RankedTensorType();
  if (!indexType)
    return failure();
  auto k = tupleLength(ctx, type, indexType);
  if (!k)
    return failure();
  llvm::ArrayRef<int64_t> shape = type.getShape();
  int64_t rows = 1;
  for (int64_t d = 0; d < *k; ++d)
    rows *= shape[size_t(d)];
  const int64_t rest = type.getNumElements() / rows;
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value row = indices ? tupleFlatIndex(ctx, indices, shape) : Value();
  Value table = row ? ctx.reshape(data, {rows, rest}) : Value();
  Value picked = table ? ctx.create<GatherOp>({table, row}, {ctx.i64Attr("axis", 0)}) : Value();
  llvm::SmallVector<int64_t> outShape(indexType.getShape().drop_back());
  llvm::append_range(outShape, shape.drop_front(size_t(*k)));
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
  if (reduction != "none" && reduction != "add")
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

/// ScatterElements (torch.scatter / scatter_add): updates shaped like indices written into
/// data at elementFlatIndex (reduction none or add).
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
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value updates = indices ? ctx.input(2) : Value();
  Value flat = updates ? elementFlatIndex(ctx, indices, type.getShape(), *axis) : Value();
  if (!flat)
    return failure();
  return scatterInto(ctx, type, data, flat, updates, {type.getNumElements(), 1});
}

/// ScatterND: each k-tuple of indices addresses a slice of data, replaced by (or added to)
/// the matching slice of updates (indices.shape[:-1] + data.shape[k:]).
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
  Value data = ctx.input(0), indices = data ? ctx.input(1) : Value();
  Value updates = indices ? ctx.input(2) : Value();
  Value row = updates ? tupleFlatIndex(ctx, indices, type.getShape()) : Value();
  if (!row)
    return failure();
  return scatterInto(ctx, type, data, row, updates, {rows, type.getNumElements() / rows});
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// One axis of a Resize: each output coordinate's taps (data indices, edge-clamped) and their
/// weights, `taps` per coordinate, and whether it takes the extrapolation value instead.
struct ResizeAxis {
  int64_t taps = 0;
  llvm::SmallVector<int64_t> index;  // out x taps
  llvm::SmallVector<double> weight;  // out x taps
  llvm::SmallVector<bool> extrapolate; // out
};

/// `v` as printf's %g writes it (for diagnostics).
std::string shortDouble(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

struct ResizeMode {
  std::string mode, transform, nearest;
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false;
};

/// The taps of one axis of `in` elements resized to `out` at `scale`, as ONNX's reference
/// (onnx/backend/test/case/node/resize.py, which made the conformance data) computes each
/// output coordinate: its source coordinate x by the transformation mode (with the resized
/// length scale * in, not rounded); ratio = x - floor(x), or 1 when x is whole; the mode's
/// coefficients of that ratio (nearest: 0/1, linear: 2, cubic: 4); and the coefficients'
/// points: the nearest indices to x in the data edge-padded by ceil(taps / 2), ties to the
/// smaller. exclude_outside zeroes the coefficients of padding and renormalises.
ResizeAxis resizeAxis(const ResizeMode &m, int64_t in, int64_t out, double scale,
                      double roiStart, double roiEnd) {
  ResizeAxis axis;
  const int64_t n = m.mode == "cubic" ? 4 : 2, pad = (n + 1) / 2, limit = in + 2 * pad;
  axis.taps = n;
  const double resized = scale * double(in), last = double(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    const double y = double(o);
    double x = 0;
    if (m.transform == "align_corners")
      x = resized == 1 ? 0 : y * last / (resized - 1);
    else if (m.transform == "asymmetric")
      x = y / scale;
    else if (m.transform == "tf_crop_and_resize")
      x = (resized == 1 ? (roiEnd - roiStart) * last / 2
                        : y * (roiEnd - roiStart) * last / (resized - 1)) +
          roiStart * last;
    else if (m.transform == "pytorch_half_pixel")
      x = resized == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    else if (m.transform == "tf_half_pixel_for_nn")
      x = (y + 0.5) / scale;
    else // half_pixel
      x = (y + 0.5) / scale - 0.5;
    const bool outside = m.transform == "tf_crop_and_resize" && (x < 0 || x > last);
    axis.extrapolate.push_back(outside);
    const double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
    double coeff[4] = {};
    if (m.mode == "cubic") {
      const double a = m.cubicA, r = ratio, s = 1 - ratio;
      coeff[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
      coeff[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
      coeff[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
      coeff[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
    } else if (m.mode == "linear") {
      coeff[0] = 1 - ratio;
      coeff[1] = ratio;
    } else {
      bool up = true; // a whole x and ceil: the upper neighbour, which is x itself
      if (ratio != 1.0) {
        if (m.nearest == "round_prefer_floor")
          up = ratio > 0.5;
        else if (m.nearest == "round_prefer_ceil")
          up = ratio >= 0.5;
        else if (m.nearest == "floor")
          up = false;
      }
      coeff[0] = up ? 0 : 1;
      coeff[1] = up ? 1 : 0;
    }
    // The n nearest padded indices to x + pad: they lie within n of x clamped to the range.
    const double xp = x + double(pad);
    const double clamped = std::min(std::max(xp, 0.0), double(limit - 1));
    const int64_t from = std::max<int64_t>(0, int64_t(std::floor(clamped)) - n);
    const int64_t to = std::min<int64_t>(limit - 1, int64_t(std::floor(clamped)) + n);
    llvm::SmallVector<int64_t, 16> near;
    for (int64_t c = from; c <= to; ++c)
      near.push_back(c);
    std::stable_sort(near.begin(), near.end(), [&](int64_t a, int64_t b) {
      return std::fabs(xp - double(a)) < std::fabs(xp - double(b));
    });
    near.resize(size_t(n));
    std::sort(near.begin(), near.end());
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = near[size_t(k)] - pad;
      if (m.excludeOutside && (idx < 0 || idx >= in))
        coeff[k] = 0;
      sum += coeff[k];
    }
    for (int64_t k = 0; k < n; ++k) {
      axis.index.push_back(std::min(std::max<int64_t>(near[size_t(k)] - pad, 0), in - 1));
      axis.weight.push_back(outside ? 0.0 : m.excludeOutside ? coeff[k] / sum : coeff[k]);
    }
  }
  return axis;
}

/// Applies one axis's taps to x along `axis`: one gather when every coordinate takes one
/// point whole (nearest, or whole source coordinates), else the sum of a gather per tap
/// times its weights, then the extrapolation value where it applies. Null after an error.
Value applyResizeAxis(NodeContext &ctx, Value x, int64_t axis, const ResizeAxis &r,
                      double extrapolation) {
  RankedTensorType type = llvm::cast<RankedTensorType>(x.getType());
  const int64_t out = int64_t(r.extrapolate.size()), rank = type.getRank();
  std::optional<ElemKind> kind = kindOf(type.getElementType());
  if (!kind) {
    (void)ctx.unsupported("element type of the data");
    return Value();
  }
  llvm::SmallVector<int64_t> along(size_t(rank), 1);
  along[size_t(axis)] = out;
  auto gatherAt = [&](llvm::ArrayRef<int64_t> index) {
    return ctx.create<GatherOp>({x, ctx.constant(HostTensor::fromInts(ElemKind::I64, {out},
                                                                       index))},
                                {ctx.i64Attr("axis", axis)});
  };
  // Each coordinate's one point taken whole, if it has one.
  llvm::SmallVector<int64_t> single;
  for (int64_t o = 0; o < out; ++o) {
    int64_t pick = -1;
    for (int64_t k = 0; k < r.taps; ++k) {
      double w = r.weight[size_t(o * r.taps + k)];
      if (w == 0)
        continue;
      pick = pick == -1 && w == 1 ? r.index[size_t(o * r.taps + k)] : -2;
    }
    if (pick < 0 && !r.extrapolate[size_t(o)])
      break;
    single.push_back(std::max<int64_t>(pick, 0));
  }
  Value y;
  if (int64_t(single.size()) == out) {
    y = gatherAt(single);
  } else {
    for (int64_t k = 0; k < r.taps; ++k) {
      llvm::SmallVector<int64_t> index;
      llvm::SmallVector<double> weight;
      bool any = false, ones = true;
      for (int64_t o = 0; o < out; ++o) {
        index.push_back(r.index[size_t(o * r.taps + k)]);
        weight.push_back(r.weight[size_t(o * r.taps + k)]);
        any |= weight.back() != 0;
        ones &= weight.back() == 1;
      }
      if (!any)
        continue;
      Value term = gatherAt(index);
      if (term && !ones)
        term = ctx.create<MulOp>({term, ctx.constant(HostTensor::fromDoubles(*kind, along,
                                                                             weight))});
      y = !term ? Value() : y ? ctx.create<AddOp>({y, term}) : term;
      if (!y)
        return Value();
    }
    if (!y) // every coordinate extrapolated
      y = gatherAt(llvm::SmallVector<int64_t>(size_t(out), 0));
  }
  if (y && llvm::is_contained(r.extrapolate, true)) {
    llvm::SmallVector<int64_t> mask(r.extrapolate.begin(), r.extrapolate.end());
    Value where = ctx.constant(HostTensor::fromInts(ElemKind::Bool, along, mask));
    y = ctx.create<WhereOp>({where, ctx.scalar(extrapolation, type.getElementType()), y});
  }
  return y;
}

/// Resize (opset 13): nearest, linear and cubic, every coordinate transformation mode,
/// scales or sizes (and roi) as compile-time constants. Each resized axis becomes gathers of
/// constant indices and weighted sums (ResizeAxis), innermost axis first as ONNX's reference
/// computes; its gradient is the gathers' scatter-adds of the weighted gradient.
LogicalResult importResize(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  ResizeMode m;
  m.mode = ctx.stringAttr("mode", "nearest");
  m.transform = ctx.stringAttr("coordinate_transformation_mode", "half_pixel");
  m.nearest = ctx.stringAttr("nearest_mode", "round_prefer_floor");
  m.cubicA = ctx.floatAttr("cubic_coeff_a", -0.75);
  m.excludeOutside = ctx.intAttr("exclude_outside", 0) != 0;
  m.extrapolation = ctx.floatAttr("extrapolation_value", 0.0);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    return ctx.unsupported("mode '" + m.mode + "'");
  static const char *const kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                            "asymmetric", "tf_half_pixel_for_nn",
                                            "tf_crop_and_resize"};
  if (!llvm::is_contained(kTransforms, m.transform))
    return ctx.unsupported("coordinate_transformation_mode '" + m.transform + "'");
  if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" &&
      m.nearest != "floor" && m.nearest != "ceil")
    return ctx.unsupported("nearest_mode '" + m.nearest + "'");
  if (m.mode != "nearest" && failed(ctx.requireFloatInput(0)))
    return failure();
  const int64_t rank = type.getRank();
  llvm::SmallVector<double> scales;
  if (ctx.hasInput(2)) {
    const HostTensor *t = ctx.requireConstInput(2, "scales");
    if (!t)
      return failure();
    for (int64_t i = 0; i < t->numElements(); ++i)
      scales.push_back(t->getDouble(i));
  }
  llvm::SmallVector<int64_t> sizes;
  if (ctx.hasInput(3)) {
    auto t = ctx.requireIntsInput(3, "sizes");
    if (!t)
      return failure();
    sizes = *t;
  }
  if (scales.empty() == sizes.empty())
    return ctx.error("exactly one of scales and sizes must be given");
  if ((!scales.empty() && int64_t(scales.size()) != rank) ||
      (!sizes.empty() && int64_t(sizes.size()) != rank))
    return ctx.error((scales.empty() ? "sizes" : "scales") + llvm::Twine(" needs ") +
                     llvm::Twine(rank) + " entries, one per dimension");
  llvm::SmallVector<double> roi(size_t(2 * rank), 0.0);
  for (int64_t d = 0; d < rank; ++d)
    roi[size_t(rank + d)] = 1.0;
  if (m.transform == "tf_crop_and_resize") {
    const HostTensor *t = ctx.hasInput(1) ? ctx.requireConstInput(1, "roi") : nullptr;
    if (!t)
      return ctx.hasInput(1) ? failure() : ctx.error("tf_crop_and_resize needs roi");
    if (t->numElements() != 2 * rank)
      return ctx.error("roi needs " + llvm::Twine(2 * rank) + " entries (starts, then ends)");
    for (int64_t i = 0; i < 2 * rank; ++i)
      roi[size_t(i)] = t->getDouble(i);
  }
  constexpr int64_t kMaxAxis = int64_t(1) << 20; // the taps are constants in the plan
  llvm::SmallVector<int64_t> outShape;
  llvm::SmallVector<double> scale;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in = type.getDimSize(d);
    double s = 0;
    int64_t out = 0;
    if (!sizes.empty()) {
      out = sizes[size_t(d)];
      s = in > 0 ? double(out) / double(in) : 0;
    } else {
      s = scales[size_t(d)];
      if (!(s > 0) || !(s * double(in) < double(kMaxAxis)))
        return ctx.error("scale " + llvm::Twine(shortDouble(s)) + " of dimension " + llvm::Twine(d) +
                         " must be > 0 and give at most 2^20 elements");
      out = int64_t(s * double(in));
    }
    if (out < 1 || out > kMaxAxis || in < 1)
      return ctx.error("dimension " + llvm::Twine(d) + " would resize " + llvm::Twine(in) +
                       " elements to " + llvm::Twine(out) + " (1 to 2^20 each)");
    outShape.push_back(out);
    scale.push_back(s);
  }
  Value y = ctx.input(0);
  for (int64_t d = rank - 1; d >= 0 && y; --d) {
    const int64_t in = type.getDimSize(d), out = outShape[size_t(d)];
    ResizeAxis r = resizeAxis(m, in, out, scale[size_t(d)], roi[size_t(d)],
                              roi[size_t(rank + d)]);
    bool identity = out == in && !llvm::is_contained(r.extrapolate, true);
    for (int64_t o = 0; identity && o < out; ++o)
      for (int64_t k = 0; k < r.taps; ++k) {
        double w = r.weight[size_t(o * r.taps + k)];
        identity &= w == 0 || (w == 1 && r.index[size_t(o * r.taps + k)] == o);
      }
    if (!identity)
      y = applyResizeAxis(ctx, y, d, r, m.extrapolation);
  }
  return ctx.setResult(y);
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
    return ctx.unsupported("training-mode Dropout (random masks); export the model in eval mode");
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
  Value negative = idx ? ctx.create<LessOp>({idx, ctx.scalar(0, i64)}) : Value();
  Value wrapped = negative ? ctx.create<AddOp>({idx, ctx.scalar(depth, i64)}) : Value();
  idx = wrapped ? ctx.create<WhereOp>({negative, wrapped, idx}) : Value();
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

} // namespace

void registerTensorOps(OpImporterMap &map) {
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
  map["GatherElements"] = importGatherElements;
  map["GatherND"] = importGatherND;
  map["ScatterElements"] = importScatterElements;
  map["ScatterND"] = importScatterND;
  map["Resize"] = importResize;
  map["Dropout"] = importDropout;
  map["Trilu"] = importTrilu;
  map["DepthToSpace"] = importDepthToSpace;
  map["SpaceToDepth"] = importSpaceToDepth;
  map["OneHot"] = importOneHot;
}

} // namespace plait::onnx_import
