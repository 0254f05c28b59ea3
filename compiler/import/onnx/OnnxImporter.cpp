// The ONNX graph walk: loads and checks a model, binds graph inputs, initializers and folded
// constants to values, dispatches every node to its op importer and assembles func.func @main.
#include "compiler/import/onnx/GraphImporter.h"
#include "compiler/Diagnostics.h"
#include "compiler/import/onnx/LegacyOpsets.h"

#include <exception>
#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace plait::onnx_import {

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// A message as one printable line: names read from a (possibly corrupt) model may hold
/// control characters or invalid UTF-8.
static std::string printable(const llvm::Twine &message) {
  return printableText(message.str());
}

std::string GraphImporter::nodeName(const onnx::NodeProto &node) const {
  // printable: the name is only for locations and messages, which the report's JSON and a
  // terminal carry (ONNX does not check that names are UTF-8).
  if (!node.name().empty())
    return printable(node.name());
  auto it = nodeIndex_.find(&node);
  return node.op_type() + "_" + std::to_string(it == nodeIndex_.end() ? 0 : it->second);
}

LogicalResult GraphImporter::nodeError(const onnx::NodeProto &node, const llvm::Twine &message) {
  if (errorEmitted_) // the first error stops the import; later ones would only repeat it
    return failure();
  errorEmitted_ = true;
  std::string name = nodeName(node);
  Location loc = NameLoc::get(StringAttr::get(&ctx, name), FileLineColLoc::get(&ctx, path, 0, 0));
  // A lift's helper node is described as the node it serves (named the same).
  std::string opDesc = node.op_type();
  for (const onnx::AttributeProto &a : node.attribute())
    if (node.domain() == kLegacyDomain && a.name() == "lifted_from")
      opDesc = a.s();
  if (!node.domain().empty() && node.domain() != "ai.onnx" && node.domain() != kLegacyDomain)
    opDesc += ", domain " + node.domain();
  else
    opDesc += ", opset " + std::to_string(modelOpset);
  emitError(loc) << printable(path + ": node '" + name + "' (" + opDesc + "): " + message);
  return failure();
}

