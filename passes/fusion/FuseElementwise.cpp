// -plait-fuse-elementwise: chains of f32 / bf16 elementwise ops become one
// plait.fused_elementwise.
//
// A training step spends much of its non-GEMM time in short elementwise chains: the erf-GELU
// and its derivative, the decomposed layer norm's scale and shift, the attention's scaling,
// each op reading and writing a whole activation. Fused, a chain reads its inputs once and
// writes only the values read outside it; the intermediate values never reach memory (or the
// memory plan).
//
// Groups form in program order. An op joins the groups of its operands' producers whose result
// has its type, or a smaller one that only it reads (all of them, merged, or else the first it
// can), as long as one place follows every input of the group and precedes every read of its
// results outside it: the fused op stands there (at its last member, or before the first such
// read when that comes earlier). Fused are the arithmetic (add, sub, mul, div, pow, max,
// min), unary (neg, abs, relu, exp, log, erf, sqrt, rsqrt, reciprocal, tanh, sigmoid, silu,
// sin, cos) and broadcast_to ops whose result is f32 or bf16 (operands of its type,
// broadcast to it: a bias, a layer norm's per-row mean), casts between f32 and bf16 (groups
// join across them: they compare shapes, not element types), and the ops of i1 values:
// comparisons of f32 or bf16 operands, not, and, or, where, and casts of i1 to f32 or bf16.
// An i1 value computed in a group lives only in the program's registers (as 1.0f or 0.0f),
// so an op with an i1 result joins a group only together with every op that reads it; one
// from outside (a padding mask) is an input like any other, loaded as 1.0f or 0.0f. A ReLU's
// backward, where(y > 0, g, 0), becomes one kernel with the bias gradient's sum.
//
// The program computes in f32, as the unfused kernels do (bf16 ops are staged through f32 and
// round their result to bf16): after each op whose result is bf16, and at a cast to bf16, the
// program rounds (round_bf16), so every op reads the value it would read unfused and the
// results are bit-identical; a cast to f32 is the value itself.
//
// A reduce_sum or reduce_mean (keepdims) of a member's result, or of a value the group
// reads, joins the group as a reduced result: the sum is taken as the elements are computed
// (a layer norm's mean and variance, a bias or norm-weight gradient's sum over the batch,
// softmax's backward row sums), so the reduced value never reaches memory whole. Nothing in
// the group may read a reduced result (nor, for --device cuda, may a bf16 one be fused: the
// module's `plait.device`). A group of one op stays as it is. The module records
// `plait.fuse_elementwise` {kernels, ops, reductions; roundings, when its programs round to
// bf16} for the report.
#include "passes/Passes.h"
#include "passes/PassUtils.h"

#include "codegen/schema/FusedElementwise.h"
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"

namespace {

struct Group {
  RankedTensorType type; // its shape is the iteration shape: every member's result's but the
                         // reductions' (element types may differ: f32 and bf16)
  llvm::SetVector<Operation *> ops; // in program order; empty once merged into another group
};

/// Whether a fused kernel loads and stores elements of `t` (f32, bf16).
bool isFusedElement(Type t) { return t.isF32() || t.isBF16(); }

/// Whether `v` is an i1 value: a fused program holds it in a register (1.0f or 0.0f), and
/// reads it as an input, but never stores it as a result.
bool isTruth(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isInteger(1);
}

bool sameShape(Type a, Type b) {
  return cast<RankedTensorType>(a).getShape() == cast<RankedTensorType>(b).getShape();
}

/// What a reduce op would compute as a fused result (Sum, Mean), or Store for any other op.
int64_t reductionKind(Operation *op) {
  return isa<ReduceSumOp>(op) ? fused::Sum : isa<ReduceMeanOp>(op) ? fused::Mean : fused::Store;
}

/// The reduction a reduce op computes as a fused result, or Store when it cannot be fused: a
/// reduce_sum or reduce_mean of f32 (or bf16, when `bf16Reductions`) with keepdims, over
/// dimensions fused results may reduce.
int64_t fusibleReduction(Operation *op, bool bf16Reductions) {
  int64_t kind = reductionKind(op);
  if (kind == fused::Store)
    return kind;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      !isFusedElement(in.getElementType()) || in.getElementType() != out.getElementType() ||
      (in.getElementType().isBF16() && !bf16Reductions) || in.getRank() != out.getRank() ||
      in.getNumElements() == 0)
    return fused::Store;
  // Not over a trailing dimension of 1 either: reduce_sum would sum the next one as a row.
  if (in.getShape() == out.getShape() || in.getShape().back() == 1 ||
      !fused::checkReducedShape(kind, in.getShape(), out.getShape()).empty())
    return fused::Store;
  return kind;
}

