// Memory-plan analysis: values and sizes, liveness, then offsets (Triton's Allocation shape).
#include "passes/analysis/MemoryPlan.h"

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <thread>
#include <numeric>

#include "codegen/schema/FusedElementwise.h"
#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "passes/PassUtils.h"

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

namespace {

/// Bytes of one element as the runtime stores it (i1 takes one byte).
int64_t elementBytes(Type element) {
  return element.isInteger(1) ? 1 : int64_t(element.getIntOrFloatBitWidth()) / 8;
}

/// The error for `type`, or "" when plait can size it.
std::string tensorSizeError(RankedTensorType type) {
  Type element = type.getElementType();
  const char *noKernels = "has an element type plait has no kernels for";
  if (!element.isIntOrFloat())
    return noKernels;
  if (!type.hasStaticShape())
    return ""; // the memory plan asks for static shapes itself, naming the op
  if (!element.isInteger(1) && element.getIntOrFloatBitWidth() % 8 != 0)
    return noKernels;
  int64_t bytes = elementBytes(element);
  for (int64_t d : type.getShape())
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxTensorBytes)
      return "holds more than 2^48 bytes (256 TiB), the most plait plans for one tensor";
  return "";
}

} // namespace

int64_t tensorBytes(RankedTensorType type) {
  return type.getNumElements() * elementBytes(type.getElementType());
}

