// Internal interface between the ONNX graph walk (OnnxImporter.cpp) and the op importers, which
// are grouped by family in ElementwiseOps.cpp, TensorOps.cpp, NeuralOps.cpp, ConvPoolOps.cpp and
// the files named after their ops (EinsumOps.cpp, IndexingOps.cpp, ResizeOps.cpp, TfIdfOps.cpp,
// GridSampleOps.cpp, RoiAlignOps.cpp, RecurrentOps.cpp, SpectralOps.cpp, TrainingOps.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/import/onnx/HostTensor.h"
#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

namespace onnx {
class NodeProto;
class AttributeProto;
class GraphProto;
class TensorProto;
} // namespace onnx

namespace plait::onnx_import {

class GraphImporter;
struct ValueEntry;

/// Decodes an ONNX tensor (any encoding: typed fields, raw_data, external data relative to
/// `baseDir`) into a DenseElementsAttr. Errors name the problem but not the tensor.
llvm::Expected<mlir::DenseElementsAttr> decodeTensorProto(const onnx::TensorProto &tensor,
                                                          mlir::MLIRContext *ctx,
                                                          llvm::StringRef baseDir);
/// The MLIR element type of an ONNX TensorProto data type; null when plait does not support it.
mlir::Type elementTypeOf(int onnxType, mlir::MLIRContext *ctx);
/// ONNX's name of a TensorProto data type ("uint8", ...), for messages.
std::string onnxTypeName(int onnxType);

/// A QuantizeLinear's result as a training import records it (OnnxImportOptions::training),
/// for the DequantizeLinear that reads it: the float input, where it was within the quantized
/// range (i1), and the scale and zero point values it was quantized with (a null zero point:
/// none).
struct QuantizedValue {
  mlir::Value x, inRange, scale, zeroPoint;
};

/// One node being imported. Gives the op importers its inputs (as MLIR values or folded host
/// tensors), its attributes and its outputs, and builds plait ops at the node's location.
///
/// Error protocol: every function that can fail emits the node's single diagnostic and returns a
/// null Value / nullptr / failure; callers return failure() at once.
class NodeContext {
public:
  NodeContext(GraphImporter &graph, const onnx::NodeProto &node, mlir::Location loc,
              int64_t opset);

  llvm::StringRef opType() const;
  int64_t opset() const { return opset_; }
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder();
  mlir::MLIRContext *context();
  /// OnnxImportOptions::syncBatchNorm: a training-mode BatchNormalization's statistics are
  /// averaged over the data-parallel ranks.
  bool syncBatchNorm() const;
  /// OnnxImportOptions::training: the model is imported to be trained.
  bool training() const;
  /// Records how the quantized value `q` was computed (QuantizeLinear, training imports).
  void recordQuantization(mlir::Value q, const QuantizedValue &how);
  /// What recordQuantization recorded for `q`, or null.
  const QuantizedValue *quantizationOf(mlir::Value q) const;
  /// Counts a quantization pair given the straight-through gradient (`straightThrough`) or a
  /// quantized constant dequantized at import, for the module's `plait.quantization`.
  void countQuantization(bool straightThrough);
  /// OnnxImportOptions::paddingIdx's row for the initializer `name`, if it names one.
  std::optional<int64_t> paddingIdx(llvm::StringRef name) const;

  //===--- Inputs ----------------------------------------------------------===//
  unsigned numInputs() const;
  /// True when input `i` exists and is not an omitted optional input (empty name).
  bool hasInput(unsigned i) const;
  llvm::StringRef inputName(unsigned i) const;
  /// The type of input `i`, without materialising constants. Null after an error.
  mlir::RankedTensorType inputType(unsigned i);
  /// Input `i` as an MLIR value; folded constants and params are materialised on first use.
  mlir::Value input(unsigned i);
  /// Input `i` as a non-trainable value: a compile-time constant (folded or initializer) becomes
  /// a plait.constant, anything else is input(i). For running statistics and the like.
  mlir::Value constantInput(unsigned i);
  /// Input `i` as a buffer whose value after the step is `updated` (a training-mode
  /// BatchNormalization's running statistics), when the import keeps buffers
  /// (OnnxImportOptions::buffers) and the input is a float initializer: a plait.param marked
  /// `buffer`, and `updated` an extra function result naming it. Else constantInput(i), and
  /// `updated` stays what the node's output says. Null after an error.
  mlir::Value bufferInput(unsigned i, const std::function<mlir::Value(mlir::Value)> &updated);
  /// A new i64 scalar buffer `name`, zero at the start, that each forward increments (a
  /// BatchNorm's num_batches_tracked); null, without an error, when the graph already has a
  /// value of that name.
  mlir::Value counterBuffer(const std::string &name);
  /// The folded value of input `i` when it is an import-time constant (never a param).
  const HostTensor *foldedInput(unsigned i);
  /// The value of input `i` when it is known at import time: a folded constant, or an
  /// initializer, which is then read as a constant (never a trainable param). Null, without an
  /// error, when it is computed at run time or absent (or after the error of an unknown name).
  const HostTensor *knownInput(unsigned i);
  /// True when every present input is an import-time constant, so the node can be folded.
  bool allInputsFolded();
  /// Input `i` (role `role` in the ONNX spec, e.g. "shape") as a compile-time constant: folded
  /// values and initializers qualify. Emits the "--const-input NAME=FILE" error otherwise.
  const HostTensor *requireConstInput(unsigned i, llvm::StringRef role);
  /// Like requireConstInput, but for integer operands (shapes, axes, ...), as int64 values.
  std::optional<llvm::SmallVector<int64_t>> requireIntsInput(unsigned i, llvm::StringRef role);
  /// Integers given either as input `i` (the opset-13 form, which must be a compile-time
  /// constant) or, when that input is absent, as attribute `name` (empty when neither is).
  std::optional<llvm::SmallVector<int64_t>> intsInputOrAttr(unsigned i, llvm::StringRef name);