/// Each op's position in its block, numbered once before any group forms.
using Positions = llvm::DenseMap<Operation *, int64_t>;

/// Whether `op` is a cast between f32 and bf16 (a rounding step, or nothing, when fused).
bool isBf16Cast(Operation *op) {
  auto c = dyn_cast<CastOp>(op);
  if (!c)
    return false;
  Type from = c.getX().getType().getElementType(), to = c.getType().getElementType();
  return from != to && isFusedElement(from) && isFusedElement(to) &&
         c.getType().hasStaticShape();
}

/// Whether `op` casts i1 to f32 or bf16: the register's 1.0f or 0.0f is the value itself.
bool isTruthCast(Operation *op) {
  auto c = dyn_cast<CastOp>(op);
  return c && isTruth(c.getX()) && isFusedElement(c.getType().getElementType()) &&
         c.getType().hasStaticShape();
}

/// The op's opcode when it can be fused, else -1: an op of the opcode table whose operands
/// broadcast to its result (as the op's verifier saw to) and are of the types the opcode
/// computes on: f32 or bf16 operands of the result's type; a comparison's, of one f32 or
/// bf16 type, with an i1 result; not, and, or on i1; where's condition i1 and its values of
/// the result's type. A cast between f32 and bf16 is RoundBf16, one of i1 to f32 or bf16
/// BroadcastTo (no instruction: the register is the value).
int64_t fusibleOpcode(Operation *op) {
  if (op->getNumResults() != 1 || !isa<PlaitDialect>(op->getDialect()))
    return -1;
  if (isBf16Cast(op))
    return fused::RoundBf16;
  if (isTruthCast(op))
    return fused::BroadcastTo;
  int64_t code = fused::opcodeOf(std::string_view(op->getName().stripDialect()));
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (code < 0 || code == fused::RoundBf16 || !type || !type.hasStaticShape() ||
      int64_t(op->getNumOperands()) != fused::opcodeInfo(code).arity)
    return -1;
  Type result = type.getElementType(), operands = result;
  const bool comparison = code >= fused::Greater && code <= fused::Equal;
  const bool logic = code == fused::Not || code == fused::And || code == fused::Or;
  if (comparison)
    operands = cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  if (comparison || logic ? !result.isInteger(1) : !isFusedElement(result))
    return -1;
  if (!logic && !isFusedElement(operands))
    return -1;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    bool condition = code == fused::Where && i == 0;
    if (!t || !t.hasStaticShape() ||
        (condition ? !t.getElementType().isInteger(1) : t.getElementType() != operands))
      return -1;
  }
  return code;
}

/// Whether the program rounds after `op`'s instruction: its result is bf16, and the op
/// computes a new value (broadcast_to moves bf16 values as they are; a cast to bf16 is
/// itself the rounding; an i1 cast's 1.0f and 0.0f are bf16 values).
bool roundsAfter(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isBF16() &&
         !isa<BroadcastToOp>(op) && !isBf16Cast(op) && !isTruthCast(op);
}

/// How far apart (in ops of the block) a group's first and last op may be. The fused op
/// computes every member where the last one stood, so the inputs of the first stay live until
/// then: a group must not stretch from a layer's forward to its backward, or across the
/// places plait-schedule and the collectives chose.
constexpr int64_t kMaxSpan = 24;

/// Where a group's fused op may stand: after `ready` (the last definition of an input) and
/// no later than `need` (the first read of a result outside the group).
struct Window {
  int64_t ready = -1, need = INT64_MAX;
};

/// The window of `members` (ops of one block); block arguments are ready at -1.
Window windowOf(const llvm::SmallPtrSetImpl<Operation *> &members, const Positions &position) {
  Window w;
  for (Operation *m : members) {
    for (Value v : m->getOperands())
      if (Operation *def = v.getDefiningOp(); def && !members.contains(def))
        w.ready = std::max(w.ready, position.lookup(def));
    for (Operation *user : m->getResult(0).getUsers())
      if (!members.contains(user))
        w.need = std::min(w.need, position.lookup(user));
  }
  return w;
}

