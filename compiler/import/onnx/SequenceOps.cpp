// ONNX sequences whose length and order are known at import: a sequence is a list of tensor
// entries that exists only in the importer (ValueEntry::Kind::Sequence), so every position a
// node reads or writes must be known at import. That covers what torch.jit.script exports for
// a Python list: `outs: List[Tensor] = []` (SequenceEmpty), `outs.append(h)` in a loop
// (SequenceInsert in the Loop's body, unrolled: ControlFlowOps.cpp), `torch.stack(outs, 1)`
// (ConcatFromSequence), `torch.split` and `unbind` (SplitToSequence) and indexing (SequenceAt).
// Optionals are the same: empty or holding one value, known at import. A sequence or an
// optional can be a graph's input or output only as tensors: plait's plans take and return
// tensors.
#include "compiler/import/onnx/GraphImporter.h"

#include "onnx/onnx_pb.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// A position of a sequence of `n` tensors, known at import: in [-n, n) (`insert`: [-n, n]),
/// normalised; nullopt after an error.
std::optional<int64_t> positionInput(NodeContext &ctx, unsigned i, int64_t n, bool insert) {
  auto position = ctx.requireIntsInput(i, "position");
  if (!position)
    return std::nullopt;
  if (position->size() != 1) {
    (void)ctx.error("position must be one integer, it holds " + llvm::Twine(position->size()));
    return std::nullopt;
  }
  int64_t p = (*position)[0];
  const int64_t end = insert ? n : n - 1;
  if (p < -n || p > end) {
    (void)ctx.error("position " + llvm::Twine(p) + " is out of range for a sequence of " +
                    llvm::Twine(n) + " tensors");
    return std::nullopt;
  }
  return p < 0 ? p + n : p;
}

/// Errors unless `t` (an element to store) has the sequence's element type.
LogicalResult checkElement(NodeContext &ctx, const ValueEntry &seq, const ValueEntry &t,
                           llvm::StringRef what) {
  RankedTensorType type = entryType(t, ctx.context());
  if (!type)
    return ctx.error(what + " is not a tensor of a supported type");
  if (seq.elementType && type.getElementType() != seq.elementType) {
    auto name = [](Type t) { return kindOf(t) ? kindName(*kindOf(t)).str() : "unknown"; };
    return ctx.error(what + " has element type " + name(type.getElementType()) + ", the sequence " +
                     name(seq.elementType));
  }
  return success();
}

LogicalResult importSequenceEmpty(NodeContext &ctx) {
  int64_t dtype = ctx.intAttr("dtype", onnx::TensorProto::FLOAT);
  Type element = elementTypeOf(int(dtype), ctx.context());
  if (!element)
    return ctx.error("unsupported dtype " + onnxTypeName(int(dtype)));
  ctx.setSequence(0, {}, element);
  return success();
}

LogicalResult importSequenceConstruct(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("needs at least one input");
  std::vector<ValueEntry> elements;
  Type element;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    RankedTensorType type = ctx.inputType(i);
    if (!type)
      return failure();
    if (element && type.getElementType() != element)
      return ctx.error("input #" + llvm::Twine(i) + " has another element type than input #0");
    element = type.getElementType();
    elements.push_back(*ctx.inputEntry(i));
  }
  ctx.setSequence(0, std::move(elements), element);
  return success();
}

LogicalResult importSequenceInsert(NodeContext &ctx) {
  const ValueEntry *seq = ctx.sequenceInput(0);
  if (!seq || !ctx.inputType(1))
    return failure();
  const ValueEntry tensor = *ctx.inputEntry(1);
  if (failed(checkElement(ctx, *seq, tensor, "the tensor inserted")))
    return failure();
  std::vector<ValueEntry> elements = *seq->elements;
  int64_t at = int64_t(elements.size());
  if (ctx.hasInput(2)) {
    auto p = positionInput(ctx, 2, at, /*insert=*/true);
    if (!p)
      return failure();
    at = *p;
  }
  elements.insert(elements.begin() + at, tensor);
  ctx.setSequence(0, std::move(elements), entryType(tensor, ctx.context()).getElementType());
  return success();
}

LogicalResult importSequenceAt(NodeContext &ctx) {
  const ValueEntry *seq = ctx.sequenceInput(0);
  if (!seq)
    return failure();
  auto p = positionInput(ctx, 1, int64_t(seq->elements->size()), /*insert=*/false);
  if (!p)
    return failure();
  ctx.setOutputEntry(0, (*seq->elements)[*p]);
  return success();
}

