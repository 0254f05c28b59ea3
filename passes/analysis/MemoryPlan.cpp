// Memory-plan analysis: values and sizes, liveness, then offsets (Triton's Allocation shape).
#include "passes/analysis/MemoryPlan.h"

#include <algorithm>
#include <numeric>

#include "ir/PlaitDialect.h"

using namespace mlir;

namespace plait {

const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input: return "input";
  case BufferKind::Param: return "param";
  case BufferKind::Constant: return "constant";
  case BufferKind::Activation: return "activation";
  case BufferKind::State: return "state";
  case BufferKind::Hyper: return "hyper";
  }
  return "?";
}

int64_t MemoryPlan::bytesOf(BufferKind kind) const {
  int64_t total = 0;
  for (const PlannedBuffer &b : buffers)
    if (b.kind == kind)
      total += b.bytes;
  return total;
}

int64_t tensorBytes(RankedTensorType type) {
  Type element = type.getElementType();
  int64_t width = element.isInteger(1) ? 8 : element.getIntOrFloatBitWidth();
  return type.getNumElements() * (width / 8);
}

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Collects every tensor value with its kind and size; fails on unranked/dynamic types.
LogicalResult getValuesAndSizes(func::FuncOp func, int64_t alignment, MemoryPlan &plan) {
  auto add = [&](Value v, BufferKind kind, int64_t start, Operation *where) -> LogicalResult {
    auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return where ? where->emitOpError("produces a value without a static tensor shape")
                   : func.emitOpError("has an argument without a static tensor shape");
    PlannedBuffer b;
    b.value = v;
    b.kind = kind;
    b.bytes = tensorBytes(type);
    b.size = alignUp(std::max<int64_t>(b.bytes, 1), alignment);
    b.start = b.end = start;
    plan.index[v] = plan.buffers.size();
    plan.buffers.push_back(b);
    return success();
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(add(arg, BufferKind::Input, 0, nullptr)))
      return failure();
  int64_t time = 0;
  for (Operation &op : func.getBody().front()) {
    ++time;
    BufferKind kind = isa<ParamOp, ParamShardOp>(op) ? BufferKind::Param
                      : isa<ConstantOp>(op) ? BufferKind::Constant
                      : isa<StateOp>(op)    ? BufferKind::State
                      : isa<HyperOp>(op)    ? BufferKind::Hyper
                                            : BufferKind::Activation;
    for (Value result : op.getResults())
      if (failed(add(result, kind, kind == BufferKind::Activation ? time : 0, &op)))
        return failure();
  }
  return success();
}

/// Extends every buffer to its last use; params, constants and returned values live to
/// the end of the step (params persist across steps).
void resolveLiveness(func::FuncOp func, MemoryPlan &plan) {
  int64_t endTime = (int64_t)func.getBody().front().getOperations().size() + 1;
  int64_t time = 0;
  for (Operation &op : func.getBody().front()) {
    ++time;
    bool isReturn = op.hasTrait<OpTrait::IsTerminator>() || isa<AssignOp>(op);
    for (Value operand : op.getOperands()) {
      auto it = plan.index.find(operand);
      if (it == plan.index.end())
        continue;
      PlannedBuffer &b = plan.buffers[it->second];
      b.end = std::max(b.end, isReturn ? endTime : time);
    }
  }
  for (PlannedBuffer &b : plan.buffers)
    if (b.kind != BufferKind::Activation && b.kind != BufferKind::Input)
      b.end = endTime;
  // A collective runs from its position until its first user (where the runtime waits),
  // reading its operand all the while; one whose result is unused completes at the end.
  time = 0;
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : func.getBody().front())
    position[&op] = ++time;
  for (Operation &op : func.getBody().front()) {
    if (!isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp>(op))
      continue;
    int64_t wait = endTime;
    for (Operation *user : op.getUsers())
      wait = std::min(wait, position.lookup(user));
    for (Value operand : op.getOperands()) {
      auto it = plan.index.find(operand);
      if (it != plan.index.end())
        plan.buffers[it->second].end = std::max(plan.buffers[it->second].end, wait);
    }
  }
}

bool overlapsInTime(const PlannedBuffer &a, const PlannedBuffer &b) {
  return a.start <= b.end && b.start <= a.end;
}

/// Places buffers in `order`; each takes the best-fitting gap (or the first, when
/// `firstFit`) among already placed buffers that are live at the same time.
int64_t placeInOrder(std::vector<PlannedBuffer> &buffers, const std::vector<size_t> &order,
                     bool firstFit) {
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    PlannedBuffer &b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> busy; // [offset, offset + size)
    for (size_t j : placed)
      if (overlapsInTime(b, buffers[j]))
        busy.push_back({buffers[j].offset, buffers[j].offset + buffers[j].size});
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : busy) {
      int64_t gap = lo - cursor;
      if (gap >= b.size && gap < bestGap) {
        best = cursor;
        bestGap = gap;
        if (firstFit)
          break;
      }
      cursor = std::max(cursor, hi);
    }
    b.offset = best >= 0 ? best : cursor;
    arena = std::max(arena, b.offset + b.size);
    placed.push_back(i);
  }
  return arena;
}

/// Computes offsets with two heuristics and keeps the smaller arena (ties: the first).
void computeOffsets(MemoryPlan &plan) {
  std::vector<size_t> bySize(plan.buffers.size());
  std::iota(bySize.begin(), bySize.end(), 0);
  std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
    const PlannedBuffer &x = plan.buffers[a], &y = plan.buffers[b];
    if (x.size != y.size)
      return x.size > y.size;
    return x.start < y.start;
  });
  std::vector<size_t> inOrder(plan.buffers.size());
  std::iota(inOrder.begin(), inOrder.end(), 0);

  std::vector<PlannedBuffer> firstFit = plan.buffers;
  int64_t greedyArena = placeInOrder(plan.buffers, bySize, /*firstFit=*/false);
  int64_t orderArena = placeInOrder(firstFit, inOrder, /*firstFit=*/true);
  if (orderArena < greedyArena) {
    plan.buffers = std::move(firstFit);
    plan.arenaBytes = orderArena;
    plan.heuristic = "in-order first-fit";
  } else {
    plan.arenaBytes = greedyArena;
    plan.heuristic = "greedy-by-size best-fit";
  }
}

/// Max over time of the live aligned bytes: no placement can beat it.
int64_t liveLowerBound(const MemoryPlan &plan) {
  int64_t endTime = 0;
  for (const PlannedBuffer &b : plan.buffers)
    endTime = std::max(endTime, b.end);
  std::vector<int64_t> delta(endTime + 2, 0);
  for (const PlannedBuffer &b : plan.buffers) {
    delta[b.start] += b.size;
    delta[b.end + 1] -= b.size;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, live += d);
  return peak;
}

} // namespace

FailureOr<MemoryPlan> planMemory(func::FuncOp func, int64_t alignment) {
  MemoryPlan plan;
  if (failed(getValuesAndSizes(func, alignment, plan)))
    return failure();
  resolveLiveness(func, plan);
  computeOffsets(plan);
  plan.lowerBound = liveLowerBound(plan);
  return plan;
}

} // namespace plait