/// Whether `groups` and `op` may become one group iterating over `type`: one place comes
/// after every input and before every outside read of a result (the fused op stands there),
/// the group spans at most kMaxSpan ops, nothing in it reads a reduced result, a member of a
/// smaller shape (computed again for every element it broadcasts to) or of an i1 result is
/// read only inside, and the program stays within the limits. `reduced` holds the groups'
/// reductions.
bool canFuse(ArrayRef<Group *> groups, Operation *op, RankedTensorType type,
             const Positions &position, const llvm::SmallPtrSetImpl<Operation *> &reduced,
             bool bf16Reductions) {
  int64_t first = position.lookup(op), last = first, instructions = 0;
  for (Group *g : groups) {
    first = std::min(first, position.lookup(g->ops.front()));
    last = std::max(last, position.lookup(g->ops.back()));
  }
  if (last - first > kMaxSpan)
    return false;
  bool opReduces = fusibleReduction(op, bf16Reductions) != fused::Store;
  llvm::SmallPtrSet<Operation *, 32> members;
  members.insert(op);
  for (Group *g : groups)
    members.insert(g->ops.begin(), g->ops.end());
  llvm::SmallPtrSet<Value, 32> inputs;
  for (Operation *m : members) {
    for (Value v : m->getOperands())
      if (!members.contains(v.getDefiningOp()))
        inputs.insert(v);
    bool reduction = m == op ? opReduces : reduced.contains(m);
    // A reduced result may need a copy of its register, a bf16 result a rounding (a cast to
    // f32, a copy when it is a result).
    instructions += reduction || roundsAfter(m) ? 2 : 1;
    bool inside = !reduction && !sameShape(m->getResult(0).getType(), type);
    for (Operation *user : m->getResult(0).getUsers())
      if (members.contains(user) ? reduction : inside)
        return false;
    // An i1 result read outside must be read by an op still to come, which may join (the
    // next op of a chain of comparisons and logic); trimTruthEdges takes out what did not.
    if (isTruth(m->getResult(0)))
      for (Operation *user : m->getResult(0).getUsers())
        if (!members.contains(user) && position.lookup(user) <= position.lookup(op))
          return false;
    // pow computes products for a one-element exponent (x^2 of a norm's backward, whose
    // exponent is computed); computed again per element, the exponent would not be one
    // element any more, and pow would take std::pow's slow path.
    if (isa<PowOp>(m))
      if (Operation *exponent = m->getOperand(1).getDefiningOp();
          exponent && members.contains(exponent) &&
          !sameShape(exponent->getResult(0).getType(), type))
        return false;
  }
  Window w = windowOf(members, position);
  return w.ready < w.need && instructions <= int64_t(fused::kMaxInstructions) &&
         inputs.size() <= fused::kMaxInputs;
}

/// Whether an op outside `group` reads member `m`'s result (the fused op then stores it).
bool readOutside(const Group &group, Operation *m) {
  return llvm::any_of(m->getResult(0).getUsers(),
                      [&](Operation *user) { return !group.ops.contains(user); });
}

/// Takes out of `group` the members an i1 value would flow out of, until there are none: a
/// member whose i1 result is read outside the group (a kernel stores no i1 value; canFuse let
/// it in while its reader could still join); then a member of a smaller shape than the
/// group's that one of those was the reader of (a kernel stores only results of its
/// iteration shape, or reduced ones: `reduced`). The members that read a value taken out read
/// it as an input. What is taken out stays an op of its own.
void trimTruthEdges(Group &group, const llvm::SmallPtrSetImpl<Operation *> &reduced) {
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *m : SmallVector<Operation *>(group.ops.begin(), group.ops.end())) {
      bool storesTruth = isTruth(m->getResult(0)) && readOutside(group, m);
      bool storesSmaller = !reduced.contains(m) &&
                           !sameShape(m->getResult(0).getType(), group.type) &&
                           readOutside(group, m);
      if (storesTruth || storesSmaller) {
        group.ops.remove(m);
        changed = true;
      }
    }
  }
}

