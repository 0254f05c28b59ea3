// Control flow whose course is known at import time. plait plans one static program, so:
// - If whose condition is known at import: the branch it takes is imported in place of the
//   node. Exports of modules that branch on shapes (torch.jit.script's `if x.size(0) > 1`)
//   fold such conditions; a condition computed at run time is refused in one line that says
//   how to bind it (--const-input).
// - Loop whose iterations are known at import (a trip count M, and a condition that is absent
//   or known after every iteration), and Scan (its scan inputs' length is static): unrolled.
//   Each iteration imports the body afresh with the iteration number bound as a constant, so
//   shape arithmetic on it folds (torch.jit.script's `for i in range(x.size(0))` slicing
//   x[i]); scan outputs are stacked. The unrolled program trains as any other: a loop-carried
//   value's gradient flows back through the iterations.
// - Scan of opset 8 (batched: its inputs carry a batch axis before the sequence axis) arrives
//   as plait.legacy's BatchedScan (LegacyOpsets.cpp) and is unrolled per batch element.
#include "compiler/import/onnx/GraphImporter.h"
#include "compiler/import/onnx/LegacyOpsets.h"

#include <algorithm>

#include "onnx/onnx_pb.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

LogicalResult importIf(NodeContext &ctx) {
  // A condition computed at run time: the error says how to bind it (--const-input).
  const HostTensor *cond = ctx.requireConstInput(0, "cond");
  if (!cond)
    return failure();
  if (cond->numElements() != 1)
    return ctx.error("cond must hold one value, it holds " + llvm::Twine(cond->numElements()));
  const bool taken = cond->getInt(0) != 0;
  const char *name = taken ? "then_branch" : "else_branch";
  const onnx::AttributeProto *branch = ctx.rawAttr(name);
  if (!branch || !branch->has_g())
    return ctx.error(llvm::Twine("missing attribute ") + name);
  const onnx::GraphProto &graph = branch->g();
  if (graph.output_size() != int(ctx.numOutputs()))
    return ctx.error(llvm::Twine(name) + " has " + llvm::Twine(graph.output_size()) +
                     " outputs, the If " + llvm::Twine(ctx.numOutputs()));
  if (failed(ctx.importSubgraph(graph)))
    return failure();
  for (unsigned i = 0; i < ctx.numOutputs(); ++i)
    if (failed(ctx.forwardValue(i, graph.output(int(i)).name())))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Values of the iterations
//===----------------------------------------------------------------------===//

ValueEntry foldedEntry(NodeContext &ctx, HostTensor value) {
  return foldedEntry(std::move(value), ctx.context());
}

RankedTensorType typeOf(NodeContext &ctx, const ValueEntry &entry) {
  return entryType(entry, ctx.context());
}

/// Why an entry that is not a tensor of a supported type cannot be one.
std::string notATensor(const ValueEntry &entry) {
  return entry.kind == ValueEntry::Kind::Sequence   ? "is a sequence"
         : entry.kind == ValueEntry::Kind::Optional ? "is an optional"
                                                    : "has an unsupported type";
}

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

} // namespace

FailureOr<ValueEntry> joinEntries(NodeContext &ctx, llvm::MutableArrayRef<ValueEntry> parts,
                                  int64_t axis, bool newAxis, const llvm::Twine &what,
                                  llvm::StringRef partName) {
  RankedTensorType first = typeOf(ctx, parts[0]);
  if (!first)
    return ctx.error(what + " " + notATensor(parts[0]) + "; plait joins tensors only");
  llvm::SmallVector<int64_t> shape(first.getShape());
  if (newAxis)
    shape.insert(shape.begin() + axis, 1);
  llvm::SmallVector<int64_t> joined = shape;
  joined[axis] = 0;
  for (size_t t = 0; t < parts.size(); ++t) {
    RankedTensorType type = typeOf(ctx, parts[t]);
    bool fits = type && type.getElementType() == first.getElementType() &&
                type.getRank() == first.getRank();
    for (int64_t d = 0; fits && d < first.getRank(); ++d)
      fits = type.getDimSize(d) == first.getDimSize(d) || (!newAxis && d == axis);
    if (!fits)
      return ctx.error(what + " is " + typeString(first) + " in " + partName + " 0 but " +
                       (type ? typeString(type) : notATensor(parts[t])) + " in " + partName + " " +
                       llvm::Twine(t) + "; plait " +
                       (newAxis ? "stacks only tensors of one type"
                                : "concatenates only tensors equal but along the axis"));
    joined[axis] += newAxis ? 1 : type.getDimSize(axis);
  }
  auto partShape = [&](const ValueEntry &part) {
    llvm::SmallVector<int64_t> s = shape;
    if (!newAxis)
      s[axis] = typeOf(ctx, part).getDimSize(axis);
    return s;
  };
  if (llvm::all_of(parts, [](const ValueEntry &e) { return e.kind == ValueEntry::Kind::Folded; }) &&
      fitsFolding(joined)) {
    std::vector<HostTensor> pieces;
    pieces.reserve(parts.size());
    for (const ValueEntry &part : parts)
      pieces.push_back(part.folded->reshaped(partShape(part)));
    llvm::SmallVector<const HostTensor *> inputs;
    for (const HostTensor &piece : pieces)
      inputs.push_back(&piece);
    return foldedEntry(ctx, foldConcat(inputs, axis));
  }
  llvm::SmallVector<Value> values;
  for (ValueEntry &part : parts) {
    Value v = ctx.valueOf(part);
    v = v ? ctx.reshape(v, partShape(part)) : Value();
    if (!v)
      return failure();
    values.push_back(v);
  }
  Value result =
      values.size() == 1 ? values[0] : ctx.create<ConcatOp>(values, {ctx.i64Attr("axis", axis)});
  if (!result)
    return failure();
  return runtimeEntry(result);
}

