// -plait-schedule: reorder a training step to lower its peak memory without delaying or
// hurrying any collective.
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "passes/Passes.h.inc"

namespace {

struct SchedulePass : impl::SchedulePassBase<SchedulePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto func = entryFunction(module, "schedule");
    if (failed(func))
      return signalPassFailure();
    Block &body = func->getBody().front();

    // Storage ops define values that live for the whole step wherever they stand: put them
    // first, so that nothing has to wait for them.
    Operation *front = &body.front();
    for (Operation &op : llvm::make_early_inc_range(body))
      if (isa<HyperOp, StateOp>(op) && &op != front)
        op.moveBefore(front);

    OpPositions position(body);
    // When a reader is done with a value: a collective reads until its first user waits.
    auto readEnd = [&](Operation *user) -> Operation * {
      if (!isCollective(user))
        return user;
      Operation *wait = body.getTerminator();
      for (Operation *u : user->getUsers())
        if (position[u] < position[wait])
          wait = u;
      return wait;
    };

    // Optimizer updates move up to just after their last input and the last reader of the
    // param and state they replace: their gradient is freed at once instead of living to the
    // end of the step, and the memory plan can write the result over the old value.
    //
    // An update whose gradient comes from a collective C moves its wait with it, so it goes
    // no earlier than just before the next collective of C's kind (the next bucket's
    // all-reduce, the next unit's reduce-scatter): C still overlaps the backward compute
    // between the two, and C's input (the unit's whole gradient) is freed there, so at most
    // two of them are live instead of every unit's until the end of the step. An update
    // whose collective is the last of its kind stays where it is.
    auto nextOfKind = [&](Operation *collective) -> Operation * {
      for (Operation *o = collective->getNextNode(); o; o = o->getNextNode())
        if (o->getName() == collective->getName())
          return o;
      return nullptr;
    };
    int64_t moved = 0;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (!isOptimizerUpdate(&op))
        continue;
      Operation *after = nullptr;
      auto later = [&](Operation *o) {
        if (o && o != &op && (!after || position[o] > position[after]))
          after = o;
      };
      bool pinned = false;
      // The casts and negations that only feed this update (bf16-mixed: the gradient cast up
      // to f32; a param group's maximize: the gradient negated) move with it: the first one's
      // operand counts as the update's.
      SmallVector<Operation *> feeders; // in program order
      SmallVector<Value> inputs(op.getOperands());
      for (Value &operand : inputs) {
        if (!feeders.empty())
          break;
        while (Operation *def = operand.getDefiningOp()) {
          if (!isa<CastOp, NegOp>(def) || !def->hasOneUse())
            break;
          feeders.insert(feeders.begin(), def);
          operand = def->getOperand(0);
        }
      }
      for (Value operand : inputs) {
        Operation *def = operand.getDefiningOp();
        if (def && isCollective(def)) {
          Operation *next = nextOfKind(def);
          if (!next || position[next] > position[&op]) {
            pinned = true;
          } else {
            later(next->getPrevNode());
          }
        }
        later(def);
        if (def && isa<ParamOp, ParamShardOp, StateOp>(def))
          for (Operation *user : operand.getUsers())
            if (!isa<AssignOp>(user) && user != &op)
              later(readEnd(user));
      }
      Operation *first = feeders.empty() ? &op : feeders.front();
      if (pinned || !after || position[after] >= position[first] ||
          after->getNextNode() == first)
        continue;
      for (Operation *feeder : feeders) {
        position.moveAfter(feeder, after);
        after = feeder;
      }
      position.moveAfter(&op, after);
      ++moved;
    }
    module->setAttr("plait.schedule",
                    OpBuilder(module.getContext()).getI64IntegerAttr(moved));
  }
};

} // namespace
} // namespace plait