/// Takes the reductions out of `group` when the fused op's iteration shape, which its inputs
/// and results define (plait.fused_elementwise: broadcast together), would not be the
/// group's: a value broadcast to the group's shape and read only by a reduction, its members
/// all of smaller shapes (the gradient of a broadcast_to, summed back over the dimensions
/// it broadcast along). The sums would then run over the smaller shape, missing the
/// broadcast's repetitions. Without its reductions the group stores their operand, of its
/// shape, and the reductions stay ops of their own.
void trimUnanchoredReductions(Group &group, const llvm::SmallPtrSetImpl<Operation *> &reduced) {
  SmallVector<int64_t> shape;
  auto join = [&](Value v) {
    if (auto joined = broadcastShapes(shape, cast<RankedTensorType>(v.getType()).getShape()))
      shape = *joined;
  };
  bool reduces = false;
  for (Operation *m : group.ops) {
    reduces = reduces || reduced.contains(m);
    for (Value operand : m->getOperands())
      if (!group.ops.contains(operand.getDefiningOp()))
        join(operand);
    if (reduced.contains(m) || readOutside(group, m))
      join(m->getResult(0));
  }
  if (!reduces || ArrayRef<int64_t>(shape) == group.type.getShape())
    return;
  for (Operation *m : SmallVector<Operation *>(group.ops.begin(), group.ops.end()))
    if (reduced.contains(m))
      group.ops.remove(m);
}