FailureOr<llvm::SmallVector<ValueEntry>> splitEntries(NodeContext &ctx, ValueEntry x, int64_t axis,
                                                      llvm::ArrayRef<int64_t> sizes, bool squeeze) {
  RankedTensorType type = typeOf(ctx, x);
  auto pieceShape = [&](int64_t size) {
    llvm::SmallVector<int64_t> shape(type.getShape());
    if (squeeze)
      shape.erase(shape.begin() + axis);
    else
      shape[axis] = size;
    return shape;
  };
  llvm::SmallVector<ValueEntry> pieces;
  if (x.kind == ValueEntry::Kind::Folded) {
    llvm::SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
        steps(type.getRank(), 1);
    int64_t at = 0;
    for (int64_t size : sizes) {
      starts[axis] = at;
      ends[axis] = at += size;
      pieces.push_back(
          foldedEntry(ctx, foldSlice(*x.folded, starts, ends, steps).reshaped(pieceShape(size))));
    }
    return pieces;
  }
  Value v = ctx.valueOf(x);
  if (!v)
    return failure();
  llvm::SmallVector<Value> parts{v};
  if (sizes.size() > 1) {
    Operation *split = ctx.createOp(SplitOp::getOperationName(), {v},
                                    {ctx.i64Attr("axis", axis), ctx.arrayAttr("sizes", sizes)}, {},
                                    unsigned(sizes.size()));
    if (!split)
      return failure();
    parts.assign(split->result_begin(), split->result_end());
  }
  for (auto [part, size] : llvm::zip(parts, sizes)) {
    Value piece = ctx.reshape(part, pieceShape(size));
    if (!piece)
      return failure();
    pieces.push_back(runtimeEntry(piece));
  }
  return pieces;
}

