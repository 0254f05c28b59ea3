// The per-node API of the op importers: inputs as values or folded constants, attributes,
// outputs, diagnostics in the importer's one-line format, and checked creation of plait ops.
#include "compiler/import/onnx/GraphImporter.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace plait::onnx_import {

NodeContext::NodeContext(GraphImporter &graph, const onnx::NodeProto &node, Location loc,
                         int64_t opset)
    : graph_(graph), node_(node), loc_(loc), opset_(opset) {}

llvm::StringRef NodeContext::opType() const { return node_.op_type(); }
OpBuilder &NodeContext::builder() { return graph_.builder; }
MLIRContext *NodeContext::context() { return &graph_.ctx; }

unsigned NodeContext::numInputs() const { return node_.input_size(); }
bool NodeContext::hasInput(unsigned i) const {
  return i < static_cast<unsigned>(node_.input_size()) && !node_.input(i).empty();
}
llvm::StringRef NodeContext::inputName(unsigned i) const {
  return hasInput(i) ? llvm::StringRef(node_.input(i)) : llvm::StringRef();
}

llvm::StringRef NodeContext::outputName(unsigned i) const {
  return hasOutput(i) ? llvm::StringRef(node_.output(i)) : llvm::StringRef();
}

ValueEntry runtimeEntry(Value value) {
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Runtime;
  entry.value = value;
  entry.type = llvm::cast<RankedTensorType>(value.getType());
  return entry;
}

ValueEntry foldedEntry(HostTensor value, MLIRContext *ctx) {
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Folded;
  entry.type = value.type(ctx);
  entry.folded = std::make_shared<HostTensor>(std::move(value));
  return entry;
}

RankedTensorType entryType(const ValueEntry &entry, MLIRContext *ctx) {
  if (entry.kind == ValueEntry::Kind::Sequence || entry.kind == ValueEntry::Kind::Optional)
    return {};
  if (entry.value)
    return llvm::cast<RankedTensorType>(entry.value.getType());
  if (entry.folded)
    return entry.folded->type(ctx);
  return entry.type;
}

ValueEntry *NodeContext::presentInput(unsigned i) {
  if (!hasInput(i)) {
    (void)error("missing input #" + llvm::Twine(i));
    return nullptr;
  }
  return tensorLookup(i);
}

ValueEntry *NodeContext::tensorLookup(unsigned i) {
  ValueEntry *entry = graph_.lookup(node_, node_.input(i));
  if (entry && entry->kind == ValueEntry::Kind::Sequence) {
    (void)error("input '" + node_.input(i) + "' is a sequence, where " + node_.op_type() +
                " takes a tensor");
    return nullptr;
  }
  if (entry && entry->kind == ValueEntry::Kind::Optional) {
    (void)error("input '" + node_.input(i) + "' is an optional, where " + node_.op_type() +
                " takes a tensor (OptionalGetElement gives its value)");
    return nullptr;
  }
  return entry;
}

const ValueEntry *NodeContext::sequenceInput(unsigned i) {
  if (!hasInput(i)) {
    (void)error("missing input #" + llvm::Twine(i));
    return nullptr;
  }
  ValueEntry *entry = graph_.lookup(node_, node_.input(i));
  if (entry && entry->kind != ValueEntry::Kind::Sequence) {
    (void)error("input '" + node_.input(i) + "' is " +
                (entry->kind == ValueEntry::Kind::Optional ? "an optional" : "a tensor") +
                ", where " + node_.op_type() + " takes a sequence");
    return nullptr;
  }
  return entry;
}

void NodeContext::setOptional(unsigned i, std::optional<ValueEntry> value) {
  if (!hasOutput(i))
    return;
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Optional;
  std::vector<ValueEntry> held;
  if (value)
    held.push_back(std::move(*value));
  entry.elements = std::make_shared<const std::vector<ValueEntry>>(std::move(held));
  graph_.values[node_.output(i)] = std::move(entry);
}