/// Replaces the group's ops by one fused op at the place of its last member, or before the
/// first outside read of a result when that comes earlier. Returns how many bf16 roundings its
/// program has, or nullopt when the group no longer has a place: each group's window was
/// checked against the ops as they stood, but two groups whose members interleave may each
/// read the other's results (a group's input computed by another group from one of its
/// members), and once the first is one op the second cannot follow all its inputs and
/// precede all its readers; or when trimTruthEdges left it more inputs than a program may
/// read. Its ops then stay as they are.
std::optional<int64_t> fuse(const Group &group, Positions &position, OpBuilder &builder) {
  Operation *last = group.ops.back();
  llvm::SmallPtrSet<Operation *, 32> members(group.ops.begin(), group.ops.end());
  Window w = windowOf(members, position); // against the fused ops placed so far
  if (w.ready >= w.need)
    return std::nullopt;
  Operation *at = last;
  if (w.need <= position.lookup(last))
    for (Operation *op = group.ops.front(); op; op = op->getNextNode())
      if (position.lookup(op) == w.need) {
        at = op;
        break;
      }
  llvm::MapVector<Value, int64_t> registers; // inputs first, then the members' results
  SmallVector<Value> inputs;
  for (Operation *op : group.ops)
    for (Value operand : op->getOperands())
      if (!group.ops.contains(operand.getDefiningOp()) && !registers.count(operand)) {
        registers[operand] = int64_t(inputs.size());
        inputs.push_back(operand);
      }
  // (canFuse kept the inputs within the limit; a group trimmed since may read more.)
  if (inputs.size() > fused::kMaxInputs)
    return std::nullopt;
  SmallVector<int64_t> program, outputs, reductions;
  SmallVector<Value> escaping; // member results read outside the group
  auto append = [&](int64_t code, int64_t a, int64_t b = -1, int64_t c = -1) {
    program.append({code, a, b, c});
    return int64_t(inputs.size() + program.size() / fused::kInstructionWidth - 1);
  };
  // The register an output writes: `r`, or a copy of it when r is an input or an output
  // already (a register is written once; a cast to f32 shares its operand's register).
  auto outputRegister = [&](int64_t r) {
    if (r < int64_t(inputs.size()) || llvm::is_contained(outputs, r))
      return append(fused::BroadcastTo, r);
    return r;
  };
  for (Operation *op : group.ops) {
    Value result = op->getResult(0);
    if (int64_t reduction = reductionKind(op); reduction != fused::Store) {
      // The operand's register, summed as it is computed.
      outputs.push_back(outputRegister(registers.lookup(op->getOperand(0))));
      reductions.push_back(reduction);
      escaping.push_back(result);
      continue;
    }
    int64_t a = registers.lookup(op->getOperand(0));
    if (isBf16Cast(op)) {
      // To bf16: a rounding; to f32: the bf16 value itself.
      registers[result] = cast<CastOp>(op).getType().getElementType().isBF16()
                              ? append(fused::RoundBf16, a)
                              : a;
    } else if (isTruthCast(op)) {
      registers[result] = a; // 1.0f or 0.0f already
    } else {
      int64_t code = fused::opcodeOf(std::string_view(op->getName().stripDialect()));
      auto operand = [&](unsigned i) {
        return op->getNumOperands() > i ? registers.lookup(op->getOperand(i)) : int64_t(-1);
      };
      registers[result] = append(code, a, operand(1), operand(2));
      if (roundsAfter(op)) // as the unfused kernel stores its result
        registers[result] = append(fused::RoundBf16, registers[result]);
    }
    if (readOutside(group, op)) {
      outputs.push_back(outputRegister(registers.lookup(result)));
      reductions.push_back(fused::Store);
      escaping.push_back(result);
    }
  }
  SmallVector<Location> locs;
  for (Operation *op : group.ops)
    locs.push_back(op->getLoc());
  builder.setInsertionPoint(at);
  SmallVector<Type> types;
  for (Value v : escaping)
    types.push_back(v.getType());
  bool reduces = llvm::any_of(reductions, [](int64_t r) { return r != fused::Store; });
  auto fusedOp = builder.create<FusedElementwiseOp>(
      builder.getFusedLoc(locs), types, inputs, builder.getDenseI64ArrayAttr(program),
      builder.getDenseI64ArrayAttr(outputs),
      reduces ? builder.getDenseI64ArrayAttr(reductions) : DenseI64ArrayAttr());
  // Later groups' windows see it where it stands (it may read their results, or they its).
  position[fusedOp] = position.lookup(at);
  for (auto [value, replacement] : llvm::zip(escaping, fusedOp.getResults()))
    value.replaceAllUsesWith(replacement);
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
  int64_t roundings = 0;
  for (size_t k = 0; k < program.size(); k += fused::kInstructionWidth)
    roundings += program[k] == fused::RoundBf16;
  return roundings;
}

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, ops = 0, reductions = 0, roundings = 0;
    // CUDA's fused kernels sum a reduced result with float atomics into the result itself:
    // bf16 sums would round at every add (see the pass's description).
    auto device = module->getAttrOfType<StringAttr>("plait.device");
    const bool bf16Reductions = !device || device.getValue() != "cuda";
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // Dead ops first: a group nothing outside reads would become a fused op without
      // results (a forward plan of a model whose loss is not an output).
      eraseDeadOps(func);
      Positions position;
      for (Operation &op : func.getBody().front())
        position[&op] = int64_t(position.size());
      std::vector<std::unique_ptr<Group>> groups;
      llvm::DenseMap<Operation *, Group *> groupOf;
      llvm::SmallPtrSet<Operation *, 32> reduced; // reductions that joined a group
      for (Operation &op : func.getBody().front()) {
        if (fusibleReduction(&op, bf16Reductions) != fused::Store) {
          // A reduction joins its operand's group, if that group may take it; it never
          // starts one.
          auto type = cast<RankedTensorType>(op.getOperand(0).getType());
          Group *g = groupOf.lookup(op.getOperand(0).getDefiningOp());
          if (g && sameShape(g->type, type) &&
              !reduced.contains(op.getOperand(0).getDefiningOp()) &&
              canFuse({g}, &op, type, position, reduced, bf16Reductions)) {
            g->ops.insert(&op);
            groupOf[&op] = g;
            reduced.insert(&op);
          }
          continue;
        }
        if (fusibleOpcode(&op) < 0)
          continue;
        auto type = cast<RankedTensorType>(op.getResult(0).getType());
        // The groups of its operands' producers with its type: all of them merged with it
        // when that is allowed, else the first it may join alone, else a group of its own.
        // Never a group whose reduction it reads: that sum is complete only after the group.
        SmallVector<Group *> candidates, excluded;
        for (Value operand : op.getOperands())
          if (reduced.contains(operand.getDefiningOp()))
            excluded.push_back(groupOf.lookup(operand.getDefiningOp()));
        // A group of a smaller shape (a layer norm's per-row statistics, a scalar) may join
        // too when nothing outside reads it: it is computed again for every element.
        auto compatible = [&](Group *g) {
          if (sameShape(g->type, type))
            return true;
          return broadcastsTo(g->type.getShape(), type.getShape()) &&
                 llvm::none_of(g->ops, [&](Operation *m) {
                   // pow's products need the base whole (as the unfused kernel has it)
                   return reduced.contains(m) || isa<PowOp>(m);
                 });
        };
        for (Value operand : op.getOperands()) {
          Group *g = groupOf.lookup(operand.getDefiningOp());
          if (g && compatible(g) && !llvm::is_contained(candidates, g) &&
              !llvm::is_contained(excluded, g))
            candidates.push_back(g);
        }
        SmallVector<Group *> chosen;
        if (candidates.size() > 1 &&
            canFuse(candidates, &op, type, position, reduced, bf16Reductions))
          chosen = candidates;
        else
          for (Group *g : candidates)
            if (canFuse({g}, &op, type, position, reduced, bf16Reductions)) {
              chosen = {g};
              break;
            }
        Group *joined;
        if (chosen.empty()) {
          groups.push_back(std::make_unique<Group>());
          joined = groups.back().get();
          joined->type = type;
        } else {
          joined = chosen.front();
          for (Group *other : llvm::drop_begin(chosen)) {
            for (Operation *m : other->ops) {
              joined->ops.insert(m);
              groupOf[m] = joined;
            }
            other->ops.clear();
          }
          // Keep program order (the merged groups' ops interleave).
          SmallVector<Operation *> ordered(joined->ops.begin(), joined->ops.end());
          llvm::sort(ordered, [&](Operation *x, Operation *y) {
            return position.lookup(x) < position.lookup(y);
          });
          joined->ops.clear();
          joined->ops.insert(ordered.begin(), ordered.end());
          joined->type = type; // it may have been a smaller group
        }
        joined->ops.insert(&op);
        groupOf[&op] = joined;
      }
      // A reduction of a value that a group reads (a bias gradient's sum of the same
      // gradient a norm's weight gradient multiplies) is summed by that group too.
      for (Operation &op : func.getBody().front()) {
        if (fusibleReduction(&op, bf16Reductions) == fused::Store || reduced.contains(&op))
          continue;
        Value operand = op.getOperand(0);
        auto type = cast<RankedTensorType>(operand.getType());
        for (Operation *user : operand.getUsers()) {
          Group *g = groupOf.lookup(user);
          if (!g || !sameShape(g->type, type) || g->ops.size() < 2 ||
              !canFuse({g}, &op, type, position, reduced, bf16Reductions))
            continue;
          SmallVector<Operation *> ordered(g->ops.begin(), g->ops.end());
          ordered.push_back(&op);
          llvm::sort(ordered, [&](Operation *x, Operation *y) {
            return position.lookup(x) < position.lookup(y);
          });
          g->ops.clear();
          g->ops.insert(ordered.begin(), ordered.end());
          groupOf[&op] = g;
          reduced.insert(&op);
          break;
        }
      }
      OpBuilder builder(&getContext());
      for (const auto &group : groups) {
        trimTruthEdges(*group, reduced);
        trimUnanchoredReductions(*group, reduced);
        if (group->ops.size() < 2) // single ops stay, merged groups are empty
          continue;
        int64_t groupReductions =
            llvm::count_if(group->ops, [&](Operation *m) { return reduced.contains(m); });
        int64_t groupOps = int64_t(group->ops.size());
        std::optional<int64_t> rounded = fuse(*group, position, builder);
        if (!rounded)
          continue;
        ++kernels;
        ops += groupOps;
        reductions += groupReductions;
        roundings += *rounded;
      }
    }
    Builder b(&getContext());
    SmallVector<NamedAttribute> counts = {
        b.getNamedAttr("kernels", b.getI64IntegerAttr(kernels)),
        b.getNamedAttr("ops", b.getI64IntegerAttr(ops)),
        b.getNamedAttr("reductions", b.getI64IntegerAttr(reductions))};
    if (roundings > 0) // bf16 programs only (f32 modules keep their three counts)
      counts.push_back(b.getNamedAttr("roundings", b.getI64IntegerAttr(roundings)));
    module->setAttr("plait.fuse_elementwise", b.getDictionaryAttr(counts));
  }
};

} // namespace
} // namespace plait