LogicalResult importSequenceErase(NodeContext &ctx) {
  const ValueEntry *seq = ctx.sequenceInput(0);
  if (!seq)
    return failure();
  std::vector<ValueEntry> elements = *seq->elements;
  if (elements.empty())
    return ctx.error("erases from an empty sequence");
  int64_t at = int64_t(elements.size()) - 1;
  if (ctx.hasInput(1)) {
    auto p = positionInput(ctx, 1, int64_t(elements.size()), /*insert=*/false);
    if (!p)
      return failure();
    at = *p;
  }
  elements.erase(elements.begin() + at);
  ctx.setSequence(0, std::move(elements), seq->elementType);
  return success();
}

LogicalResult importSequenceLength(NodeContext &ctx) {
  const ValueEntry *seq = ctx.sequenceInput(0);
  if (!seq)
    return failure();
  ctx.setOutput(0, HostTensor::splatInt(ElemKind::I64, {}, int64_t(seq->elements->size())));
  return success();
}

LogicalResult importConcatFromSequence(NodeContext &ctx) {
  const ValueEntry *seq = ctx.sequenceInput(0);
  if (!seq)
    return failure();
  if (seq->elements->empty())
    return ctx.error("the sequence is empty, and plait plans no empty tensors");
  if (!ctx.hasAttr("axis"))
    return ctx.error("missing attribute axis");
  const bool newAxis = ctx.intAttr("new_axis", 0) != 0;
  RankedTensorType first = entryType(seq->elements->front(), ctx.context());
  if (!first)
    return ctx.error("the sequence's first tensor has an unsupported type");
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), first.getRank() + (newAxis ? 1 : 0));
  if (!axis)
    return failure();
  std::vector<ValueEntry> parts = *seq->elements;
  auto joined = joinEntries(ctx, parts, *axis, newAxis, "the sequence", "element");
  if (failed(joined))
    return failure();
  ctx.setOutputEntry(0, std::move(*joined));
  return success();
}

LogicalResult importSplitToSequence(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  if (type.getRank() == 0)
    return ctx.error("cannot split a scalar");
  auto axis = normalizedAxis(ctx, ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  const int64_t n = type.getDimSize(*axis);
  llvm::SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.hasInput(1)) {
    // One piece per index, without the axis unless keepdims.
    sizes.assign(size_t(n), 1);
    squeeze = ctx.intAttr("keepdims", 1) == 0;
  } else {
    const HostTensor *split = ctx.requireConstInput(1, "split");
    if (!split)
      return failure();
    if (split->isFloat() || split->rank() > 1)
      return ctx.error("split must be an integer scalar or 1-D tensor");
    if (split->rank() == 0) {
      const int64_t chunk = split->getInt(0);
      if (chunk <= 0)
        return ctx.error("split " + llvm::Twine(chunk) + " must be positive");
      for (int64_t at = 0; at < n; at += chunk)
        sizes.push_back(std::min(chunk, n - at));
    } else {
      int64_t total = 0;
      for (int64_t s : split->toInts()) {
        if (s < 0)
          return ctx.error("split sizes must be >= 0, got " + llvm::Twine(s));
        sizes.push_back(s);
        total += s;
      }
      if (total != n)
        return ctx.error("split sizes add up to " + llvm::Twine(total) + ", not the " +
                         llvm::Twine(n) + " of axis " + llvm::Twine(*axis));
    }
  }
  if (sizes.empty() || llvm::is_contained(sizes, 0))
    return ctx.error("would hold empty tensors, and plait plans no empty tensors");
  auto pieces = splitEntries(ctx, *ctx.inputEntry(0), *axis, sizes, squeeze);
  if (failed(pieces))
    return failure();
  ctx.setSequence(0, std::vector<ValueEntry>(pieces->begin(), pieces->end()),
                  type.getElementType());
  return success();
}