void NodeContext::setSequence(unsigned i, std::vector<ValueEntry> elements, Type elementType) {
  if (!hasOutput(i))
    return;
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Sequence;
  entry.elements = std::make_shared<const std::vector<ValueEntry>>(std::move(elements));
  entry.elementType = elementType;
  graph_.values[node_.output(i)] = std::move(entry);
}

RankedTensorType NodeContext::inputType(unsigned i) {
  ValueEntry *entry = presentInput(i);
  if (!entry)
    return {};
  if (entry->value)
    return llvm::cast<RankedTensorType>(entry->value.getType());
  if (entry->folded)
    return entry->folded->type(context());
  if (!entry->type) {
    (void)error("input '" + node_.input(i) + "': unsupported dtype " +
                onnxTypeName(entry->initializer ? entry->initializer->data_type() : 0));
    return {};
  }
  return entry->type;
}

Value NodeContext::input(unsigned i) {
  ValueEntry *entry = presentInput(i);
  if (!entry)
    return {};
  if (!entry->value && entry->kind == ValueEntry::Kind::Param && !entry->type) {
    (void)error("input '" + node_.input(i) + "': unsupported dtype " +
                onnxTypeName(entry->initializer->data_type()));
    return {};
  }
  return graph_.materialize(node_.input(i), *entry);
}

Value NodeContext::constantInput(unsigned i) {
  if (!hasInput(i))
    return input(i);
  ValueEntry *entry = tensorLookup(i);
  if (!entry)
    return {};
  if (entry->kind != ValueEntry::Kind::Param)
    return input(i);
  const HostTensor *value = graph_.constantValue(node_, node_.input(i), *entry);
  return value ? constant(*value) : Value();
}

bool NodeContext::syncBatchNorm() const { return graph_.opts.syncBatchNorm; }

bool NodeContext::training() const { return graph_.opts.training; }

void NodeContext::recordQuantization(Value q, const QuantizedValue &how) {
  graph_.quantizations[q] = how;
}

void NodeContext::countQuantization(bool straightThrough) {
  ++(straightThrough ? graph_.straightThroughPairs : graph_.dequantizedConstants);
}

const QuantizedValue *NodeContext::quantizationOf(Value q) const {
  auto it = graph_.quantizations.find(q);
  return it == graph_.quantizations.end() ? nullptr : &it->second;
}

std::optional<int64_t> NodeContext::paddingIdx(llvm::StringRef name) const {
  auto it = graph_.opts.paddingIdx.find(name.str());
  if (it == graph_.opts.paddingIdx.end())
    return std::nullopt;
  return it->second;
}

Value NodeContext::bufferInput(unsigned i, const std::function<Value(Value)> &updated) {
  ValueEntry *entry = hasInput(i) ? graph_.lookup(node_, node_.input(i)) : nullptr;
  if (!graph_.opts.buffers || !entry || entry->kind != ValueEntry::Kind::Param || !entry->type ||
      !llvm::isa<FloatType>(entry->type.getElementType()))
    return constantInput(i);
  Value param = input(i);
  if (!param)
    return {};
  auto op = param.getDefiningOp<ParamOp>();
  if (!op)
    return param;
  if (op.getBuffer()) {
    (void)error("initializer '" + node_.input(i) +
                "' is the running statistic of two nodes; each needs its own");
    return {};
  }
  op.setBuffer(true);
  Value next = updated(param);
  if (!next)
    return {};
  graph_.bufferUpdates.push_back({op.getName().str(), next});
  return param;
}

Value NodeContext::counterBuffer(const std::string &name) {
  return graph_.counterBuffer(name, loc_);
}

const HostTensor *NodeContext::foldedInput(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  auto it = graph_.values.find(node_.input(i));
  if (it == graph_.values.end() || it->second.kind != ValueEntry::Kind::Folded)
    return nullptr;
  return it->second.folded.get();
}

const HostTensor *NodeContext::knownInput(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  ValueEntry *entry = graph_.lookup(node_, node_.input(i));
  if (!entry || entry->kind == ValueEntry::Kind::Runtime ||
      entry->kind == ValueEntry::Kind::Sequence || entry->kind == ValueEntry::Kind::Optional)
    return nullptr;
  return graph_.constantValue(node_, node_.input(i), *entry);
}