  //===--- Attributes ------------------------------------------------------===//
  bool hasAttr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t dflt) const;
  double floatAttr(llvm::StringRef name, double dflt) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef dflt) const;
  llvm::SmallVector<int64_t> intsAttr(llvm::StringRef name) const;
  llvm::SmallVector<double> floatsAttr(llvm::StringRef name) const;
  llvm::SmallVector<std::string> stringsAttr(llvm::StringRef name) const;
  /// A tensor attribute decoded to a host tensor; nullopt (after an error) when undecodable.
  std::optional<HostTensor> tensorAttr(llvm::StringRef name);
  const onnx::AttributeProto *rawAttr(llvm::StringRef name) const;

  //===--- Outputs ---------------------------------------------------------===//
  unsigned numOutputs() const;
  bool hasOutput(unsigned i) const;
  llvm::StringRef outputName(unsigned i) const;
  void setOutput(unsigned i, mlir::Value value);
  void setOutput(unsigned i, HostTensor folded);
  /// Sets output 0 to `value`; a null value (a builder that already reported) is a failure.
  mlir::LogicalResult setResult(mlir::Value value);
  /// Output `out` is input `in`: folded values and params stay what they are. With `copyParam`,
  /// a param input becomes a new param named after the output, initialised with the same value.
  mlir::LogicalResult forwardInput(unsigned out, unsigned in, bool copyParam = false);
  /// Output `out` is the value named `name` (a subgraph's output), whatever its kind.
  mlir::LogicalResult forwardValue(unsigned out, llvm::StringRef name);
  /// Imports `graph`'s nodes in place of this node (the branch an If takes); they read the
  /// enclosing graph's values by name.
  mlir::LogicalResult importSubgraph(const onnx::GraphProto &graph);
  /// The entry of input `i`, a tensor or a sequence (to bind it to a loop body's input); null
  /// after an error.
  const ValueEntry *inputEntry(unsigned i);
  /// One iteration of a loop's body (GraphImporter::importBody).
  mlir::LogicalResult
  importBody(const onnx::GraphProto &body, llvm::ArrayRef<ValueEntry> inputs,
             llvm::function_ref<mlir::LogicalResult(llvm::MutableArrayRef<ValueEntry>)> use);
  /// Counts an unrolled Loop or Scan (`scan`) of `iterations` iterations of a body of
  /// `bodyNodes` nodes, for the module's `plait.onnx_unrolled`.
  void countUnrolled(bool scan, int64_t iterations, int64_t bodyNodes);
  /// Output `i` is `entry` (a loop's result), whatever its kind.
  void setOutputEntry(unsigned i, ValueEntry entry);
  /// `entry` as an MLIR value (a folded constant or a param materialised); null after an error.
  mlir::Value valueOf(ValueEntry &entry);
  /// How to make the runtime value `name` known at import ("bind it with --const-input ..."),
  /// or empty when no graph input it depends on can be bound.
  std::string bindingHint(llvm::StringRef name);
  /// Sets a folded output from a folding kernel, or reports the kernel's error.
  mlir::LogicalResult setFolded(unsigned i, llvm::Expected<HostTensor> folded);

  //===--- Diagnostics -----------------------------------------------------===//
  /// "PATH: node 'NAME' (OpType, opset N): message"; returns failure.
  mlir::LogicalResult error(const llvm::Twine &message);
  /// As error(), with "unsupported " in front of `what`.
  mlir::LogicalResult unsupported(const llvm::Twine &what);
  /// Errors unless input `i` has a floating-point element type (plait's op needs one).
  mlir::LogicalResult requireFloatInput(unsigned i);

  //===--- Building plait ops ----------------------------------------------===//
  /// Creates op `OpT`. Its result type comes from the op's shape rule when it has one, else
  /// from `resultType`, else it is the type of the first operand. Verifies the op; a shape rule
  /// or verifier failure becomes the node's diagnostic and the result is null.
  template <typename OpT>
  mlir::Value create(mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
                     mlir::Type resultType = {}) {
    mlir::Operation *op = createOp(OpT::getOperationName(), operands, attrs,
                                   resultType ? mlir::TypeRange(resultType) : mlir::TypeRange(), 1);
    return op ? op->getResult(0) : mlir::Value();
  }
  /// Generic form; `numResults` placeholders are typed by the shape rule when `resultTypes` is
  /// empty.
  mlir::Operation *createOp(llvm::StringRef name, mlir::ValueRange operands,
                            llvm::ArrayRef<mlir::NamedAttribute> attrs,
                            mlir::TypeRange resultTypes, unsigned numResults);

  /// A plait.constant holding `value` (placed with the params, at the top of the function).
  mlir::Value constant(const HostTensor &value);
  /// A rank-0 constant of element type `elementType`.
  mlir::Value scalar(double value, mlir::Type elementType);
  /// plait.reshape, or `x` itself when the shape already matches.
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// plait.cast, or `x` itself when the element type already matches.
  mlir::Value cast(mlir::Value x, mlir::Type elementType);
  /// plait.broadcast_to, or `x` itself when the shape already matches.
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape);

  mlir::NamedAttribute attr(llvm::StringRef name, mlir::Attribute value);
  mlir::NamedAttribute i64Attr(llvm::StringRef name, int64_t value);
  mlir::NamedAttribute f64Attr(llvm::StringRef name, double value);
  mlir::NamedAttribute boolAttr(llvm::StringRef name, bool value);
  mlir::NamedAttribute arrayAttr(llvm::StringRef name, llvm::ArrayRef<int64_t> values);

  //===--- Sequences and optionals (SequenceOps.cpp) ------------------------===//
  /// The entry of input `i`, which must be a sequence; null after an error.
  const ValueEntry *sequenceInput(unsigned i);
  /// Output `i` is the sequence of `elements` (tensor entries) of element type `elementType`.
  void setSequence(unsigned i, std::vector<ValueEntry> elements, mlir::Type elementType);
  /// Output `i` is an optional holding `value` (a tensor or sequence entry), or empty.
  void setOptional(unsigned i, std::optional<ValueEntry> value);