namespace {

/// The iterations' values `parts` (in the order they take in the result) stacked along a new
/// axis `axis` (in [0, rank]): a Loop's or Scan's scan output, named `what` in errors.
FailureOr<ValueEntry> stack(NodeContext &ctx, llvm::MutableArrayRef<ValueEntry> parts, int64_t axis,
                            const llvm::Twine &what) {
  return joinEntries(ctx, parts, axis, /*newAxis=*/true, what, "iteration");
}

/// `x` cut along `axis` into its slices, each without that axis: a Scan's scan input.
FailureOr<llvm::SmallVector<ValueEntry>> unstack(NodeContext &ctx, ValueEntry x, int64_t axis) {
  const int64_t n = typeOf(ctx, x).getDimSize(axis);
  return splitEntries(ctx, std::move(x), axis, llvm::SmallVector<int64_t>(n, 1),
                      /*squeeze=*/true);
}

const onnx::GraphProto *bodyOf(NodeContext &ctx) {
  const onnx::AttributeProto *body = ctx.rawAttr("body");
  if (!body || !body->has_g()) {
    (void)ctx.error("missing attribute body");
    return nullptr;
  }
  return &body->g();
}

/// The most iterations of `body` plait unrolls.
int64_t maxIterations(const onnx::GraphProto &body) {
  return std::min(kMaxUnrolledSteps, kMaxUnrolledNodes / std::max(1, body.node_size()));
}

LogicalResult tooManyIterations(NodeContext &ctx, const onnx::GraphProto &body,
                                const llvm::Twine &count) {
  return ctx.error("runs " + count + " iterations, more than plait unrolls: at most " +
                   llvm::Twine(kMaxUnrolledSteps) + " iterations and " +
                   llvm::Twine(kMaxUnrolledNodes) + " body nodes in all, so " +
                   llvm::Twine(maxIterations(body)) + " of this body of " +
                   llvm::Twine(body.node_size()) + " nodes");
}

//===----------------------------------------------------------------------===//
// Loop
//===----------------------------------------------------------------------===//

LogicalResult importLoop(NodeContext &ctx) {
  const onnx::GraphProto *body = bodyOf(ctx);
  if (!body)
    return failure();
  if (ctx.numInputs() < 2)
    return ctx.error("needs the inputs M and cond (either may be empty), then the loop-carried "
                     "values");
  const int carried = int(ctx.numInputs()) - 2;
  if (body->input_size() != carried + 2)
    return ctx.error("body has " + llvm::Twine(body->input_size()) + " inputs; with " +
                     llvm::Twine(carried) + " loop-carried values it needs " +
                     llvm::Twine(carried + 2) +
                     " (the iteration number, the condition, then the values)");
  if (body->output_size() < carried + 1)
    return ctx.error("body has " + llvm::Twine(body->output_size()) + " outputs; with " +
                     llvm::Twine(carried) + " loop-carried values it needs at least " +
                     llvm::Twine(carried + 1) + " (the condition, then the values)");
  const int scans = body->output_size() - 1 - carried;
  if (int(ctx.numOutputs()) > carried + scans)
    return ctx.error("has " + llvm::Twine(ctx.numOutputs()) + " outputs; its body gives " +
                     llvm::Twine(carried) + " loop-carried values and " + llvm::Twine(scans) +
                     " scan outputs");

  std::optional<int64_t> tripCount;
  if (ctx.hasInput(0)) {
    const HostTensor *m = ctx.requireConstInput(0, "M (the trip count)");
    if (!m)
      return failure();
    if (m->numElements() != 1 || m->isFloat())
      return ctx.error("M must be one integer");
    tripCount = std::max<int64_t>(0, m->getInt(0)); // for (i = 0; i < M; ++i)
  }
  const bool conditioned = ctx.hasInput(1);
  bool cond = true;
  if (conditioned) {
    const HostTensor *c = ctx.requireConstInput(1, "cond");
    if (!c)
      return failure();
    if (c->numElements() != 1)
      return ctx.error("cond must hold one value, it holds " + llvm::Twine(c->numElements()));
    cond = c->getInt(0) != 0;
  }
  if (!tripCount && !conditioned)
    return ctx.error("has neither a trip count M nor a condition, so it never ends");
  const int64_t limit = maxIterations(*body);
  if (!conditioned && *tripCount > limit)
    return tooManyIterations(ctx, *body, llvm::Twine(*tripCount));

  llvm::SmallVector<ValueEntry> state;
  for (int k = 0; k < carried; ++k) {
    const ValueEntry *entry = ctx.inputEntry(unsigned(2 + k));
    if (!entry)
      return failure();
    state.push_back(*entry);
  }
  std::vector<llvm::SmallVector<ValueEntry>> scanned(scans);
  int64_t i = 0;
  for (; cond && (!tripCount || i < *tripCount); ++i) {
    if (i == limit)
      return tooManyIterations(ctx, *body, "more than " + llvm::Twine(limit));
    llvm::SmallVector<ValueEntry> inputs;
    inputs.push_back(foldedEntry(ctx, HostTensor::splatInt(ElemKind::I64, {}, i)));
    inputs.push_back(foldedEntry(ctx, HostTensor::splatInt(ElemKind::Bool, {}, 1)));
    inputs.append(state.begin(), state.end());
    auto iterate = [&](llvm::MutableArrayRef<ValueEntry> outs) -> LogicalResult {
      if (conditioned) {
        const ValueEntry &c = outs[0];
        const std::string &name = body->output(0).name();
        if (c.kind != ValueEntry::Kind::Folded) {
          std::string hint = ctx.bindingHint(name);
          return ctx.error("the condition its body computes ('" + name +
                           "') is known only at run time (iteration " + llvm::Twine(i) +
                           "), so plait cannot unroll the loop" +
                           (hint.empty() ? "" : "; " + hint));
        }
        if (c.folded->numElements() != 1)
          return ctx.error("the condition its body computes ('" + name + "') holds " +
                           llvm::Twine(c.folded->numElements()) + " values, not one");
        cond = c.folded->getInt(0) != 0;
      }
      state.assign(outs.begin() + 1, outs.begin() + 1 + carried);
      for (int k = 0; k < scans; ++k)
        scanned[k].push_back(outs[1 + carried + k]);
      return success();
    };
    if (failed(ctx.importBody(*body, inputs, iterate)))
      return failure();
  }
  ctx.countUnrolled(/*scan=*/false, i, body->node_size());
  for (int k = 0; k < carried; ++k)
    ctx.setOutputEntry(unsigned(k), state[k]);
  for (int k = 0; k < scans; ++k) {
    if (!ctx.hasOutput(unsigned(carried + k)))
      continue;
    const std::string what = "scan output '" + body->output(1 + carried + k).name() + "'";
    if (i == 0)
      return ctx.error("runs no iteration, so its " + what +
                       " would be empty, and plait plans no empty tensors");
    auto stacked = stack(ctx, scanned[k], 0, what);
    if (failed(stacked))
      return failure();
    ctx.setOutputEntry(unsigned(carried + k), std::move(*stacked));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Scan
//===----------------------------------------------------------------------===//

struct ScanSpec {
  const onnx::GraphProto *body = nullptr;
  int states = 0, scanInputs = 0, scanOutputs = 0;
  llvm::SmallVector<int64_t> inputAxes, inputDirections, outputAxes, outputDirections;
  /// Which scan outputs the node gives (the others are not stacked).
  llvm::SmallVector<bool> wanted;
};

/// One sequence: `state` the initial states, `xs` the scan inputs. Returns the final states,
/// then the stacked scan outputs (empty entries for those not wanted); adds the iterations to
/// `steps`.
FailureOr<llvm::SmallVector<ValueEntry>> runScan(NodeContext &ctx, const ScanSpec &spec,
                                                 llvm::SmallVector<ValueEntry> state,
                                                 llvm::ArrayRef<ValueEntry> xs, int64_t &steps) {
  int64_t length = -1;
  std::vector<llvm::SmallVector<ValueEntry>> slices;
  for (int j = 0; j < spec.scanInputs; ++j) {
    RankedTensorType type = typeOf(ctx, xs[j]);
    if (!type)
      return ctx.error("scan input #" + llvm::Twine(j) + " " + notATensor(xs[j]));
    auto axis = normalizedAxis(ctx, spec.inputAxes[j], type.getRank(), "scan_input_axes entry");
    if (!axis)
      return failure();
    const int64_t n = type.getDimSize(*axis);
    if (length >= 0 && n != length)
      return ctx.error("scan input #" + llvm::Twine(j) + " has " + llvm::Twine(n) +
                       " steps along its axis, scan input #0 has " + llvm::Twine(length));
    length = n;
    if (n == 0)
      return ctx.error("its scan inputs have no steps, and plait plans no empty tensors");
    if (n > maxIterations(*spec.body))
      return tooManyIterations(ctx, *spec.body, llvm::Twine(n));
    auto cut = unstack(ctx, xs[j], *axis);
    if (failed(cut))
      return failure();
    if (spec.inputDirections[j])
      std::reverse(cut->begin(), cut->end());
    slices.push_back(std::move(*cut));
  }
  steps += length;
  std::vector<llvm::SmallVector<ValueEntry>> scanned(spec.scanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    llvm::SmallVector<ValueEntry> inputs(state.begin(), state.end());
    for (int j = 0; j < spec.scanInputs; ++j)
      inputs.push_back(slices[j][t]);
    auto iterate = [&](llvm::MutableArrayRef<ValueEntry> outs) -> LogicalResult {
      state.assign(outs.begin(), outs.begin() + spec.states);
      for (int k = 0; k < spec.scanOutputs; ++k)
        scanned[k].push_back(outs[spec.states + k]);
      return success();
    };
    if (failed(ctx.importBody(*spec.body, inputs, iterate)))
      return failure();
  }
  llvm::SmallVector<ValueEntry> results(state.begin(), state.end());
  for (int k = 0; k < spec.scanOutputs; ++k) {
    if (!spec.wanted[k]) {
      results.emplace_back();
      continue;
    }
    if (spec.outputDirections[k])
      std::reverse(scanned[k].begin(), scanned[k].end());
    RankedTensorType type = typeOf(ctx, scanned[k][0]);
    const std::string what = "scan output '" + spec.body->output(spec.states + k).name() + "'";
    if (!type)
      return ctx.error(what + " has an unsupported type");
    auto axis =
        normalizedAxis(ctx, spec.outputAxes[k], type.getRank() + 1, "scan_output_axes entry");
    if (!axis)
      return failure();
    auto stacked = stack(ctx, scanned[k], *axis, what);
    if (failed(stacked))
      return failure();
    results.push_back(std::move(*stacked));
  }
  return results;
}

/// An ints attribute of one entry per `count` (default: zeros); directions must be 0 or 1.
std::optional<llvm::SmallVector<int64_t>> perEntry(NodeContext &ctx, llvm::StringRef name,
                                                   int count, bool directions) {
  if (!ctx.hasAttr(name))
    return llvm::SmallVector<int64_t>(count, 0);
  llvm::SmallVector<int64_t> values = ctx.intsAttr(name);
  if (int(values.size()) != count) {
    (void)ctx.error(name + " has " + llvm::Twine(values.size()) + " entries, not " +
                    llvm::Twine(count));
    return std::nullopt;
  }
  if (directions)
    for (int64_t d : values)
      if (d != 0 && d != 1) {
        (void)ctx.error(name + " entries must be 0 (forward) or 1 (reverse), got " +
                        llvm::Twine(d));
        return std::nullopt;
      }
  return values;
}

/// Scan (opsets 9 on) and, `batched`, Scan-8 (plait.legacy's BatchedScan): inputs
/// sequence_lens (opset 8 only), the N initial states, then the M scan inputs.
LogicalResult importScanNode(NodeContext &ctx, bool batched) {
  ScanSpec spec;
  spec.body = bodyOf(ctx);
  if (!spec.body)
    return failure();
  spec.scanInputs = int(ctx.intAttr("num_scan_inputs", -1));
  if (spec.scanInputs < 1)
    return ctx.error("num_scan_inputs must be at least 1, got " + llvm::Twine(spec.scanInputs));
  const int first = batched ? 1 : 0;
  spec.states = int(ctx.numInputs()) - first - spec.scanInputs;
  if (spec.states < 0)
    return ctx.error("has " + llvm::Twine(ctx.numInputs()) + " inputs, fewer than its " +
                     llvm::Twine(spec.scanInputs) + " scan inputs");
  if (spec.body->input_size() != spec.states + spec.scanInputs)
    return ctx.error("body has " + llvm::Twine(spec.body->input_size()) + " inputs; with " +
                     llvm::Twine(spec.states) + " states and " + llvm::Twine(spec.scanInputs) +
                     " scan inputs it needs " + llvm::Twine(spec.states + spec.scanInputs));
  if (spec.body->output_size() < spec.states)
    return ctx.error("body has " + llvm::Twine(spec.body->output_size()) +
                     " outputs, fewer than its " + llvm::Twine(spec.states) + " states");
  spec.scanOutputs = spec.body->output_size() - spec.states;
  if (int(ctx.numOutputs()) > spec.states + spec.scanOutputs)
    return ctx.error("has " + llvm::Twine(ctx.numOutputs()) + " outputs; its body gives " +
                     llvm::Twine(spec.states) + " states and " + llvm::Twine(spec.scanOutputs) +
                     " scan outputs");
  for (int k = 0; k < spec.scanOutputs; ++k)
    spec.wanted.push_back(ctx.hasOutput(unsigned(spec.states + k)));
  auto inputAxes = batched ? llvm::SmallVector<int64_t>(spec.scanInputs, 0)
                           : perEntry(ctx, "scan_input_axes", spec.scanInputs, false);
  auto inputDirections =
      perEntry(ctx, batched ? "directions" : "scan_input_directions", spec.scanInputs, true);
  auto outputAxes = batched ? llvm::SmallVector<int64_t>(spec.scanOutputs, 0)
                            : perEntry(ctx, "scan_output_axes", spec.scanOutputs, false);
  auto outputDirections = batched ? llvm::SmallVector<int64_t>(spec.scanOutputs, 0)
                                  : perEntry(ctx, "scan_output_directions", spec.scanOutputs, true);
  if (!inputAxes || !inputDirections || !outputAxes || !outputDirections)
    return failure();
  spec.inputAxes = *inputAxes;
  spec.inputDirections = *inputDirections;
  spec.outputAxes = *outputAxes;
  spec.outputDirections = *outputDirections;

  llvm::SmallVector<ValueEntry> inputs;
  for (unsigned i = unsigned(first); i < ctx.numInputs(); ++i) {
    const ValueEntry *entry = ctx.inputEntry(i);
    if (!entry)
      return failure();
    inputs.push_back(*entry);
  }
  auto states = llvm::ArrayRef<ValueEntry>(inputs).take_front(spec.states);
  auto xs = llvm::ArrayRef<ValueEntry>(inputs).drop_front(spec.states);
  llvm::SmallVector<ValueEntry> results;
  int64_t steps = 0;
  if (!batched) {
    auto ran = runScan(ctx, spec, llvm::SmallVector<ValueEntry>(states), xs, steps);
    if (failed(ran))
      return failure();
    results = std::move(*ran);
  } else {
    // Every input's axis 0 is the batch; each element's sequence is scanned on its own (its
    // sequence axis becomes axis 0) and the results stacked along the batch again.
    int64_t batch = -1;
    std::vector<llvm::SmallVector<ValueEntry>> perInput;
    for (size_t i = 0; i < inputs.size(); ++i) {
      RankedTensorType type = typeOf(ctx, inputs[i]);
      if (!type || type.getRank() < 1 + (i >= size_t(spec.states) ? 1 : 0))
        return ctx.error("input #" + llvm::Twine(first + i) +
                         " must have a batch axis (and a scan input a sequence axis)");
      if (batch >= 0 && type.getDimSize(0) != batch)
        return ctx.error("input #" + llvm::Twine(first + i) + " has a batch of " +
                         llvm::Twine(type.getDimSize(0)) + ", input #" + llvm::Twine(first) +
                         " of " + llvm::Twine(batch));
      batch = type.getDimSize(0);
      auto cut = unstack(ctx, inputs[i], 0);
      if (failed(cut))
        return failure();
      perInput.push_back(std::move(*cut));
    }
    if (batch == 0)
      return ctx.error("has an empty batch, and plait plans no empty tensors");
    const int64_t length = typeOf(ctx, xs[0]).getDimSize(1);
    if (ctx.hasInput(0)) {
      const HostTensor *lens = ctx.requireConstInput(0, "sequence_lens");
      if (!lens)
        return failure();
      if (lens->numElements() != batch)
        return ctx.error("sequence_lens holds " + llvm::Twine(lens->numElements()) +
                         " lengths for a batch of " + llvm::Twine(batch));
      for (int64_t b = 0; b < batch; ++b)
        if (lens->getInt(b) != length)
          return ctx.error("sequence " + llvm::Twine(b) + " is " + llvm::Twine(lens->getInt(b)) +
                           " steps long, not the scan inputs' " + llvm::Twine(length) +
                           "; plait scans every sequence to its full length");
    }
    std::vector<llvm::SmallVector<ValueEntry>> perOutput(spec.states + spec.scanOutputs);
    for (int64_t b = 0; b < batch; ++b) {
      llvm::SmallVector<ValueEntry> state, seq;
      for (size_t i = 0; i < inputs.size(); ++i)
        (i < size_t(spec.states) ? state : seq).push_back(perInput[i][b]);
      auto ran = runScan(ctx, spec, state, seq, steps);
      if (failed(ran))
        return failure();
      for (size_t k = 0; k < ran->size(); ++k)
        perOutput[k].push_back((*ran)[k]);
    }
    for (size_t k = 0; k < perOutput.size(); ++k) {
      if (k >= size_t(spec.states) && !spec.wanted[k - spec.states]) {
        results.emplace_back();
        continue;
      }
      auto stacked = stack(ctx, perOutput[k], 0, "output #" + llvm::Twine(k));
      if (failed(stacked))
        return failure();
      results.push_back(std::move(*stacked));
    }
  }
  ctx.countUnrolled(/*scan=*/true, steps, spec.body->node_size());
  for (size_t k = 0; k < results.size(); ++k)
    if (ctx.hasOutput(unsigned(k)))
      ctx.setOutputEntry(unsigned(k), std::move(results[k]));
  return success();
}

LogicalResult importScan(NodeContext &ctx) { return importScanNode(ctx, /*batched=*/false); }
LogicalResult importBatchedScan(NodeContext &ctx) { return importScanNode(ctx, /*batched=*/true); }

} // namespace

void registerControlFlowOps(OpImporterMap &map) {
  map["If"] = importIf;
  map["Loop"] = importLoop;
  map["Scan"] = importScan;
  map[qualifiedOpType(kLegacyDomain, "BatchedScan")] = importBatchedScan;
}

} // namespace plait::onnx_import