bool NodeContext::allInputsFolded() {
  // Every input an op importer reads must then have a folded value; absent optional inputs
  // (empty names) are skipped by the importers themselves.
  bool any = false;
  for (unsigned i = 0; i < numInputs(); ++i) {
    if (!hasInput(i))
      continue;
    if (!foldedInput(i))
      return false;
    any = true;
  }
  return any;
}

const HostTensor *NodeContext::requireConstInput(unsigned i, llvm::StringRef role) {
  if (!hasInput(i)) {
    (void)error("missing input '" + role + "'");
    return nullptr;
  }
  ValueEntry *entry = tensorLookup(i);
  if (!entry)
    return nullptr;
  if (entry->kind != ValueEntry::Kind::Runtime)
    return graph_.constantValue(node_, node_.input(i), *entry);
  std::string name = node_.input(i);
  std::string what = "input '" + role.str() + "'";
  if (name != role.str())
    what += " ('" + name + "')";
  (void)error(what + " must be a compile-time constant; " + graph_.runtimeDependencyHint(name));
  return nullptr;
}

std::optional<llvm::SmallVector<int64_t>> NodeContext::requireIntsInput(unsigned i,
                                                                        llvm::StringRef role) {
  const HostTensor *t = requireConstInput(i, role);
  if (!t)
    return std::nullopt;
  if (t->isFloat()) {
    (void)error("input '" + role + "' must hold integers, got " + kindName(t->kind()));
    return std::nullopt;
  }
  return t->toInts();
}

std::optional<llvm::SmallVector<int64_t>> NodeContext::intsInputOrAttr(unsigned i,
                                                                       llvm::StringRef name) {
  if (hasInput(i))
    return requireIntsInput(i, name);
  return intsAttr(name);
}

//===--- Attributes ----------------------------------------------------------===//

const onnx::AttributeProto *NodeContext::rawAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool NodeContext::hasAttr(llvm::StringRef name) const { return rawAttr(name) != nullptr; }

int64_t NodeContext::intAttr(llvm::StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = rawAttr(name);
  return a ? a->i() : dflt;
}

/// The double a user meant by float32 attribute `f`: the shortest decimal that rounds to `f`
/// (so epsilon=1e-6 stays 1e-6 rather than becoming 9.99999997e-07).
static double intendedDouble(float f) {
  if (!std::isfinite(f))
    return f;
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(f));
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return f;
}

double NodeContext::floatAttr(llvm::StringRef name, double dflt) const {
  const onnx::AttributeProto *a = rawAttr(name);
  return a ? intendedDouble(a->f()) : dflt;
}

std::string NodeContext::stringAttr(llvm::StringRef name, llvm::StringRef dflt) const {
  const onnx::AttributeProto *a = rawAttr(name);
  return a ? a->s() : dflt.str();
}