/// SequenceMap (opset 17): the body once per position, its inputs the sequences' tensors at
/// that position and the tensor inputs as they are; each output a sequence of its values.
LogicalResult importSequenceMap(NodeContext &ctx) {
  const onnx::AttributeProto *bodyAttr = ctx.rawAttr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return ctx.error("missing attribute body");
  const onnx::GraphProto &body = bodyAttr->g();
  if (body.input_size() != int(ctx.numInputs()))
    return ctx.error("body has " + llvm::Twine(body.input_size()) + " inputs, the node " +
                     llvm::Twine(ctx.numInputs()));
  if (body.output_size() != int(ctx.numOutputs()))
    return ctx.error("body has " + llvm::Twine(body.output_size()) + " outputs, the node " +
                     llvm::Twine(ctx.numOutputs()));
  const ValueEntry *first = ctx.sequenceInput(0);
  if (!first)
    return failure();
  const size_t n = first->elements->size();
  std::vector<ValueEntry> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    const ValueEntry *entry = ctx.inputEntry(i);
    if (!entry)
      return failure();
    if (entry->kind == ValueEntry::Kind::Sequence && entry->elements->size() != n)
      return ctx.error("input #" + llvm::Twine(i) + " holds " +
                       llvm::Twine(entry->elements->size()) + " tensors, input #0 " +
                       llvm::Twine(n));
    inputs.push_back(*entry);
  }
  std::vector<std::vector<ValueEntry>> outputs(ctx.numOutputs());
  for (size_t k = 0; k < n; ++k) {
    llvm::SmallVector<ValueEntry> bound;
    for (const ValueEntry &in : inputs)
      bound.push_back(in.kind == ValueEntry::Kind::Sequence ? (*in.elements)[k] : in);
    auto collect = [&](llvm::MutableArrayRef<ValueEntry> outs) -> LogicalResult {
      for (size_t o = 0; o < outs.size(); ++o) {
        if (!entryType(outs[o], ctx.context()))
          return ctx.error("body output '" + body.output(int(o)).name() + "' is not a tensor");
        outputs[o].push_back(outs[o]);
      }
      return success();
    };
    if (failed(ctx.importBody(body, bound, collect)))
      return failure();
  }
  for (unsigned o = 0; o < ctx.numOutputs(); ++o) {
    Type element = outputs[o].empty() ? first->elementType
                                      : entryType(outputs[o][0], ctx.context()).getElementType();
    ctx.setSequence(o, std::move(outputs[o]), element);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Optionals: empty, or holding a tensor or a sequence, known at import
//===----------------------------------------------------------------------===//

LogicalResult importOptional(NodeContext &ctx) {
  if (!ctx.hasInput(0)) {
    if (!ctx.hasAttr("type"))
      return ctx.error("an empty Optional needs its attribute type");
    ctx.setOptional(0, std::nullopt);
    return success();
  }
  const ValueEntry *value = ctx.inputEntry(0);
  if (!value)
    return failure();
  if (value->kind == ValueEntry::Kind::Optional)
    return ctx.error("input '" + ctx.inputName(0) + "' is already an optional");
  ctx.setOptional(0, *value);
  return success();
}

/// Opset 18's reading, which ORT's takes at 15 too: a tensor or a sequence holds its value,
/// and an omitted input is empty.
LogicalResult importOptionalHasElement(NodeContext &ctx) {
  bool has = false;
  if (ctx.hasInput(0)) {
    const ValueEntry *value = ctx.inputEntry(0);
    if (!value)
      return failure();
    has = value->kind != ValueEntry::Kind::Optional || !value->elements->empty();
  }
  ctx.setOutput(0, HostTensor::splatInt(ElemKind::Bool, {}, has));
  return success();
}

/// The optional's value (an error when it is empty); a tensor or a sequence is its own value.
LogicalResult importOptionalGetElement(NodeContext &ctx) {
  const ValueEntry *value = ctx.inputEntry(0);
  if (!value)
    return failure();
  if (value->kind != ValueEntry::Kind::Optional) {
    ctx.setOutputEntry(0, *value);
    return success();
  }
  if (value->elements->empty())
    return ctx.error("input '" + ctx.inputName(0) + "' is an empty optional");
  ctx.setOutputEntry(0, value->elements->front());
  return success();
}

} // namespace

void registerSequenceOps(OpImporterMap &map) {
  map["Optional"] = importOptional;
  map["OptionalHasElement"] = importOptionalHasElement;
  map["OptionalGetElement"] = importOptionalGetElement;
  map["SequenceEmpty"] = importSequenceEmpty;
  map["SequenceConstruct"] = importSequenceConstruct;
  map["SequenceInsert"] = importSequenceInsert;
  map["SequenceAt"] = importSequenceAt;
  map["SequenceErase"] = importSequenceErase;
  map["SequenceLength"] = importSequenceLength;
  map["ConcatFromSequence"] = importConcatFromSequence;
  map["SplitToSequence"] = importSplitToSequence;
  map["SequenceMap"] = importSequenceMap;
}

} // namespace plait::onnx_import