LogicalResult GraphImporter::graphError(const llvm::Twine &message) {
  if (errorEmitted_)
    return failure();
  errorEmitted_ = true;
  emitError(FileLineColLoc::get(&ctx, path, 0, 0)) << printable(path + ": " + message);
  return failure();
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

ValueEntry *GraphImporter::lookup(const onnx::NodeProto &node, llvm::StringRef name) {
  auto it = values.find(name);
  if (it == values.end()) {
    (void)nodeError(node, "input '" + name + "' is not produced by an earlier node, an "
                                             "initializer or a graph input");
    return nullptr;
  }
  return &it->second;
}

Value GraphImporter::constant(const HostTensor &value, Location loc) {
  DenseElementsAttr attr = value.toAttr(&ctx);
  auto it = constantCache_.find(attr);
  if (it != constantCache_.end())
    return it->second;
  auto op = prologue.create<ConstantOp>(loc, attr);
  prologue.setInsertionPointAfter(op);
  constantCache_[attr] = op.getResult();
  return op.getResult();
}

Value GraphImporter::counterBuffer(const std::string &name, Location loc) {
  // Initializers are all in `values` (bindInitializers runs before any node).
  if (values.count(name) || paramCache_.count(name))
    return {};
  auto type = RankedTensorType::get({}, IntegerType::get(&ctx, 64));
  auto op = prologue.create<ParamOp>(loc, type, StringAttr::get(&ctx, name), ElementsAttr(),
                                     StringAttr::get(&ctx, "zeros"));
  op.setBuffer(true);
  prologue.setInsertionPointAfter(op);
  paramCache_[name] = op.getResult();
  Value one = constant(HostTensor::splatInt(ElemKind::I64, {}, 1), loc);
  Value next = builder.create<AddOp>(loc, op.getResult(), one);
  bufferUpdates.push_back({name, next});
  return op.getResult();
}

Value GraphImporter::materialize(llvm::StringRef name, ValueEntry &entry) {
  if (entry.value)
    return entry.value;
  // Callers check for sequences and optionals first (NodeContext::tensorLookup names them);
  // this keeps a missed check an error instead of a null initializer dereferenced.
  if (entry.kind == ValueEntry::Kind::Sequence || entry.kind == ValueEntry::Kind::Optional) {
    (void)graphError("'" + name + "' is " +
                     (entry.kind == ValueEntry::Kind::Sequence ? "a sequence" : "an optional") +
                     " where a tensor is expected");
    return {};
  }
  Location loc = NameLoc::get(StringAttr::get(&ctx, printable(name)));
  if (entry.kind == ValueEntry::Kind::Folded) {
    entry.value = constant(*entry.folded, loc);
    return entry.value;
  }
  // A param: decode the initializer now (once, however many entries forward it).
  auto cached = paramCache_.find(entry.paramName);
  if (cached != paramCache_.end()) {
    entry.value = cached->second;
    return entry.value;
  }
  auto attr = decodeTensorProto(*entry.initializer, &ctx, baseDir);
  if (!attr) {
    (void)graphError("initializer '" + name + "' " + llvm::toString(attr.takeError()));
    return {};
  }
  auto op = prologue.create<ParamOp>(NameLoc::get(StringAttr::get(&ctx, entry.paramName)),
                                     entry.type, StringAttr::get(&ctx, entry.paramName), *attr,
                                     StringAttr());
  prologue.setInsertionPointAfter(op);
  entry.value = op.getResult();
  paramCache_[entry.paramName] = entry.value;
  return entry.value;
}

const HostTensor *GraphImporter::constantValue(const onnx::NodeProto &node, llvm::StringRef name,
                                               ValueEntry &entry) {
  if (entry.folded)
    return entry.folded.get();
  if (entry.kind != ValueEntry::Kind::Param)
    return nullptr;
  auto attr = decodeTensorProto(*entry.initializer, &ctx, baseDir);
  if (!attr) {
    (void)nodeError(node, "initializer '" + name + "' " + llvm::toString(attr.takeError()));
    return nullptr;
  }
  entry.folded = std::make_shared<HostTensor>(HostTensor::fromAttr(*attr));
  return entry.folded.get();
}

/// Names the graph inputs a runtime value is computed from, as a hint for binding them.
std::string GraphImporter::runtimeDependencyHint(llvm::StringRef name) {
  std::vector<std::string> inputs; // in discovery order
  llvm::StringSet<> visited;
  llvm::SmallVector<std::string> work{name.str()};
  while (!work.empty()) {
    std::string v = work.pop_back_val();
    if (!visited.insert(v).second)
      continue;
    if (runtimeInputs_.contains(v)) {
      inputs.push_back(v);
      continue;
    }
    auto it = producer_.find(v);
    if (it == producer_.end())
      continue;
    const onnx::NodeProto &node = *it->second;
    for (const std::string &in : node.input()) {
      auto entry = values.find(in);
      if (!in.empty() && entry != values.end() && entry->second.kind == ValueEntry::Kind::Runtime)
        work.push_back(in);
    }
  }
  if (inputs.empty())
    return "it is computed at run time from trainable parameters";
  std::string hint = "bind ";
  hint += inputs.size() == 1 ? "it" : "them";
  hint += " with";
  for (const std::string &in : inputs)
    hint += " --const-input " + in + "=FILE";
  if (inputs.size() == 1 && inputs[0] != name.str())
    hint = "it is computed from graph input '" + inputs[0] + "'; " + hint;
  return hint;
}

//===----------------------------------------------------------------------===//
// Graph inputs, initializers, outputs
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> GraphImporter::declaredType(const onnx::ValueInfoProto &info,
                                                        bool isInput) {
  const char *what = isInput ? "graph input" : "graph output";
  if (!info.has_type() || !info.type().has_tensor_type())
    return graphError(llvm::Twine(what) + " '" + info.name() +
                      "': unsupported type (only tensors are supported)");
  const auto &tensor = info.type().tensor_type();
  Type element = elementTypeOf(tensor.elem_type(), &ctx);
  if (!element)
    return graphError(llvm::Twine(what) + " '" + info.name() + "': unsupported dtype " +
                      onnxTypeName(tensor.elem_type()));
  if (!tensor.has_shape())
    return graphError(llvm::Twine(what) + " '" + info.name() +
                      "': unsupported dynamic rank (the model gives no shape)");
  llvm::SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param()) {
      auto it = opts.dimParams.find(dim.dim_param());
      if (it != opts.dimParams.end()) {
        shape.push_back(it->second);
        continue;
      }
    }
    if (!isInput) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    return graphError(llvm::Twine(what) + " '" + info.name() +
                      "': unsupported dynamic dimension" +
                      (dim.has_dim_param() ? " '" + dim.dim_param() + "'" : std::string()) +
                      " (plait needs static shapes; export the model with fixed sizes)");
  }
  return RankedTensorType::get(shape, element);
}

