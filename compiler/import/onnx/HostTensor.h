// Host tensors for import-time constant folding, and the folding kernels that act on them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace plait::onnx_import {

/// The element types plait supports. I8/I16 are signed; U8..U64 unsigned (MLIR's ui8..ui64).
enum class ElemKind { F16, BF16, F32, F64, I32, I64, Bool, I8, U8, I16, U16, U32, U64 };

bool isFloatKind(ElemKind kind);
bool isUnsignedKind(ElemKind kind);
mlir::Type toMlirType(ElemKind kind, mlir::MLIRContext *ctx);
std::optional<ElemKind> kindOf(mlir::Type type);
/// ONNX's name of the element type ("float", "int64", ...), for messages.
llvm::StringRef kindName(ElemKind kind);

/// The element count of `shape`, saturating at INT64_MAX.
int64_t numElementsOf(llvm::ArrayRef<int64_t> shape);

/// Folded results that are not splats hold at most this many elements; bigger results are built
/// as plait ops instead (or, where plait has no op, reported as unsupported).
constexpr int64_t kMaxFoldedElements = int64_t(1) << 22;
inline bool fitsFolding(llvm::ArrayRef<int64_t> shape) {
  return numElementsOf(shape) <= kMaxFoldedElements;
}
/// Tensors of more elements than this are rejected as malformed (no real model has them, and the
/// element count must not overflow anywhere downstream).
constexpr int64_t kMaxTensorElements = int64_t(1) << 48;

/// A dense tensor on the host. Floats are held as doubles, rounded to the element type after every
/// operation; integers and booleans as int64 (booleans 0/1; uint64 as its bit pattern, so that
/// values of 2^63 and more read negative: getDouble and the folds compare them unsigned).
/// Storage holding one element for a shape with more is a splat, which keeps folded ConstantOfShape/Expand results small.
class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor.
  HostTensor(ElemKind kind, llvm::ArrayRef<int64_t> shape);

  static HostTensor splat(ElemKind kind, llvm::ArrayRef<int64_t> shape, double value);
  static HostTensor splatInt(ElemKind kind, llvm::ArrayRef<int64_t> shape, int64_t value);
  static HostTensor fromInts(ElemKind kind, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> values);
  static HostTensor fromDoubles(ElemKind kind, llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<double> values);
  static HostTensor fromAttr(mlir::DenseElementsAttr attr);

  ElemKind kind() const { return kind_; }
  llvm::ArrayRef<int64_t> shape() const { return shape_; }
  int64_t rank() const { return shape_.size(); }
  int64_t numElements() const { return numElementsOf(shape_); }
  bool isFloat() const { return isFloatKind(kind_); }
  bool isSplat() const { return storageSize() == 1 && numElements() != 1; }

  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Sets element `i` (of a non-splat tensor), rounding to the element type.
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);
  /// All elements as int64 (floats truncate), e.g. for shape operands.
  llvm::SmallVector<int64_t> toInts() const;

  /// The same elements with another shape of the same element count.
  HostTensor reshaped(llvm::ArrayRef<int64_t> shape) const;
  /// Expands a splat into full storage.
  HostTensor materialized() const;

  mlir::RankedTensorType type(mlir::MLIRContext *ctx) const;
  mlir::DenseElementsAttr toAttr(mlir::MLIRContext *ctx) const;

private:
  size_t storageSize() const { return isFloat() ? floats_.size() : ints_.size(); }

  ElemKind kind_ = ElemKind::F32;
  llvm::SmallVector<int64_t> shape_;
  std::vector<double> floats_;
  std::vector<int64_t> ints_;
};

/// Rounds `v` to the precision of a float element type.
double roundToKind(double v, ElemKind kind);
/// Wraps or clamps `v` to an integer element type (bool: v != 0).
int64_t wrapToKind(int64_t v, ElemKind kind);
/// `v` truncated toward zero into an integer element type, saturating at its bounds (NaN: 0),
/// as plait's cast kernels convert floats.
int64_t floatToKind(double v, ElemKind kind);

//===----------------------------------------------------------------------===//
// Folding kernels. Shapes are validated by the caller unless a kernel returns Expected.
//===----------------------------------------------------------------------===//

enum class UnaryFn { Neg, Abs, Not, Sqrt, Exp, Log, Floor, Ceil, Round, Sign, Reciprocal, Relu };
enum class BinaryFn {
  Add, Sub, Mul, Div, Pow, Max, Min, Mod, FMod,
  Equal, Less, LessEqual, Greater, GreaterEqual, And, Or, Xor, ShiftLeft, ShiftRight
};
enum class ReduceFn { Sum, Prod, Max, Min, Mean };

llvm::Expected<HostTensor> foldUnary(UnaryFn fn, const HostTensor &x);
/// numpy-broadcasting binary op; comparisons and logic produce bool.
llvm::Expected<HostTensor> foldBinary(BinaryFn fn, const HostTensor &a, const HostTensor &b);
llvm::Expected<HostTensor> foldWhere(const HostTensor &cond, const HostTensor &x,
                                     const HostTensor &y);
HostTensor foldCast(const HostTensor &x, ElemKind to);
HostTensor foldBroadcastTo(const HostTensor &x, llvm::ArrayRef<int64_t> shape);
HostTensor foldTranspose(const HostTensor &x, llvm::ArrayRef<int64_t> perm);
/// Strided slice in plait.slice's normalised form (one start/end/step per dimension).
HostTensor foldSlice(const HostTensor &x, llvm::ArrayRef<int64_t> starts,
                     llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> steps);
HostTensor foldConcat(llvm::ArrayRef<const HostTensor *> inputs, int64_t axis);
llvm::Expected<HostTensor> foldGather(const HostTensor &data, const HostTensor &indices,
                                      int64_t axis);
HostTensor foldPad(const HostTensor &x, llvm::ArrayRef<int64_t> pads, double value);
/// Reduction over normalised `axes` (empty: all).
HostTensor foldReduce(ReduceFn fn, const HostTensor &x, llvm::ArrayRef<int64_t> axes,
                      bool keepdims);

} // namespace plait::onnx_import
