// The importer's per-model state, shared by the graph walk (OnnxImporter.cpp) and the per-node
// API the op importers use (NodeContext.cpp). Internal to compiler/import/onnx.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/import/onnx/Importer.h"
#include "compiler/import/onnx/OnnxImporter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

namespace plait::onnx_import {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;

/// What the importer knows about one ONNX value.
struct ValueEntry {
  enum class Kind {
    Runtime,  // computed by plait ops (or a function argument)
    Folded,   // known at import time; materialised as plait.constant where a real op uses it
    Param,    // a float initializer: a trainable plait.param, created on first use
    Sequence, // an ONNX sequence: its tensors, each an entry, known in number and order at
              // import (SequenceOps.cpp); it exists only in the importer
    Optional, // an ONNX optional: empty or holding one entry (a tensor or a sequence), known
              // at import (SequenceOps.cpp); it exists only in the importer
  };
  Kind kind = Kind::Runtime;
  mlir::Value value;
  mlir::RankedTensorType type;
  std::shared_ptr<const HostTensor> folded;        // Folded; Param once read as a constant
  const onnx::TensorProto *initializer = nullptr; // Param
  std::string paramName;                          // Param: the plait.param's name
  /// Sequence: its tensors in order, and their element type (that of an empty sequence too).
  /// Optional: none, or the one value it holds.
  std::shared_ptr<const std::vector<ValueEntry>> elements;
  mlir::Type elementType;
};

/// Entries of values the importers compute themselves (ControlFlowOps.cpp, SequenceOps.cpp).
ValueEntry runtimeEntry(mlir::Value value);
ValueEntry foldedEntry(HostTensor value, mlir::MLIRContext *ctx);
/// The tensor type of a tensor entry (null for a sequence, or a param of an unsupported dtype).
mlir::RankedTensorType entryType(const ValueEntry &entry, mlir::MLIRContext *ctx);

/// `parts` (tensor entries) joined along `axis`: stacked along a new axis (`newAxis`; equal
/// types, `axis` in [0, rank]) or concatenated (equal but along `axis`, in [0, rank)). Folded
/// when every part is. Errors name the value `what` and the part ("iteration 3", "element 3":
/// `partName`) that does not fit. (ControlFlowOps.cpp)
mlir::FailureOr<ValueEntry> joinEntries(NodeContext &ctx, llvm::MutableArrayRef<ValueEntry> parts,
                                        int64_t axis, bool newAxis, const llvm::Twine &what,
                                        llvm::StringRef partName);

/// The tensor entry `x` cut along `axis` into pieces of `sizes` (adding up to the axis),
/// each without the axis when `squeeze` (all of size 1): foldSlice of a folded value, else one
/// plait.split (none for a single piece) and reshapes. (ControlFlowOps.cpp)
mlir::FailureOr<llvm::SmallVector<ValueEntry>> splitEntries(NodeContext &ctx, ValueEntry x,
                                                            int64_t axis,
                                                            llvm::ArrayRef<int64_t> sizes,
                                                            bool squeeze);

class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext &ctx, llvm::StringRef path, onnx::ModelProto &model,
                const OnnxImportOptions &opts, int64_t opset)
      : ctx(ctx), path(path.str()), baseDir(llvm::sys::path::parent_path(path).str()), model(model),
        opts(opts), opset(opset), modelOpset(opset), builder(&ctx), prologue(&ctx) {}

  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> run();

  // Used by NodeContext.
  mlir::LogicalResult nodeError(const onnx::NodeProto &node, const llvm::Twine &message);
  mlir::LogicalResult graphError(const llvm::Twine &message);
  ValueEntry *lookup(const onnx::NodeProto &node, llvm::StringRef name);
  mlir::Value materialize(llvm::StringRef name, ValueEntry &entry);
  const HostTensor *constantValue(const onnx::NodeProto &node, llvm::StringRef name,
                                  ValueEntry &entry);
  mlir::Value constant(const HostTensor &value, mlir::Location loc);
  /// A new i64 scalar buffer `name` (zero at the start) that each forward increments, as
  /// PyTorch's BatchNorm counts its forwards in num_batches_tracked; null when the graph
  /// already names a value or param so.
  mlir::Value counterBuffer(const std::string &name, mlir::Location loc);
  std::string runtimeDependencyHint(llvm::StringRef name);
  /// Imports the nodes of `graph` (an If's branch) in place, as if they stood in the main
  /// graph: they read the outer graph's values by name, and their outputs are values too.
  mlir::LogicalResult importSubgraph(const onnx::GraphProto &graph);
  /// Imports `body` (a Loop's or Scan's body) once, for one iteration: its inputs are bound to
  /// `inputs`, in order, its initializers to constants, and its nodes read these and the
  /// enclosing graph's values by name. `use` receives the entries of its outputs while its
  /// values are still bound (so that a diagnostic can trace them); afterwards every name the
  /// body defined is unbound again, and an enclosing value it shadowed restored, so that the
  /// next iteration imports the same nodes afresh.
  mlir::LogicalResult
  importBody(const onnx::NodeProto &owner, const onnx::GraphProto &body,
             llvm::ArrayRef<ValueEntry> inputs,
             llvm::function_ref<mlir::LogicalResult(llvm::MutableArrayRef<ValueEntry>)> use);
  std::string nodeName(const onnx::NodeProto &node) const;

  mlir::MLIRContext &ctx;
  std::string path;
  std::string baseDir;
  onnx::ModelProto &model;
  const OnnxImportOptions &opts;
  int64_t opset;
  /// The opset the model declares, which diagnostics name (below `opset` when it was lifted).
  int64_t modelOpset;
  mlir::OpBuilder builder;  // the function body, appending
  mlir::OpBuilder prologue; // params and constants, at the top of the function
  llvm::StringMap<ValueEntry> values;
  /// Buffers and their values after the step, in import order (extra function results).
  llvm::SmallVector<std::pair<std::string, mlir::Value>> bufferUpdates;
  /// QuantizeLinear results of a training import and how they were computed.
  llvm::DenseMap<mlir::Value, QuantizedValue> quantizations;
  /// What the quantization importers did, for the module's `plait.quantization` attribute
  /// (--explain): DequantizeLinear pairs given the straight-through gradient, and
  /// DequantizeLinears of known tensors (quantized weights) folded into float constants.
  int64_t straightThroughPairs = 0, dequantizedConstants = 0;
  /// What the control-flow importers unrolled, for the module's `plait.onnx_unrolled`
  /// (--explain): Loop and Scan nodes, their iterations, and the body nodes imported for them.
  int64_t unrolledLoops = 0, unrolledScans = 0, unrolledIterations = 0, unrolledNodes = 0;
  /// Body nodes imported by importBody so far, loops within loops included (at most
  /// kMaxUnrolledNodes).
  int64_t bodyNodesImported = 0;

private:
  llvm::DenseMap<mlir::Attribute, mlir::Value> constantCache_;
  llvm::StringMap<mlir::Value> paramCache_; // param name -> plait.param

  mlir::FailureOr<mlir::RankedTensorType> declaredType(const onnx::ValueInfoProto &info, bool isInput);
  mlir::LogicalResult bindInitializers();
  mlir::LogicalResult importNode(const onnx::NodeProto &node, size_t index);
  mlir::LogicalResult crossCheckShapeInference();

  llvm::StringMap<const onnx::NodeProto *> producer_; // value name -> the node defining it
  llvm::DenseMap<const onnx::NodeProto *, size_t> nodeIndex_;
  llvm::StringSet<> runtimeInputs_;
  bool errorEmitted_ = false;
};

} // namespace plait::onnx_import