LogicalResult GraphImporter::bindInitializers() {
  for (const onnx::TensorProto &init : model.graph().initializer()) {
    if (init.name().empty())
      return graphError("an initializer has no name");
    Type element = elementTypeOf(init.data_type(), &ctx);
    llvm::SmallVector<int64_t> shape(init.dims().begin(), init.dims().end());
    ValueEntry entry;
    entry.initializer = &init;
    entry.paramName = init.name();
    entry.kind = ValueEntry::Kind::Param;
    if (element && llvm::all_of(shape, [](int64_t d) { return d >= 0; }))
      entry.type = RankedTensorType::get(shape, element);
    // Integer and bool initializers cannot be trained: they are constants (shapes, indices).
    if (element && !llvm::isa<FloatType>(element)) {
      auto attr = decodeTensorProto(init, &ctx, baseDir);
      if (!attr)
        return graphError("initializer '" + init.name() + "' " +
                          llvm::toString(attr.takeError()));
      entry.kind = ValueEntry::Kind::Folded;
      entry.folded = std::make_shared<HostTensor>(HostTensor::fromAttr(*attr));
    }
    values[init.name()] = std::move(entry);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

static const OpImporterMap &opImporters() {
  static const OpImporterMap map = [] {
    OpImporterMap m;
    registerElementwiseOps(m);
    registerTensorOps(m);
    registerSourceOps(m);
    registerNeuralOps(m);
    registerConvPoolOps(m);
    registerEinsumOps(m);
    registerIndexingOps(m);
    registerResizeOps(m);
    registerRecurrentOps(m);
    registerGridSampleOps(m);
    registerRoiAlignOps(m);
    registerDataShapeOps(m);
    registerSpectralOps(m);
    registerQuantizeOps(m);
    registerTrainingOps(m);
    registerRandomOps(m);
    registerControlFlowOps(m);
    registerSequenceOps(m);
    registerTfIdfOps(m);
    registerLegacyOps(m);
    return m;
  }();
  return map;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, size_t index) {
  nodeIndex_[&node] = index;
  // Other domains than the default: the training domain's ops, and the helper nodes a lift
  // of an older opset inserted (LegacyOpsets.h), keyed "DOMAIN::OP".
  const bool qualified = node.domain() == kTrainingDomain || node.domain() == kLegacyDomain;
  if (!node.domain().empty() && node.domain() != "ai.onnx" && !qualified)
    return nodeError(node, "unsupported domain '" + node.domain() + "'");
  auto it = opImporters().find(qualified ? qualifiedOpType(node.domain(), node.op_type())
                                         : node.op_type());
  if (it == opImporters().end())
    return nodeError(node, "unsupported op");

  Location loc = NameLoc::get(StringAttr::get(&ctx, nodeName(node)));
  NodeContext nodeCtx(*this, node, loc, opset);
  for (const std::string &out : node.output())
    if (!out.empty())
      values.erase(out); // an output is defined once; a stale entry means a malformed graph
  if (failed(it->second(nodeCtx)))
    return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &out = node.output(i);
    if (out.empty())
      continue;
    if (!values.count(out))
      return nodeError(node, "unsupported output #" + llvm::Twine(i) + " ('" + out +
                                 "'); plait computes only the outputs used for inference");
    producer_[out] = &node;
  }
  return success();
}

LogicalResult GraphImporter::importSubgraph(const onnx::GraphProto &graph) {
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), size_t(i))))
      return failure();
  return success();
}