llvm::SmallVector<int64_t> NodeContext::intsAttr(llvm::StringRef name) const {
  const onnx::AttributeProto *a = rawAttr(name);
  if (!a)
    return {};
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

llvm::SmallVector<std::string> NodeContext::stringsAttr(llvm::StringRef name) const {
  const onnx::AttributeProto *a = rawAttr(name);
  if (!a)
    return {};
  return llvm::SmallVector<std::string>(a->strings().begin(), a->strings().end());
}

llvm::SmallVector<double> NodeContext::floatsAttr(llvm::StringRef name) const {
  const onnx::AttributeProto *a = rawAttr(name);
  if (!a)
    return {};
  llvm::SmallVector<double> out;
  for (float f : a->floats())
    out.push_back(intendedDouble(f));
  return out;
}

std::optional<HostTensor> NodeContext::tensorAttr(llvm::StringRef name) {
  const onnx::AttributeProto *a = rawAttr(name);
  if (!a || !a->has_t()) {
    (void)error("attribute '" + name + "' is not a tensor");
    return std::nullopt;
  }
  auto attr = decodeTensorProto(a->t(), context(), graph_.baseDir);
  if (!attr) {
    (void)error("attribute '" + name + "' " + llvm::toString(attr.takeError()));
    return std::nullopt;
  }
  return HostTensor::fromAttr(*attr);
}

//===--- Outputs -------------------------------------------------------------===//

unsigned NodeContext::numOutputs() const { return node_.output_size(); }
bool NodeContext::hasOutput(unsigned i) const {
  return i < static_cast<unsigned>(node_.output_size()) && !node_.output(i).empty();
}

void NodeContext::setOutput(unsigned i, Value value) {
  if (!hasOutput(i))
    return;
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Runtime;
  entry.value = value;
  entry.type = llvm::cast<RankedTensorType>(value.getType());
  graph_.values[node_.output(i)] = std::move(entry);
}

LogicalResult NodeContext::forwardInput(unsigned out, unsigned in, bool copyParam) {
  if (!hasInput(in))
    return error("missing input #" + llvm::Twine(in));
  ValueEntry *entry = graph_.lookup(node_, node_.input(in));
  if (!entry)
    return failure();
  if (hasOutput(out)) {
    ValueEntry copy = *entry; // a folded value or a param keeps its kind
    if (copyParam && copy.kind == ValueEntry::Kind::Param) {
      copy.paramName = node_.output(out);
      copy.value = Value(); // materialised on first use, as its own plait.param
    }
    graph_.values[node_.output(out)] = std::move(copy);
  }
  return success();
}

LogicalResult NodeContext::forwardValue(unsigned out, llvm::StringRef name) {
  ValueEntry *entry = graph_.lookup(node_, name);
  if (!entry)
    return failure();
  if (hasOutput(out)) {
    ValueEntry copy = *entry;
    graph_.values[node_.output(out)] = std::move(copy);
  }
  return success();
}

LogicalResult NodeContext::importSubgraph(const onnx::GraphProto &graph) {
  return graph_.importSubgraph(graph);
}

const ValueEntry *NodeContext::inputEntry(unsigned i) {
  if (!hasInput(i)) {
    (void)error("missing input #" + llvm::Twine(i));
    return nullptr;
  }
  return graph_.lookup(node_, node_.input(i));
}

LogicalResult
NodeContext::importBody(const onnx::GraphProto &body, llvm::ArrayRef<ValueEntry> inputs,
                        llvm::function_ref<LogicalResult(llvm::MutableArrayRef<ValueEntry>)> use) {
  return graph_.importBody(node_, body, inputs, use);
}

void NodeContext::countUnrolled(bool scan, int64_t iterations, int64_t bodyNodes) {
  ++(scan ? graph_.unrolledScans : graph_.unrolledLoops);
  graph_.unrolledIterations += iterations;
  graph_.unrolledNodes += iterations * bodyNodes;
}

void NodeContext::setOutputEntry(unsigned i, ValueEntry entry) {
  if (hasOutput(i))
    graph_.values[node_.output(i)] = std::move(entry);
}

Value NodeContext::valueOf(ValueEntry &entry) {
  return graph_.materialize(entry.paramName.empty() ? node_.output(0) : entry.paramName, entry);
}

std::string NodeContext::bindingHint(llvm::StringRef name) {
  std::string hint = graph_.runtimeDependencyHint(name);
  return llvm::StringRef(hint).contains("--const-input") ? hint : std::string();
}

LogicalResult NodeContext::setResult(Value value) {
  if (!value)
    return failure();
  setOutput(0, value);
  return success();
}

void NodeContext::setOutput(unsigned i, HostTensor folded) {
  if (!hasOutput(i))
    return;
  ValueEntry entry;
  entry.kind = ValueEntry::Kind::Folded;
  entry.type = folded.type(context());
  entry.folded = std::make_shared<HostTensor>(std::move(folded));
  graph_.values[node_.output(i)] = std::move(entry);
}

LogicalResult NodeContext::setFolded(unsigned i, llvm::Expected<HostTensor> folded) {
  if (!folded)
    return error(llvm::toString(folded.takeError()));
  setOutput(i, std::move(*folded));
  return success();
}

//===--- Diagnostics ---------------------------------------------------------===//

LogicalResult NodeContext::error(const llvm::Twine &message) {
  return graph_.nodeError(node_, message);
}

LogicalResult NodeContext::unsupported(const llvm::Twine &what) {
  return graph_.nodeError(node_, "unsupported " + what);
}

LogicalResult NodeContext::requireFloatInput(unsigned i) {
  RankedTensorType type = inputType(i);
  if (!type)
    return failure();
  if (!llvm::isa<FloatType>(type.getElementType()))
    return unsupported("dtype " + kindName(*kindOf(type.getElementType())) + " of input '" +
                       inputName(i) + "' (plait implements " + opType() +
                       " for floating-point types only)");
  return success();
}

//===--- Building ------------------------------------------------------------===//

Operation *NodeContext::createOp(llvm::StringRef name, ValueRange operands,
                                 llvm::ArrayRef<NamedAttribute> attrs, TypeRange resultTypes,
                                 unsigned numResults) {
  OperationState state(loc_, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  if (resultTypes.empty())
    state.addTypes(llvm::SmallVector<Type>(numResults, NoneType::get(context())));
  else
    state.addTypes(resultTypes);
  Operation *op = builder().create(state);

  std::string message;
  bool ok = true;
  {
    ScopedDiagnosticHandler capture(context(), [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (resultTypes.empty()) {
      if (auto infer = llvm::dyn_cast<InferTypeOpInterface>(op)) {
        llvm::SmallVector<Type> inferred;
        ok = succeeded(infer.inferReturnTypes(context(), loc_, op->getOperands(),
                                              op->getAttrDictionary(),
                                              op->getPropertiesStorage(), op->getRegions(),
                                              inferred)) &&
             inferred.size() == op->getNumResults();
        if (ok)
          for (auto [result, type] : llvm::zip(op->getResults(), inferred))
            result.setType(type);
      } else {
        for (Value result : op->getResults())
          result.setType(operands[0].getType());
      }
    }
    ok = ok && succeeded(verify(op, /*verifyRecursively=*/false));
  }
  if (!ok) {
    op->erase();
    (void)error(message.empty() ? "cannot build " + name.str() : message);
    return nullptr;
  }
  return op;
}

Value NodeContext::constant(const HostTensor &value) { return graph_.constant(value, loc_); }

Value NodeContext::scalar(double value, Type elementType) {
  return constant(HostTensor::splat(*kindOf(elementType), {}, value));
}

Value NodeContext::reshape(Value x, llvm::ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return create<ReshapeOp>(x, {}, RankedTensorType::get(shape, elementTypeOf(x)));
}

Value NodeContext::cast(Value x, Type elementType) {
  if (elementTypeOf(x) == elementType)
    return x;
  return create<CastOp>(x, {}, RankedTensorType::get(shapeOf(x), elementType));
}

Value NodeContext::broadcastTo(Value x, llvm::ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return create<BroadcastToOp>(x, {}, RankedTensorType::get(shape, elementTypeOf(x)));
}

NamedAttribute NodeContext::attr(llvm::StringRef name, Attribute value) {
  return NamedAttribute(StringAttr::get(context(), name), value);
}
NamedAttribute NodeContext::i64Attr(llvm::StringRef name, int64_t value) {
  return attr(name, builder().getI64IntegerAttr(value));
}
NamedAttribute NodeContext::f64Attr(llvm::StringRef name, double value) {
  return attr(name, builder().getF64FloatAttr(value));
}
NamedAttribute NodeContext::boolAttr(llvm::StringRef name, bool value) {
  return attr(name, builder().getBoolAttr(value));
}
NamedAttribute NodeContext::arrayAttr(llvm::StringRef name, llvm::ArrayRef<int64_t> values) {
  return attr(name, builder().getDenseI64ArrayAttr(values));
}

} // namespace plait::onnx_import
