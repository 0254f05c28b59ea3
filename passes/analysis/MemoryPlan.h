// Memory-plan analysis: liveness over program order, then byte offsets in one arena.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

namespace plait {

enum class BufferKind { Input, Param, Constant, Activation, State, Hyper };
const char *bufferKindName(BufferKind kind);

/// One tensor's slot in the arena. Times are program positions: 0 is the step's start
/// (arguments, params, constants), op i of the body (1-based) defines at time i, and the
/// function's end is `numOps + 1`. Params, state, constants and hyper-parameters live for
/// the whole step; values stored by plait.assign live to the end (the runtime copies
/// them into their targets after the last instruction). A buffer occupies [offset, offset + size) during
/// [start, end], both inclusive, so an op's results never share bytes with its operands.
struct PlannedBuffer {
  mlir::Value value;
  BufferKind kind = BufferKind::Activation;
  int64_t bytes = 0;  // exact tensor bytes
  int64_t size = 0;   // bytes rounded up to the alignment
  int64_t offset = 0;
  int64_t start = 0, end = 0;
  /// >= 0: this buffer has no bytes of its own and lives in buffers[aliasOf] (an optimizer
  /// update written straight into the param or state it replaces, a reshape's result in
  /// its operand's bytes, a fused kernel's result over an operand that dies there, or an
  /// in-place all-reduce's result).
  int64_t aliasOf = -1;
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;       // in definition order
  llvm::DenseMap<mlir::Value, size_t> index; // value -> position in `buffers`
  int64_t arenaBytes = 0;
  int64_t lowerBound = 0;  // max over time of the live aligned bytes
  std::string heuristic;   // which placement won
  int64_t inPlaceBuffers = 0, inPlaceBytes = 0; // values stored in their assign's target
  int64_t reshapeAliases = 0, reshapeAliasBytes = 0; // reshape results in their operand's bytes
  int64_t elementwiseAliases = 0, elementwiseAliasBytes = 0; // fused results over an operand
  int64_t mapAliases = 0, mapAliasBytes = 0; // unfused elementwise maps' results over an operand
  int64_t collectiveAliases = 0, collectiveAliasBytes = 0; // all-reduces done in place
  int64_t bytesOf(BufferKind kind) const;
};

/// Bytes of a tensor as the runtime stores it (i1 takes one byte per element).
int64_t tensorBytes(mlir::RankedTensorType type);

/// The largest tensor plait plans: 2^48 bytes (256 TiB), far beyond any device's memory, and
/// small enough that sizes, offsets and the kernels' workspaces computed from it stay in
/// int64.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// Checks every tensor value under `root` (block arguments and results) before anything sizes
/// them: a static shape's element type must be an integer or float type and its bytes at
/// most kMaxTensorBytes. One error at the first value that is not, naming its type.
mlir::LogicalResult verifyTensorSizes(mlir::Operation *root);

/// What planMemory may do beyond liveness: each is on by default, and each has an off switch
/// on plait-compile.
struct MemoryPlanOptions {
  int64_t alignment = 64; // byte alignment of every buffer
  /// A value that plait.assign stores into a param or state is planned in that param's or
  /// state's own bytes when nothing reads the target after the value's producer starts (and
  /// the producer, if it reads the target, is an optimizer update that reads and writes it
  /// element by element): no second copy, and no copy after the step.
  bool inPlace = true;
  /// Offsets computed. Without, arenaBytes is the liveness lower bound and every offset 0:
  /// the strategy search screens candidates this way (placement is most of the cost of a
  /// large step) and places only those it may keep.
  bool place = true;
  /// A reshape's result planned in its operand's bytes (see aliasReshapes): the reshape
  /// copies nothing.
  bool aliasReshapeResults = true;
  /// A plait.fused_elementwise result that the kernel stores element by element, and an
  /// elementwise map's result (traits::ElementwiseMap), planned in the bytes of an operand
  /// of its size that no op reads after the kernel (see aliasElementwiseResults): the kernel
  /// writes over it, as PyTorch's in-place ops do. The CPU kernels allow it (each element is
  /// read before it is written); plans for CUDA do not ask for it (the generated CUDA
  /// kernels read their operands through __restrict__ pointers).
  bool aliasElementwiseResults = true;
  /// An all-reduce's result planned in its operand's bytes when nothing else reads the
  /// operand from the all-reduce's start on (see aliasCollectiveResults): MPI_IN_PLACE and
  /// NCCL's in-place all-reduce, as DDP reduces its buckets.
  bool inPlaceCollectives = true;
};

/// Plans `func`'s arena. Tries greedy-by-size best-fit and in-order first-fit placement
/// and keeps the smaller arena. Fails (with a diagnostic) on a value that is not a
/// statically shaped tensor.
mlir::FailureOr<MemoryPlan> planMemory(mlir::func::FuncOp func,
                                       const MemoryPlanOptions &options = {});

} // namespace plait