LogicalResult GraphImporter::importBody(
    const onnx::NodeProto &owner, const onnx::GraphProto &body, llvm::ArrayRef<ValueEntry> inputs,
    llvm::function_ref<LogicalResult(llvm::MutableArrayRef<ValueEntry>)> use) {
  // The names the body defines, and the enclosing entries they shadow (a checked model has
  // none: ONNX forbids a subgraph to redefine an outer name, but a body must not be able to
  // change what the rest of the graph reads).
  llvm::SmallVector<std::string> defined;
  for (const onnx::ValueInfoProto &in : body.input())
    defined.push_back(in.name());
  for (const onnx::TensorProto &init : body.initializer())
    defined.push_back(init.name());
  for (const onnx::NodeProto &node : body.node())
    for (const std::string &out : node.output())
      if (!out.empty())
        defined.push_back(out);
  // Loops within loops multiply: the budget is over every body node imported.
  bodyNodesImported += body.node_size();
  if (bodyNodesImported > kMaxUnrolledNodes)
    return nodeError(owner, "unrolls, with the loops around and before it, into more than " +
                                llvm::Twine(kMaxUnrolledNodes) +
                                " body nodes in all, more than plait unrolls");
  llvm::StringMap<ValueEntry> shadowed;
  for (const std::string &name : defined) {
    auto it = values.find(name);
    if (it != values.end())
      shadowed.try_emplace(name, it->second);
  }
  auto restore = llvm::make_scope_exit([&] {
    for (const std::string &name : defined)
      values.erase(name);
    for (auto &entry : shadowed)
      values[entry.getKey()] = entry.getValue();
  });

  for (auto [info, entry] : llvm::zip(body.input(), inputs))
    values[info.name()] = entry;
  for (const onnx::TensorProto &init : body.initializer()) {
    auto attr = decodeTensorProto(init, &ctx, baseDir);
    if (!attr)
      return nodeError(owner, "body initializer '" + init.name() + "' " +
                                  llvm::toString(attr.takeError()));
    ValueEntry entry;
    entry.kind = ValueEntry::Kind::Folded;
    entry.folded = std::make_shared<HostTensor>(HostTensor::fromAttr(*attr));
    entry.type = entry.folded->type(&ctx);
    values[init.name()] = std::move(entry);
  }
  if (failed(importSubgraph(body)))
    return failure();
  llvm::SmallVector<ValueEntry> outputs;
  for (const onnx::ValueInfoProto &out : body.output()) {
    ValueEntry *entry = lookup(owner, out.name());
    if (!entry)
      return failure();
    outputs.push_back(*entry);
  }
  return use(outputs);
}