private:
  /// The entry of input `i`, a tensor; null after an error when it is absent, unknown or a
  /// sequence.
  ValueEntry *presentInput(unsigned i);
  /// The entry of present input `i`, unless it is a sequence (an error); null after an error.
  ValueEntry *tensorLookup(unsigned i);

  GraphImporter &graph_;
  const onnx::NodeProto &node_;
  mlir::Location loc_;
  int64_t opset_;
};

/// Elementwise arithmetic on values of one float type for the importers that compute
/// positions and weights from run-time tensors (GridSample, RoiAlign). A null operand (a
/// builder that already reported) gives a null result, so chains need no checks between steps.
class ElementArith {
public:
  ElementArith(NodeContext &ctx, mlir::Type type) : ctx_(ctx), type_(type) {}

  mlir::Value scalar(double v) { return ctx_.scalar(v, type_); }
  template <typename OpT> mlir::Value op(mlir::Value a, mlir::Value b) {
    return a && b ? ctx_.create<OpT>({a, b}) : mlir::Value();
  }
  mlir::Value add(mlir::Value a, mlir::Value b) { return op<AddOp>(a, b); }
  mlir::Value sub(mlir::Value a, mlir::Value b) { return op<SubOp>(a, b); }
  mlir::Value mul(mlir::Value a, mlir::Value b) { return op<MulOp>(a, b); }
  mlir::Value div(mlir::Value a, mlir::Value b) { return op<DivOp>(a, b); }
  mlir::Value add(mlir::Value a, double b) { return add(a, scalar(b)); }
  mlir::Value mul(mlir::Value a, double b) { return mul(a, scalar(b)); }
  mlir::Value floor(mlir::Value a) { return a ? ctx_.create<FloorOp>({a}) : a; }
  mlir::Value clamp(mlir::Value a, double lo, double hi) {
    return a ? ctx_.create<ClampOp>({a}, {ctx_.f64Attr("min", lo), ctx_.f64Attr("max", hi)}) : a;
  }

protected:
  NodeContext &ctx_;
  mlir::Type type_;
};

/// A float image x [N, C, H, W] as rows of pixels [N * H * W, C], which a gather reads at
/// (n * H + y) * W + x (GridSample's and RoiAlign's bilinear taps). Null after an error.
mlir::Value pixelRows(NodeContext &ctx, mlir::Value x);

