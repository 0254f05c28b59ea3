// Small helpers shared by the plait passes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace plait {

/// The step's function: @main, or the module's only function; null when there is neither.
inline mlir::func::FuncOp findEntryFunction(mlir::ModuleOp module) {
  if (auto main = module.lookupSymbol<mlir::func::FuncOp>("main"))
    return main;
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  return funcs.size() == 1 ? funcs.front() : mlir::func::FuncOp();
}

/// The function a pass works on (findEntryFunction), or an error saying what it was for.
inline mlir::FailureOr<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module,
                                                         llvm::StringRef purpose) {
  if (auto func = findEntryFunction(module))
    return func;
  return module.emitError("expected a function @main to ") << purpose;
}

/// Erases the side-effect-free ops of `func`'s body whose results are unused, last first (so
/// a dead chain goes whole): an ONNX node nothing reads, or a loss left out of a forward plan.
/// Returns how many it erased.
inline int64_t eraseDeadOps(mlir::func::FuncOp func) {
  llvm::SmallVector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().front())
    ops.push_back(&op);
  int64_t erased = 0;
  for (mlir::Operation *op : llvm::reverse(ops))
    if (op->use_empty() && mlir::isMemoryEffectFree(op) &&
        !op->hasTrait<mlir::OpTrait::IsTerminator>()) {
      op->erase();
      ++erased;
    }
  return erased;
}

/// Program-order positions of a block's ops, with room between neighbours: an op moved or
/// inserted takes its place in the gap around it, and the block is numbered again only when
/// a gap runs out. (MLIR's own op order runs out of room after a few moves to one place and is
/// then recomputed over the whole block: quadratic in a 96-block step.)
class OpPositions {
public:
  explicit OpPositions(mlir::Block &block) : block_(block) { renumber(); }

  int64_t operator[](mlir::Operation *op) const { return positions_.lookup(op); }

  /// Gives `ops`, consecutive ops of the block just inserted there, positions spread evenly
  /// over the gap between their neighbours.
  void inserted(llvm::ArrayRef<mlir::Operation *> ops) {
    mlir::Operation *prev = ops.front()->getPrevNode(), *next = ops.back()->getNextNode();
    int64_t n = int64_t(ops.size());
    int64_t lo = prev ? positions_.lookup(prev) : 0;
    int64_t hi = next ? positions_.lookup(next) : lo + ((n + 1) << 32);
    int64_t step = (hi - lo) / (n + 1);
    if (step < 1)
      return renumber();
    for (int64_t i = 0; i < n; ++i)
      positions_[ops[i]] = lo + step * (i + 1);
  }
  void moveBefore(mlir::Operation *op, mlir::Operation *anchor) {
    op->moveBefore(anchor);
    inserted({op});
  }
  void moveAfter(mlir::Operation *op, mlir::Operation *anchor) {
    op->moveAfter(anchor);
    inserted({op});
  }

private:
  void renumber() {
    int64_t i = 0;
    for (mlir::Operation &op : block_)
      positions_[&op] = ++i << 32;
  }

  mlir::Block &block_;
  llvm::DenseMap<mlir::Operation *, int64_t> positions_;
};

/// Runs work(i) for every i < count on up to `threads` threads (the calling one included),
/// each taking the next index; returns when all are done.
template <typename Work>
void parallelFor(size_t count, unsigned threads, Work work) {
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(count)));
  std::atomic<size_t> next{0};
  auto run = [&]() {
    for (size_t i; (i = next.fetch_add(1)) < count;)
      work(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(run);
  run();
  for (std::thread &t : pool)
    t.join();
}

} // namespace plait