/// Compares the types the importer produced with ONNX shape inference where the latter is fully
/// static: a disagreement would otherwise surface far from its cause. Runs after the import, on
/// models whose every node the importer has validated: libonnx's shape inference is not safe on
/// malformed attributes (it crashes on some), and the importer rejects those first.
LogicalResult GraphImporter::crossCheckShapeInference() {
  try {
    onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/false};
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &) {
    return success(); // only a cross-check: a model ONNX cannot infer still imports
  }
  for (const onnx::ValueInfoProto &info : model.graph().value_info()) {
    auto producer = producer_.find(info.name());
    auto entry = values.find(info.name());
    if (producer == producer_.end() || entry == values.end())
      continue;
    const auto &type = info.type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape())
      continue;
    const auto &tensor = type.tensor_type();
    llvm::SmallVector<int64_t> shape;
    bool isStatic = true;
    for (const auto &dim : tensor.shape().dim()) {
      isStatic &= dim.has_dim_value();
      shape.push_back(dim.dim_value());
    }
    Type element = elementTypeOf(tensor.elem_type(), &ctx);
    const ValueEntry &got = entry->second;
    RankedTensorType gotType = got.value ? llvm::cast<RankedTensorType>(got.value.getType())
                               : got.folded ? got.folded->type(&ctx)
                                            : got.type;
    if (!isStatic || !element || !gotType)
      continue;
    if (gotType.getShape() != llvm::ArrayRef<int64_t>(shape) ||
        gotType.getElementType() != element) {
      std::string gotStr, wantStr;
      llvm::raw_string_ostream gotOs(gotStr), wantOs(wantStr);
      gotType.print(gotOs);
      RankedTensorType::get(shape, element).print(wantOs);
      return nodeError(*producer->second, "output '" + info.name() + "' was imported as " + gotStr +
                                              " but ONNX shape inference gives " + wantStr);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

FailureOr<OwningOpRef<ModuleOp>> GraphImporter::run() {
  const onnx::GraphProto &graph = model.graph();
  ctx.loadDialect<func::FuncDialect, PlaitDialect>();

  if (failed(bindInitializers()))
    return failure();

  // Bound graph inputs become folded constants; the others are function arguments.
  llvm::StringSet<> inputNames;
  llvm::SmallVector<Type> argTypes;
  llvm::SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &info : graph.input()) {
    inputNames.insert(info.name());
    if (values.count(info.name()))
      continue; // an initializer listed as input (IR version < 4): the initializer wins
    auto bound = opts.constValues.find(info.name());
    if (bound != opts.constValues.end()) {
      auto boundType = llvm::dyn_cast<RankedTensorType>(bound->second.getType());
      if (!boundType || !kindOf(boundType.getElementType()))
        return graphError("--const-input " + info.name() + ": unsupported element type");
      auto value = std::make_shared<HostTensor>(HostTensor::fromAttr(bound->second));
      if (info.has_type() && info.type().has_tensor_type()) {
        const auto &tensor = info.type().tensor_type();
        Type element = elementTypeOf(tensor.elem_type(), &ctx);
        if (element && toMlirType(value->kind(), &ctx) != element)
          return graphError("--const-input " + info.name() + " has element type " +
                            kindName(value->kind()) + ", the model declares " +
                            onnxTypeName(tensor.elem_type()));
        if (tensor.has_shape()) {
          bool matches = tensor.shape().dim_size() == value->rank();
          for (int d = 0; matches && d < tensor.shape().dim_size(); ++d)
            if (tensor.shape().dim(d).has_dim_value() &&
                tensor.shape().dim(d).dim_value() != value->shape()[d])
              matches = false;
          if (!matches)
            return graphError("--const-input " + info.name() +
                              " has a shape the model does not declare for it");
        }
      }
      ValueEntry entry;
      entry.kind = ValueEntry::Kind::Folded;
      entry.folded = std::move(value);
      values[info.name()] = std::move(entry);
      continue;
    }
    auto type = declaredType(info, /*isInput=*/true);
    if (failed(type))
      return failure();
    ValueEntry entry;
    entry.type = *type;
    values[info.name()] = entry;
    runtimeInputs_.insert(info.name());
    argTypes.push_back(*type);
    argNames.push_back(info.name());
  }
  for (const auto &bound : opts.constValues)
    if (!inputNames.contains(bound.first))
      return graphError("--const-input " + bound.first + " names no graph input of the model");

  Location fileLoc = FileLineColLoc::get(&ctx, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  auto func = func::FuncOp::create(fileLoc, "main", FunctionType::get(&ctx, argTypes, {}));
  module->push_back(func);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  prologue.setInsertionPointToStart(body);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "plait.name", StringAttr::get(&ctx, name));
    values[name].value = body->getArgument(i);
  }

  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return failure();

  if (failed(crossCheckShapeInference()))
    return failure();

  llvm::SmallVector<Value> results;
  llvm::SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    auto it = values.find(info.name());
    if (it == values.end())
      return graphError("graph output '" + info.name() + "' is not produced by any node");
    if (it->second.kind == ValueEntry::Kind::Sequence)
      return graphError("graph output '" + info.name() +
                        "': unsupported type sequence (a plan's outputs are tensors: "
                        "concatenate or stack it with ConcatFromSequence)");
    if (it->second.kind == ValueEntry::Kind::Optional)
      return graphError("graph output '" + info.name() +
                        "': unsupported type optional (a plan's outputs are tensors: give "
                        "its value with OptionalGetElement)");
    Value v = materialize(info.name(), it->second);
    if (!v)
      return failure();
    auto declared = declaredType(info, /*isInput=*/false);
    if (failed(declared))
      return failure();
    auto got = llvm::cast<RankedTensorType>(v.getType());
    bool shapeOk = declared->getRank() == got.getRank();
    for (int64_t d = 0; shapeOk && d < got.getRank(); ++d)
      shapeOk = declared->isDynamicDim(d) || declared->getDimSize(d) == got.getDimSize(d);
    if (declared->getElementType() != got.getElementType() ||
        (info.type().tensor_type().has_shape() && !shapeOk)) {
      std::string gotStr, wantStr;
      llvm::raw_string_ostream gotOs(gotStr), wantOs(wantStr);
      got.print(gotOs);
      declared->print(wantOs);
      return graphError("graph output '" + info.name() + "' was imported as " + gotStr +
                        " but the model declares " + wantStr);
    }
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  for (auto &[name, value] : bufferUpdates) {
    results.push_back(value);
    resultTypes.push_back(value.getType());
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(FunctionType::get(&ctx, argTypes, resultTypes));
  for (auto [i, info] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "plait.name", StringAttr::get(&ctx, info.name()));
  for (auto [i, update] : llvm::enumerate(bufferUpdates)) {
    unsigned index = unsigned(graph.output_size() + i);
    func.setResultAttr(index, "plait.name", StringAttr::get(&ctx, update.first + ".updated"));
    func.setResultAttr(index, "plait.buffer", StringAttr::get(&ctx, update.first));
  }

  // Every op was verified when it was built; this catches anything left over.
  std::string message;
  {
    ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (failed(verify(*module)))
      message = message.empty() ? "the imported module does not verify" : message;
  }
  if (!message.empty())
    return graphError("internal error: " + message);
  if (straightThroughPairs > 0 || dequantizedConstants > 0) {
    Builder b(&ctx);
    (*module)->setAttr("plait.quantization",
                       b.getDictionaryAttr(
                           {b.getNamedAttr("straight_through",
                                           b.getI64IntegerAttr(straightThroughPairs)),
                            b.getNamedAttr("dequantized_constants",
                                           b.getI64IntegerAttr(dequantizedConstants))}));
  }
  if (unrolledLoops > 0 || unrolledScans > 0) {
    Builder b(&ctx);
    (*module)->setAttr(
        "plait.onnx_unrolled",
        b.getDictionaryAttr({b.getNamedAttr("loops", b.getI64IntegerAttr(unrolledLoops)),
                             b.getNamedAttr("scans", b.getI64IntegerAttr(unrolledScans)),
                             b.getNamedAttr("iterations", b.getI64IntegerAttr(unrolledIterations)),
                             b.getNamedAttr("nodes", b.getI64IntegerAttr(unrolledNodes))}));
  }
  return module;
}

} // namespace plait::onnx_import

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