/// Shorthand for the element type of a ranked tensor value.
inline mlir::Type elementTypeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

using OpImporter = mlir::LogicalResult (*)(NodeContext &);
using OpImporterMap = llvm::StringMap<OpImporter>;

void registerElementwiseOps(OpImporterMap &map);
void registerTensorOps(OpImporterMap &map);
void registerSourceOps(OpImporterMap &map);
void registerNeuralOps(OpImporterMap &map);
void registerConvPoolOps(OpImporterMap &map);
void registerEinsumOps(OpImporterMap &map);
void registerIndexingOps(OpImporterMap &map);
void registerResizeOps(OpImporterMap &map);
void registerRecurrentOps(OpImporterMap &map);
void registerGridSampleOps(OpImporterMap &map);
void registerRoiAlignOps(OpImporterMap &map);
void registerDataShapeOps(OpImporterMap &map);
void registerSpectralOps(OpImporterMap &map);
void registerQuantizeOps(OpImporterMap &map);
void registerTrainingOps(OpImporterMap &map);
void registerRandomOps(OpImporterMap &map);
void registerControlFlowOps(OpImporterMap &map);
void registerSequenceOps(OpImporterMap &map);
void registerTfIdfOps(OpImporterMap &map);
void registerLegacyOps(OpImporterMap &map); // LegacyOpsets.cpp: plait.legacy's helper nodes

/// ONNX's training domain, whose optimizer ops (Adagrad, Adam, Momentum; version 1) plait
/// imports (TrainingOps.cpp).
inline constexpr llvm::StringLiteral kTrainingDomain = "ai.onnx.preview.training";
/// The key of an op of another domain than the default in the importers' map: "DOMAIN::OP"
/// (an op of the default domain is keyed by its type alone).
inline std::string qualifiedOpType(llvm::StringRef domain, llvm::StringRef opType) {
  return (domain + "::" + opType).str();
}

/// The most time steps (over all directions) a recurrent layer is unrolled into, and the most
/// iterations of a Loop or Scan. A recurrent step is some 20 ops forward and 40 in the training
/// step: an LSTM of 2,048 steps compiles for training in 9 s on a 2-core machine (57,364
/// kernels a step), and compile time grows a little faster than the steps.
constexpr int64_t kMaxUnrolledSteps = 4096;
/// The most nodes a Loop's or Scan's unrolled iterations may hold together (body nodes times
/// iterations): 4,096 of the recurrent steps above, in nodes.
constexpr int64_t kMaxUnrolledNodes = 20 * kMaxUnrolledSteps;

//===--- Helpers shared by the op importers ------------------------------===//
/// Normalises `axis` against `rank`, or reports it ("WHAT A is out of range for rank R").
std::optional<int64_t> normalizedAxis(NodeContext &ctx, int64_t axis, int64_t rank,
                                      llvm::StringRef what = "axis");
/// The permutation that moves dimension `axis` of a rank-`rank` tensor to position `to`, the
/// others keeping their order, and its inverse (moveAxis). Importers that work along one axis
/// (CumSum, TopK, DFT, ReverseSequence) move it where their ops want it, then back.
struct AxisMove {
  llvm::SmallVector<int64_t> perm, inverse;
  bool moves = false; // false: the identity, and apply/undo return their operand
  /// `x` transposed by perm (null stays null).
  mlir::Value apply(NodeContext &ctx, mlir::Value x) const;
  /// `x` transposed back by inverse (null stays null).
  mlir::Value undo(NodeContext &ctx, mlir::Value x) const;
  /// `shape` permuted as apply permutes it.
  llvm::SmallVector<int64_t> shape(llvm::ArrayRef<int64_t> shape) const;
};
AxisMove moveAxis(int64_t rank, int64_t axis, int64_t to);
/// `x` sliced along one dimension `d` (start, end, step normalised as plait.slice wants).
mlir::Value sliceAlong(NodeContext &ctx, mlir::Value x, int64_t d, int64_t start, int64_t end,
                       int64_t step);
/// The convolution Conv computes of float x [N, C, spatial...] and w [M, C/group, kernel...]
/// (1-D, 2-D or 3-D) with the node's window attributes (strides, pads, auto_pad, dilations,
/// group) and an optional bias [M]: ConvPoolOps.cpp, for the importers whose operands are
/// computed (ConvInteger, QLinearConv). Null after the node's error.
mlir::Value convolution(NodeContext &ctx, mlir::Value x, mlir::Value w, mlir::Value bias);
/// i64 `idx` with negative entries counted from the end of `extent` (idx + extent); null
/// after an error.
mlir::Value wrapNegativeIndex(NodeContext &ctx, mlir::Value idx, int64_t extent);

} // namespace plait::onnx_import
