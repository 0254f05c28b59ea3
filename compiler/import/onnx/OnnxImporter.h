// Public entry points of the ONNX importer: an ONNX model file becomes a plait-dialect module.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

namespace plait {

struct OnnxImportOptions {
  /// Graph inputs bound to compile-time constants (e.g. a Reshape's `shape` given as a graph input
  /// in ONNX's node tests): input name -> file holding the value, an ONNX TensorProto (.pb) or a
  /// NumPy array (.npy). This is what `--const-input NAME=FILE` fills. Bound inputs are not
  /// function arguments; a value's element type must match the input's, and its shape too where
  /// the model declares one.
  std::map<std::string, std::string> constInputs;
  /// The same, with values already in memory (takes precedence over constInputs).
  std::map<std::string, mlir::DenseElementsAttr> constValues;
  /// Models of opsets below 13 are lifted to opset 13 with ONNX's version converter before
  /// import (off: plait lifts them with its own rules, LegacyOpsets.h, naming the first node
  /// no rule covers).
  bool upgradeOpset = false;
  /// Sizes for symbolic input dimensions (`dim_param`), e.g. {"batch", 8}. A symbolic dimension
  /// without a size here is reported as unsupported.
  std::map<std::string, int64_t> dimParams;
  /// Import one micro-batch of the model (--micro-batches): the batch B is the leading
  /// dimension of the graph inputs that are not bound, the same for all of them; it becomes
  /// B / microBatches there and in every graph output whose leading dimension is B. The
  /// model's shape subgraphs then fold at the smaller batch, as they do for models exported
  /// with dynamic batch axes. B must be a multiple of microBatches.
  int64_t microBatches = 1;
  /// Keep buffers (for training): a training-mode BatchNormalization's running mean and
  /// variance initializers become plait.params marked `buffer`, and their values after the
  /// node (as PyTorch updates them) extra function results marked `plait.buffer = NAME`, so
  /// the training step carries them from step to step. Off: they are constants and the
  /// node's running-statistics outputs are ordinary values (ONNX's semantics).
  bool buffers = false;
  /// The model is imported to be trained: a DequantizeLinear of a QuantizeLinear's result
  /// (the pair a quantization-aware model is exported as) passes the gradient straight
  /// through where the value was within the quantized range, as PyTorch's FakeQuantize does.
  /// Off: the pair is what ONNX says, whose gradient is zero (round's).
  bool training = false;
  /// Synchronised BatchNorm (PyTorch's SyncBatchNorm): a training-mode BatchNormalization's
  /// batch mean and variance are plait.sync_means, the statistics of the global batch once
  /// plait-shard lowers them for the world size, and its running variance's n / (n - 1) is
  /// marked to count every rank's values (plait.unbiased_ranks).
  bool syncBatchNorm = false;
  /// nn.Embedding's padding_idx, which torch.onnx.export drops: initializer name -> row. A
  /// Gather (axis 0) of that initializer becomes a plait.gather with `padding_idx`, whose row
  /// gets no gradient. A name that no such Gather reads is an error.
  std::map<std::string, int64_t> paddingIdx;
};

/// Imports the ONNX model at `path` (opsets 13-17 of the default domain) as a module holding
/// `func.func @main`. On failure, exactly one error has been emitted through `ctx`'s diagnostic
/// engine: its message is a complete line, "PATH: node 'NAME' (OpType, opset N): what went wrong"
/// (or "PATH: what went wrong" when no node is involved), and its location is
/// NameLoc(node, FileLineColLoc(PATH, 0, 0)). Messages about limits of plait contain the word
/// "unsupported"; messages about malformed models do not.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxFile(mlir::MLIRContext &ctx, llvm::StringRef path, const OnnxImportOptions &opts);

/// Reads a tensor from an ONNX TensorProto file (.pb) or a NumPy array file (.npy, little-endian,
/// C order) for OnnxImportOptions::constInputs. Emits one error (naming `path`) and returns
/// failure for unreadable files and unsupported element types.
mlir::FailureOr<mlir::DenseElementsAttr> loadTensorFile(mlir::MLIRContext &ctx,
                                                        llvm::StringRef path);

} // namespace plait