namespace plait {

/// --micro-batches: divides the batch (the leading dimension of every graph input that is not
/// bound to a constant) by `opts.microBatches`, in those inputs and in the graph outputs that
/// carry it. Inferred shapes (value_info) are dropped: they hold the old batch. Returns an
/// error message, or "".
static std::string divideBatch(onnx::ModelProto &model, const OnnxImportOptions &opts) {
  onnx::GraphProto &graph = *model.mutable_graph();
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers.insert(init.name());
  auto leadingDim = [&](const onnx::ValueInfoProto &info) -> std::optional<int64_t> {
    if (!info.has_type() || !info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape() ||
        info.type().tensor_type().shape().dim_size() == 0)
      return std::nullopt;
    const auto &dim = info.type().tensor_type().shape().dim(0);
    if (dim.has_dim_value())
      return dim.dim_value();
    if (auto it = opts.dimParams.find(dim.has_dim_param() ? dim.dim_param() : "");
        it != opts.dimParams.end())
      return it->second;
    return std::nullopt;
  };
  std::optional<int64_t> batch;
  std::string batchInput;
  std::vector<onnx::ValueInfoProto *> batched;
  for (onnx::ValueInfoProto &info : *graph.mutable_input()) {
    if (initializers.contains(info.name()) || opts.constValues.count(info.name()))
      continue;
    std::optional<int64_t> dim = leadingDim(info);
    if (!dim)
      return "--micro-batches: graph input '" + info.name() +
             "' has no static leading dimension (the batch) to split";
    if (batch && *dim != *batch)
      return "--micro-batches: graph input '" + info.name() + "' has leading dimension " +
             std::to_string(*dim) + " but graph input '" + batchInput + "' has " +
             std::to_string(*batch) + "; every graph input must lead with the batch";
    if (!batch) {
      batch = dim;
      batchInput = info.name();
    }
    batched.push_back(&info);
  }
  if (!batch)
    return "--micro-batches: the model has no graph input to split into micro-batches";
  if (*batch % opts.microBatches != 0)
    return "--micro-batches " + std::to_string(opts.microBatches) + " does not divide the batch " +
           std::to_string(*batch) + " (the leading dimension of graph input '" + batchInput + "')";
  for (onnx::ValueInfoProto &info : *graph.mutable_output())
    if (leadingDim(info) == batch)
      batched.push_back(&info);
  for (onnx::ValueInfoProto *info : batched) // dim_value and dim_param are a oneof
    info->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
        *batch / opts.microBatches);
  graph.clear_value_info();
  return "";
}

/// An exception's message on one line, trimmed (ONNX's checker writes several).
static std::string oneLine(const std::exception &e) {
  std::string what = e.what();
  std::replace(what.begin(), what.end(), '\n', ' ');
  return llvm::StringRef(what).trim().str();
}

/// What ONNX's version converter needs of a graph and its checker does not check: every name
/// defined once, and every node input and graph output reading only names defined before it (graph inputs, initializers, earlier nodes' outputs). libonnx's converter
/// dereferences the definition of each name it meets (a graph output no node produces crashed
/// it under the fuzzer). Returns the first offence, or an empty string.
static std::string undefinedNameForConverter(const onnx::GraphProto &graph) {
  llvm::StringSet<> defined;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    defined.insert(init.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &input : node.input())
      if (!input.empty() && !defined.contains(input))
        return "node " + std::to_string(i) + " (" + node.op_type() + ") reads '" + input +
               "', which nothing before it defines";
    for (const std::string &output : node.output())
      if (!output.empty() && !defined.insert(output).second)
        return "'" + output + "' is defined twice";
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!defined.contains(output.name()))
      return "graph output '" + output.name() + "' is defined by no node, input or initializer";
  return "";
}