LogicalResult verifyTensorSizes(Operation *root) {
  auto check = [](Value v, Operation *where) -> LogicalResult {
    auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return success();
    std::string error = tensorSizeError(type);
    if (error.empty())
      return success();
    return where->emitError() << "a value of type " << type << " " << error;
  };
  WalkResult result = root->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (failed(check(arg, op)))
            return WalkResult::interrupt();
    for (Value v : op->getResults())
      if (failed(check(v, op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
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

/// Program positions of a function's ops (1-based, as PlannedBuffer times) and when a
/// collective completes: at its first user, where the runtime waits, or at the end.
struct ProgramOrder {
  llvm::DenseMap<Operation *, int64_t> time;
  int64_t endTime = 0; // numOps + 1

  llvm::DenseMap<Operation *, Operation *> nextReduceScatter; // nextReduceScatters()

  explicit ProgramOrder(func::FuncOp func)
      : nextReduceScatter(nextReduceScatters(func.getBody().front())) {
    for (Operation &op : func.getBody().front())
      time[&op] = ++endTime;
    ++endTime;
  }
  int64_t waitOf(Operation *collective) const {
    int64_t wait = endTime;
    for (Operation *user : collective->getUsers())
      wait = std::min(wait, time.lookup(user));
    if (Operation *next = nextReduceScatter.lookup(collective))
      wait = std::min(wait, time.lookup(next));
    return wait;
  }
  /// When `reader` is done with its operands: its own time, or a collective's wait.
  int64_t readEnd(Operation *reader) const {
    return isCollective(reader) ? waitOf(reader) : time.lookup(reader);
  }
};

/// Extends every buffer to its last use; params, constants and returned values live to
/// the end of the step (params persist across steps). A collective reads its operands until
/// it completes.
void resolveLiveness(func::FuncOp func, const ProgramOrder &order, MemoryPlan &plan) {
  for (Operation &op : func.getBody().front()) {
    bool isReturn = op.hasTrait<OpTrait::IsTerminator>() || isa<AssignOp>(op);
    int64_t end = isReturn ? order.endTime : order.readEnd(&op);
    for (Value operand : op.getOperands()) {
      auto it = plan.index.find(operand);
      if (it == plan.index.end())
        continue;
      PlannedBuffer &b = plan.buffers[it->second];
      b.end = std::max(b.end, end);
    }
  }
  for (PlannedBuffer &b : plan.buffers)
    if (b.kind != BufferKind::Activation && b.kind != BufferKind::Input)
      b.end = order.endTime;
}

/// The operand an optimizer update (or a weight EMA) reads element by element for its result
/// `result`.
std::optional<unsigned> inPlaceOperand(Operation *op, unsigned result) {
  if (isOptimizerUpdate(op))
    return updatedOperand(op->getName().stripDialect(), result);
  if (auto grouped = dyn_cast<GroupedUpdateOp>(op)) { // update t's result k: as the op's
    unsigned per = unsigned(grouped.getOperandsPerUpdate());
    unsigned perResult = unsigned(grouped.getResultsPerUpdate());
    unsigned t = result / perResult, k = result % perResult;
    return t * per + updatedOperand(grouped.getUpdate(), k);
  }
  if (auto ema = dyn_cast<WeightEmaOp>(op)) // reads each element of its average before
    return ema.getNumAveraged() + result;   // writing it
  return std::nullopt;
}

/// Plans assigned values inside their targets where that is safe (see planMemory).
void aliasAssignedValues(func::FuncOp func, const ProgramOrder &order, MemoryPlan &plan) {
  for (auto assign : func.getBody().front().getOps<AssignOp>()) {
    Value target = assign.getTarget(), value = assign.getValue();
    auto ti = plan.index.find(target), vi = plan.index.find(value);
    Operation *def = value.getDefiningOp();
    if (ti == plan.index.end() || vi == plan.index.end() || !def || target == value)
      continue;
    PlannedBuffer &tb = plan.buffers[ti->second], &vb = plan.buffers[vi->second];
    if (vb.kind != BufferKind::Activation || vb.aliasOf >= 0 || vb.size != tb.size ||
        (tb.kind != BufferKind::Param && tb.kind != BufferKind::State))
      continue;
    bool safe = true;
    for (OpOperand &use : target.getUses()) {
      Operation *user = use.getOwner();
      if (user == assign.getOperation())
        continue;
      if (user == def) {
        auto matching = inPlaceOperand(def, cast<OpResult>(value).getResultNumber());
        safe = safe && matching && *matching == use.getOperandNumber();
      } else {
        safe = safe && order.readEnd(user) < order.time.lookup(def);
      }
    }
    if (!safe)
      continue;
    vb.aliasOf = ti->second;
    ++plan.inPlaceBuffers;
    plan.inPlaceBytes += vb.size;
  }
}

/// Whether a collective produces or reads `v`: MPI owns a collective's buffers while it is in
/// flight, and the runtime must see no write to them, so no other value may share their bytes.
bool touchesCollective(Value v) {
  if (Operation *def = v.getDefiningOp(); def && isCollective(def))
    return true;
  return llvm::any_of(v.getUsers(), [](Operation *user) { return isCollective(user); });
}

/// Plans each reshape's result in its operand's bytes (a reshape moves no data): the result
/// becomes an alias of the operand's buffer, whose life is extended to cover the result's.
/// Only between activations that are not stored in place (aliasAssignedValues runs first), and
/// never next to a collective (touchesCollective).
void aliasReshapes(func::FuncOp func, MemoryPlan &plan) {
  std::vector<bool> reshapeAlias(plan.buffers.size(), false);
  for (auto reshape : func.getBody().front().getOps<ReshapeOp>()) {
    Value operand = reshape.getOperand(), result = reshape.getResult();
    auto oi = plan.index.find(operand), ri = plan.index.find(result);
    if (oi == plan.index.end() || ri == plan.index.end())
      continue;
    size_t root = oi->second;
    if (reshapeAlias[root])
      root = size_t(plan.buffers[root].aliasOf); // already the chain's root
    PlannedBuffer &rb = plan.buffers[ri->second], &ob = plan.buffers[root];
    if (ob.kind != BufferKind::Activation || ob.aliasOf >= 0 ||
        rb.kind != BufferKind::Activation || rb.aliasOf >= 0 || rb.size != ob.size ||
        touchesCollective(operand) || touchesCollective(result))
      continue;
    rb.aliasOf = int64_t(root);
    reshapeAlias[ri->second] = true;
    ob.end = std::max(ob.end, rb.end);
    ++plan.reshapeAliases;
    plan.reshapeAliasBytes += rb.size;
  }
}

/// Plans each stored result of a plait.fused_elementwise, and the result of each elementwise
/// map (traits::ElementwiseMap: unary, binary and where ops the fuser left alone), in the
/// bytes of one of its operands when that operand (with every value that shares its bytes: a
/// reshape's views) is read by no op after this one, is an activation of the result's
/// element type and element count, and neither touches a collective (MPI owns a
/// collective's buffers while it is in flight). The kernels read each element of their
/// operands before they write that element of their results (FusedKernels.cpp,
/// UnaryKernels.cpp, BinaryKernels.cpp; an operand of the result's element count is not
/// broadcast, so it is read at the result's own index), so the result may overwrite the
/// operand as it goes. Each operand takes one result at most; reduced results (smaller) take
/// none.
void aliasElementwiseResults(func::FuncOp func, const ProgramOrder &order, MemoryPlan &plan) {
  // The buffers in each buffer's bytes (a reshape's views of a result), so that they follow
  // it when it moves into an operand's: aliasOf always names a buffer with bytes of its own.
  std::vector<SmallVector<size_t, 1>> views(plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].aliasOf >= 0)
      views[size_t(plan.buffers[i].aliasOf)].push_back(i);
  // Stores `result` over the first operand that may take it: the bytes it then needs no buffer
  // for, 0 where no operand may.
  auto aliasOne = [&](Value result, ValueRange operands, int64_t at,
                      SmallVectorImpl<size_t> &taken) -> int64_t {
    auto ri = plan.index.find(result);
    if (ri == plan.index.end())
      return 0;
    PlannedBuffer &rb = plan.buffers[ri->second];
    auto rt = cast<RankedTensorType>(result.getType());
    if (rb.kind != BufferKind::Activation || rb.aliasOf >= 0 || touchesCollective(result))
      return 0;
    for (Value operand : operands) {
      auto oi = plan.index.find(operand);
      auto ot = dyn_cast<RankedTensorType>(operand.getType());
      if (oi == plan.index.end() || !ot || ot.getElementType() != rt.getElementType() ||
          ot.getNumElements() != rt.getNumElements() || touchesCollective(operand))
        continue;
      // The buffer whose bytes the operand is in (a reshape's view lives in its root's).
      size_t root = plan.buffers[oi->second].aliasOf >= 0
                        ? size_t(plan.buffers[oi->second].aliasOf)
                        : oi->second;
      PlannedBuffer &ob = plan.buffers[root];
      if (ob.kind != BufferKind::Activation || ob.aliasOf >= 0 || ob.size != rb.size ||
          ob.end != at || llvm::is_contained(taken, root))
        continue;
      rb.aliasOf = int64_t(root);
      ob.end = std::max(ob.end, rb.end);
      for (size_t view : views[ri->second]) {
        plan.buffers[view].aliasOf = int64_t(root);
        views[root].push_back(view);
      }
      views[ri->second].clear();
      taken.push_back(root);
      return rb.size;
    }
    return 0;
  };
  for (Operation &op : func.getBody().front()) {
    int64_t at = order.time.lookup(&op);
    SmallVector<size_t> taken;
    if (auto fusedOp = dyn_cast<FusedElementwiseOp>(op)) {
      std::optional<ArrayRef<int64_t>> reductions = fusedOp.getReductions();
      for (auto [o, result] : llvm::enumerate(fusedOp.getResults())) {
        if (reductions && (*reductions)[o] != fused::Store)
          continue;
        if (int64_t bytes = aliasOne(result, fusedOp.getInputs(), at, taken)) {
          ++plan.elementwiseAliases;
          plan.elementwiseAliasBytes += bytes;
        }
      }
    } else if (op.hasTrait<traits::ElementwiseMap>() && op.getNumResults() == 1) {
      if (int64_t bytes = aliasOne(op.getResult(0), op.getOperands(), at, taken)) {
        ++plan.mapAliases;
        plan.mapAliasBytes += bytes;
      }
    }
  }
}

/// Plans each all-reduce's result in its operand's bytes when the operand is an activation
/// of its own bytes (no view of another buffer, no view of it) that no other op reads from
/// the all-reduce's start on: the collective then reduces in place (MPI_IN_PLACE, NCCL's
/// sendbuff == recvbuff; the plan loader allows exactly this overlap). Between the start and
/// the wait no instruction touches the bytes (the operand is dead, the result unread), so
/// the runtime's in-flight check holds. The operand's buffer then lives as long as the
/// result: one buffer instead of two during the collective.
void aliasCollectiveResults(func::FuncOp func, const ProgramOrder &order, MemoryPlan &plan) {
  std::vector<bool> hasViews(plan.buffers.size(), false);
  for (const PlannedBuffer &b : plan.buffers)
    if (b.aliasOf >= 0)
      hasViews[size_t(b.aliasOf)] = true;
  for (auto allReduce : func.getBody().front().getOps<AllReduceOp>()) {
    Value operand = allReduce->getOperand(0), result = allReduce->getResult(0);
    auto oi = plan.index.find(operand), ri = plan.index.find(result);
    if (oi == plan.index.end() || ri == plan.index.end())
      continue;
    PlannedBuffer &ob = plan.buffers[oi->second], &rb = plan.buffers[ri->second];
    if (ob.kind != BufferKind::Activation || rb.kind != BufferKind::Activation ||
        ob.aliasOf >= 0 || rb.aliasOf >= 0 || hasViews[oi->second] || hasViews[ri->second] ||
        ob.size != rb.size)
      continue;
    int64_t start = order.time.lookup(allReduce);
    bool othersDone = llvm::all_of(operand.getUsers(), [&](Operation *user) {
      return user == allReduce.getOperation() || order.readEnd(user) < start;
    });
    if (!othersDone)
      continue;
    rb.aliasOf = int64_t(oi->second);
    ob.end = std::max(ob.end, rb.end);
    hasViews[oi->second] = true;
    ++plan.collectiveAliases;
    plan.collectiveAliasBytes += rb.size;
  }
}

/// Places buffers in `order`; each takes the best-fitting gap (or the first, when
/// `firstFit`) among already placed buffers that are live at the same time.
///
/// Finding the gaps needs the placed buffers live at the same time in offset order. All
/// placed buffers are kept sorted by (offset, end offset); a buffer that lives longer than
/// kShortLife steps scans them all, skipping those not live with it. The short-lived rest
/// (most buffers of a large step) look at less: the long-lived placed buffers (sorted the
/// same way) merged with the short-lived ones that started in the steps just before and
/// during their life (kept by start step, sorted per query). Either way the buffers seen, and
/// so the offsets, are the same; a 96-block step (18,000 buffers) places in a fraction of
/// the time a scan of everything takes.
int64_t placeInOrder(std::vector<PlannedBuffer> &buffers, const std::vector<size_t> &order,
                     bool firstFit) {
  struct Placed {
    int64_t lo, hi, tStart, tEnd;
  };
  auto byOffset = [](const Placed &x, const Placed &y) {
    return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi;
  };
  constexpr int64_t kShortLife = 64; // steps; also the width of a start bucket
  int64_t endTime = 0;
  for (const PlannedBuffer &b : buffers)
    endTime = std::max(endTime, b.end);
  // Every placed buffer, sorted by (lo, hi), in chunks of at most kChunk: inserting moves
  // one chunk, not everything after the insertion point.
  constexpr size_t kChunk = 512;
  std::vector<std::vector<Placed>> placed(1);
  std::vector<Placed> longLived; // sorted by (lo, hi)
  std::vector<std::vector<Placed>> shortByStart(size_t(endTime / kShortLife) + 1);
  std::vector<Placed> candidates;
  int64_t arena = 0;
  for (size_t i : order) {
    PlannedBuffer &b = buffers[i];
    if (b.aliasOf >= 0)
      continue; // placed with its target
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    // Returns true to stop (first fit found).
    auto visit = [&](const Placed &p) {
      int64_t gap = p.lo - cursor;
      if (gap >= b.size && gap < bestGap) {
        best = cursor;
        bestGap = gap;
        if (firstFit)
          return true;
      }
      cursor = std::max(cursor, p.hi);
      return false;
    };
    auto live = [&](const Placed &p) { return p.tStart <= b.end && b.start <= p.tEnd; };
    bool isShort = b.end - b.start + 1 <= kShortLife;
    if (!isShort) {
      bool stop = false;
      for (const std::vector<Placed> &chunk : placed) {
        for (const Placed &p : chunk)
          if (live(p) && (stop = visit(p)))
            break;
        if (stop)
          break;
      }
    } else {
      // Short-lived placed buffers live with b started in [b.start - kShortLife + 1, b.end].
      candidates.clear();
      int64_t from = std::max<int64_t>(0, b.start - kShortLife + 1) / kShortLife;
      for (int64_t q = from; q <= b.end / kShortLife; ++q)
        for (const Placed &p : shortByStart[q])
          if (live(p))
            candidates.push_back(p);
      std::sort(candidates.begin(), candidates.end(), byOffset);
      auto c = candidates.begin();
      auto l = longLived.begin();
      while (true) {
        while (l != longLived.end() && !live(*l))
          ++l;
        const Placed *next = nullptr;
        if (c != candidates.end() && (l == longLived.end() || !byOffset(*l, *c)))
          next = &*c++;
        else if (l != longLived.end())
          next = &*l++;
        else
          break;
        if (visit(*next))
          break;
      }
    }
    b.offset = best >= 0 ? best : cursor;
    arena = std::max(arena, b.offset + b.size);
    Placed entry{b.offset, b.offset + b.size, b.start, b.end};
    // After every placed buffer that sorts before or equal to it: in the first chunk whose
    // last entry sorts after it, else at the end.
    auto chunk = std::upper_bound(placed.begin(), placed.end(), entry,
                                  [&](const Placed &e, const std::vector<Placed> &c) {
                                    return !c.empty() && byOffset(e, c.back());
                                  });
    if (chunk == placed.end())
      --chunk;
    chunk->insert(std::upper_bound(chunk->begin(), chunk->end(), entry, byOffset), entry);
    if (chunk->size() > kChunk) {
      std::vector<Placed> upper(chunk->begin() + kChunk / 2, chunk->end());
      chunk->resize(kChunk / 2);
      placed.insert(chunk + 1, std::move(upper));
    }
    if (isShort)
      shortByStart[size_t(b.start / kShortLife)].push_back(entry);
    else
      longLived.insert(std::upper_bound(longLived.begin(), longLived.end(), entry, byOffset),
                       entry);
  }
  for (PlannedBuffer &b : buffers)
    if (b.aliasOf >= 0)
      b.offset = buffers[b.aliasOf].offset;
  return arena;
}

/// Computes offsets with several orders and keeps the smallest arena (ties: the first):
/// greedy by size (best fit), by size x lifetime (best fit), by start (first and best fit).
/// Which order wins depends on the shape of the step; trying them costs little next to the
/// rest of the compile.
void computeOffsets(MemoryPlan &plan) {
  auto order = [&](auto less) {
    std::vector<size_t> o(plan.buffers.size());
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) {
      return less(plan.buffers[a], plan.buffers[b]);
    });
    return o;
  };
  auto lifetime = [](const PlannedBuffer &x) { return x.end - x.start + 1; };
  struct Candidate {
    const char *name;
    std::vector<size_t> order;
    bool firstFit;
  };
  std::vector<Candidate> candidates;
  candidates.push_back({"greedy-by-size best-fit",
                        order([](const PlannedBuffer &x, const PlannedBuffer &y) {
                          return x.size != y.size ? x.size > y.size : x.start < y.start;
                        }),
                        false});
  candidates.push_back({"in-order first-fit",
                        order([](const PlannedBuffer &, const PlannedBuffer &) { return false; }),
                        true});
  candidates.push_back({"greedy-by-area best-fit",
                        order([&](const PlannedBuffer &x, const PlannedBuffer &y) {
                          int64_t ax = x.size * lifetime(x), ay = y.size * lifetime(y);
                          return ax != ay ? ax > ay : x.start < y.start;
                        }),
                        false});
  candidates.push_back({"greedy-by-lifetime best-fit",
                        order([&](const PlannedBuffer &x, const PlannedBuffer &y) {
                          return lifetime(x) != lifetime(y) ? lifetime(x) > lifetime(y)
                                                            : x.size > y.size;
                        }),
                        false});
  // The orders are independent: large steps place them on every core, as many at a time as
  // there are cores (small steps one after another). Once an arena equals the liveness lower
  // bound no order can beat it, so the rest are skipped: the same result as trying them all,
  // since the earlier order wins a tie.
  std::vector<PlannedBuffer> best;
  std::vector<size_t> bestOrder;
  unsigned threads = plan.buffers.size() >= 4096 ? std::thread::hardware_concurrency() : 1;
  threads = std::max(1u, threads);
  size_t tried = 0;
  for (size_t first = 0; first < candidates.size() && !(tried && plan.arenaBytes <= plan.lowerBound);
       first += threads) {
    size_t count = std::min<size_t>(threads, candidates.size() - first);
    std::vector<std::vector<PlannedBuffer>> placedBy(count, plan.buffers);
    std::vector<int64_t> arenaOf(count, 0);
    parallelFor(count, threads, [&](size_t i) {
      const Candidate &c = candidates[first + i];
      arenaOf[i] = placeInOrder(placedBy[i], c.order, c.firstFit);
    });
    for (size_t i = 0; i < count; ++i, ++tried)
      if (best.empty() || arenaOf[i] < plan.arenaBytes) {
        best = std::move(placedBy[i]);
        bestOrder = candidates[first + i].order;
        plan.arenaBytes = arenaOf[i];
        plan.heuristic = candidates[first + i].name;
      }
  }
  // Small plans, where a few badly placed buffers weigh most: a local search over the best
  // order (three random swaps at a time, both fits), within a fixed budget of buffer
  // comparisons. The seed is fixed, so the same step always gets the same plan. Nothing
  // beats an arena at the lower bound.
  size_t n = plan.buffers.size();
  if (n >= 2 && n <= 1024 && plan.arenaBytes > plan.lowerBound) {
    int64_t rounds = std::min<int64_t>(2000, 40'000'000 / int64_t(n * n));
    std::mt19937_64 rng(0x9e3779b97f4a7c15ULL);
    bool improved = false;
    for (int64_t r = 0; r < rounds; ++r) {
      std::vector<size_t> order = bestOrder;
      for (int k = 0; k < 3; ++k)
        std::swap(order[rng() % n], order[rng() % n]);
      for (bool firstFit : {false, true}) {
        std::vector<PlannedBuffer> buffers = plan.buffers;
        int64_t arena = placeInOrder(buffers, order, firstFit);
        if (arena < plan.arenaBytes) {
          best = std::move(buffers);
          bestOrder = order;
          plan.arenaBytes = arena;
          improved = true;
        }
      }
    }
    if (improved)
      plan.heuristic += " + local search";
  }
  plan.buffers = std::move(best);
}

/// Max over time of the live aligned bytes: no placement can beat it.
int64_t liveLowerBound(const MemoryPlan &plan) {
  int64_t endTime = 0;
  for (const PlannedBuffer &b : plan.buffers)
    endTime = std::max(endTime, b.end);
  std::vector<int64_t> delta(endTime + 2, 0);
  for (const PlannedBuffer &b : plan.buffers) {
    if (b.aliasOf >= 0)
      continue;
    delta[b.start] += b.size;
    delta[b.end + 1] -= b.size;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, live += d);
  return peak;
}

} // namespace

FailureOr<MemoryPlan> planMemory(func::FuncOp func, const MemoryPlanOptions &options) {
  MemoryPlan plan;
  if (failed(getValuesAndSizes(func, options.alignment, plan)))
    return failure();
  ProgramOrder order(func);
  resolveLiveness(func, order, plan);
  if (options.inPlace)
    aliasAssignedValues(func, order, plan);
  if (options.aliasReshapeResults)
    aliasReshapes(func, plan);
  if (options.aliasElementwiseResults)
    aliasElementwiseResults(func, order, plan);
  if (options.inPlaceCollectives)
    aliasCollectiveResults(func, order, plan);
  plan.lowerBound = liveLowerBound(plan);
  if (options.place) {
    computeOffsets(plan);
  } else {
    plan.arenaBytes = plan.lowerBound; // offsets left 0: an estimate, not a plan
    plan.heuristic = "none (liveness lower bound only)";
  }
  return plan;
}

} // namespace plait