FailureOr<OwningOpRef<ModuleOp>> importOnnxFile(MLIRContext &ctx, llvm::StringRef path,
                                                const OnnxImportOptions &opts) {
  Location fileLoc = FileLineColLoc::get(&ctx, path, 0, 0);
  auto fail = [&](const llvm::Twine &message) {
    emitError(fileLoc) << onnx_import::printable(path + ": " + message);
    return failure();
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read the model: " + buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (data.size() > static_cast<size_t>(INT32_MAX))
    return fail("unsupported model size over 2 GiB (protobuf's limit); store the weights as "
                "external data");
  onnx::ModelProto model;
  if (!model.ParseFromArray(data.data(), static_cast<int>(data.size())))
    return fail("cannot parse the file as an ONNX model (truncated, or not ONNX)");
  if (!model.has_graph())
    return fail("the file holds no ONNX graph (truncated, or not an ONNX model)");

  // Nodes of other domains are unsupported; say so before the opset and
  // checker complain about them.
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto &node = model.graph().node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx" &&
        node.domain() != onnx_import::kTrainingDomain) {
      std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(i)
                                             : node.name();
      emitError(NameLoc::get(StringAttr::get(&ctx, name), fileLoc))
          << onnx_import::printable(path + ": node '" + name + "' (" + node.op_type() +
                                    ", domain " + node.domain() + "): unsupported domain '" +
                                    node.domain() + "'");
      return failure();
    }
  }

  std::optional<int64_t> opset, trainingOpset;
  for (const auto &import : model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx")
      opset = import.version();
    if (import.domain() == onnx_import::kTrainingDomain)
      trainingOpset = import.version();
  }
  const bool trainingOps = llvm::any_of(model.graph().node(), [](const onnx::NodeProto &n) {
    return n.domain() == onnx_import::kTrainingDomain;
  });
  if (trainingOps && trainingOpset != 1)
    return fail(llvm::Twine("the model's ") + onnx_import::kTrainingDomain + " ops need version 1 of " +
                "that domain, it imports " +
                (trainingOpset ? "version " + std::to_string(*trainingOpset) : "none"));
  // A graph of training-domain ops alone needs no version of the default domain.
  if (!opset && trainingOps &&
      llvm::all_of(model.graph().node(),
                   [](const onnx::NodeProto &n) { return n.domain() == onnx_import::kTrainingDomain; }))
    opset = onnx_import::kMinOpset;
  if (!opset)
    return fail("the model imports no version of the default ONNX domain");
  // The checker resolves external data relative to the model's directory, which only the
  // path form tells it.
  bool externalData = llvm::any_of(model.graph().initializer(), [](const onnx::TensorProto &t) {
    return t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
  });
  // ONNX's checker on the model as it stands: its complaint on one line, or "".
  auto checkerError = [&]() -> std::string {
    try {
      if (externalData)
        onnx::checker::check_model(path.str());
      else
        onnx::checker::check_model(model);
    } catch (const std::exception &e) {
      return oneLine(e);
    }
    return "";
  };
  std::optional<int64_t> convertedFrom;
  if (*opset < onnx_import::kMinOpset && opts.upgradeOpset) {
    convertedFrom = *opset;
    // The converter assumes a valid model: check the user's first, so that its faults are
    // reported as theirs and never reach the converter.
    if (std::string invalid = checkerError(); !invalid.empty())
      return fail("invalid ONNX model: " + invalid);
    for (const onnx::NodeProto &node : model.graph().node())
      for (const onnx::AttributeProto &attr : node.attribute())
        if (attr.has_g() || attr.graphs_size() > 0)
          return fail("unsupported opset " + llvm::Twine(*opset) + " of the default domain: " +
                      "--upgrade-opset does not convert a model with subgraphs (node '" +
                      node.name() + "', " + node.op_type() + ")");
    std::string undefined = undefinedNameForConverter(model.graph());
    if (!undefined.empty())
      return fail("invalid ONNX model: " + undefined);
    try {
      model = onnx::version_conversion::ConvertVersion(model, onnx_import::kMinOpset);
      opset = onnx_import::kMinOpset;
    } catch (const std::exception &e) {
      return fail("unsupported opset " + llvm::Twine(*opset) + " of the default domain: ONNX's " +
                  "version converter cannot lift it to opset " +
                  llvm::Twine(onnx_import::kMinOpset) + " (" + oneLine(e) + ")");
    }
  }
  // An older model is lifted to opset 13 by plait's own rules (LegacyOpsets.h): each node
  // whose definition changed since the model's opset is rewritten into its opset-13 form; a
  // node no rule covers is named. The user's model is checked first, at its own opset, so
  // that its faults are reported as theirs.
  int64_t importOpset = *opset;
  std::optional<onnx_import::OpsetLift> lift;
  if (*opset < onnx_import::kMinOpset && *opset >= 1) {
    if (std::string invalid = checkerError(); !invalid.empty())
      return fail("invalid ONNX model: " + invalid);
    lift.emplace();
    if (std::string error = onnx_import::liftLegacyOpset(model, *opset, *lift); !error.empty())
      return fail("unsupported opset " + llvm::Twine(*opset) + " of the default domain: " + error);
    importOpset = onnx_import::kMinOpset;
  }
  if (importOpset < onnx_import::kMinOpset || importOpset > onnx_import::kMaxOpset)
    return fail("unsupported opset " + llvm::Twine(*opset) + " of the default domain (plait " +
                "imports opsets " + llvm::Twine(onnx_import::kMinOpset) + "-" +
                llvm::Twine(onnx_import::kMaxOpset) + "; convert the model with " +
                "onnx.version_converter)");
  if (std::string invalid = checkerError(); !invalid.empty()) {
    if (convertedFrom) // the converter's output, not the user's model, is at fault
      return fail("unsupported opset " + llvm::Twine(*convertedFrom) +
                  " of the default domain: ONNX's version converter made an invalid model (" +
                  invalid + ")");
    if (lift) // the user's model passed at its own opset
      return fail("unsupported opset " + llvm::Twine(*opset) + " of the default domain: " +
                  "plait's lift to opset 13 made a model ONNX's checker refuses (" + invalid + ")");
    return fail("invalid ONNX model: " + invalid);
  }
  // Load --const-input files now, so that a bad file is reported before the graph is walked.
  OnnxImportOptions resolved = opts;
  for (const auto &[name, file] : opts.constInputs) {
    if (resolved.constValues.count(name))
      continue;
    auto value = loadTensorFile(ctx, file);
    if (failed(value))
      return failure();
    resolved.constValues[name] = *value;
  }
  if (opts.microBatches < 1)
    return fail("--micro-batches must be at least 1, got " + llvm::Twine(opts.microBatches));
  if (opts.microBatches > 1)
    if (std::string error = divideBatch(model, resolved); !error.empty())
      return fail(error);
  onnx_import::GraphImporter importer(ctx, path, model, resolved, importOpset);
  importer.modelOpset = *opset;
  // A lifted model says so in its module (--report, --explain).
  auto finish = [&](FailureOr<OwningOpRef<ModuleOp>> module) {
    if (succeeded(module) && lift && (!lift->rewritten.empty() || !lift->kept.empty())) {
      Builder b(&ctx);
      auto list = [](const std::map<std::string, int64_t> &counts) {
        std::string text;
        for (const auto &[key, count] : counts)
          text += (text.empty() ? "" : ", ") + key + " x" + std::to_string(count);
        return text;
      };
      int64_t kept = 0;
      for (const auto &entry : lift->kept)
        kept += entry.second;
      (**module)->setAttr(
          "plait.onnx_opset_lift",
          b.getDictionaryAttr({b.getNamedAttr("from", b.getI64IntegerAttr(lift->from)),
                               b.getNamedAttr("to", b.getI64IntegerAttr(importOpset)),
                               b.getNamedAttr("nodes", b.getI64IntegerAttr(lift->nodes)),
                               b.getNamedAttr("rewritten", b.getStringAttr(list(lift->rewritten))),
                               b.getNamedAttr("kept_nodes", b.getI64IntegerAttr(kept)),
                               b.getNamedAttr("kept", b.getStringAttr(list(lift->kept)))}));
    }
    return module;
  };
  if (opts.microBatches == 1)
    return finish(importer.run());
  // A model whose shapes pin the batch fails at the micro-batch size: say why it was changed.
  ScopedDiagnosticHandler context(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      diag << " (imported at the micro-batch size for --micro-batches " << opts.microBatches
           << ", which needs shapes that follow the batch: export with dynamic batch axes)";
    return failure(); // on to the handler that prints it
  });
  return finish(importer.run());
}

} // namespace plait
