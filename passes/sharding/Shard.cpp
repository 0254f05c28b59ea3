// -plait-shard: group params into units, place each unit (ddp, zero1/2/3, fsdp, hsdp:G) and
// rewrite its gradients, optimizer state and (for zero3/fsdp/hsdp) params into shards.
#include "passes/GradientClipping.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/sharding/FlatUnit.h"
#include "passes/sharding/Placement.h"
#include "passes/sharding/ShardedUpdates.h"
#include "passes/sharding/SyncMeans.h"

#include <deque>
#include <map>
#include <regex>

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_SHARDPASS
#include "passes/Passes.h.inc"

namespace {

/// A trainable param: its op, its optimizer update and where the forward first reads it.
struct TrainableParam {
  ParamOp op;
  Operation *update = nullptr;
  int64_t firstUse = 0;
  // With micro-batches, the gradient of each one (in order) whose mean the update reads.
  SmallVector<Value> terms;
  // ... and the ops that compute that mean: the division, then the running sums, last first.
  SmallVector<Operation *> meanOps;
  // The update read the negation of its gradient (a param group's maximize): lifted while the
  // gradient is placed, put back before the update when it is done (negateGradients).
  bool negated = false;
  RankedTensorType type() { return op.getType(); }
  Value grad() { return update->getOperand(1); }
};

struct Unit {
  std::string name;
  SmallVector<TrainableParam *> params; // in first-use order
  Placement placement;
  int64_t firstUse = 0;
  bool accumulateInShard = false; // micro-batches reduce-scattered one by one, summed in shard
  bool deferReplicaReduce = false; // hsdp, K >= 3: the replicas all-reduce twice per step
  bool negated = false;            // its params' updates read negated gradients
  Operation *shardUpdate = nullptr; // a flat unit's one update, once placed
  int64_t numel() const {
    int64_t n = 0;
    for (TrainableParam *p : params)
      n += p->type().getNumElements();
    return n;
  }
};

/// Under --precision bf16-mixed a param's gradient arrives as a cast of its bf16 gradient
/// up to f32: that bf16 value (what the collective should move), or null.
Value halfGradient(Value grad) {
  auto c = grad.getDefiningOp<CastOp>();
  if (!c)
    return {};
  auto source = cast<RankedTensorType>(c.getX().getType());
  return source.getElementType().isBF16() ? c.getX() : Value();
}

/// The gradient before a one-rank step's clipping (plait-build-train-step scales each one by
/// the scalar coefficient): under bf16-mixed the scaled f32 value is a transient like the
/// cast it scales, and the gradient kept is still the bf16 one.
Value unclipped(Value grad) {
  auto mul = grad.getDefiningOp<MulOp>();
  if (!mul)
    return grad;
  bool scalarRhs = cast<RankedTensorType>(mul.getRhs().getType()).getRank() == 0;
  return scalarRhs ? mul.getLhs() : grad;
}

/// The bf16 working copies of a param under --precision bf16-mixed: its casts to bf16, when
/// everything but its optimizer update reads it through one; else empty.
SmallVector<CastOp> halfCopies(ParamOp param) {
  SmallVector<CastOp> copies;
  for (Operation *user : param->getUsers()) {
    if (isOptimizerUpdate(user) || isa<AssignOp>(user))
      continue;
    auto c = dyn_cast<CastOp>(user);
    if (!c || !cast<RankedTensorType>(c.getType()).getElementType().isBF16())
      return {};
    copies.push_back(c);
  }
  return copies;
}

/// With `k` micro-batches, the gradient plait-build-train-step gives an update is the mean
/// div(s_k, K) of the running sums s_i = add(s_(i-1), t_i), s_1 = t_1 (MicroBatches.cpp).
/// Sets p's terms t_1..t_k and the ops of that chain (div, then s_k ... s_2); false, with
/// neither set, when the update's gradient is not that chain.
bool findMicroBatchMean(TrainableParam &p, int64_t k) {
  Value grad = p.grad();
  auto div = grad.getDefiningOp<DivOp>();
  if (!div || !div.getRhs().getDefiningOp<ConstantOp>() ||
      cast<RankedTensorType>(div.getRhs().getType()).getRank() != 0)
    return false;
  SmallVector<Value> terms(k);
  SmallVector<Operation *> ops{div};
  Value sum = div.getLhs();
  for (int64_t i = k - 1; i > 0; --i) {
    auto add = sum.getDefiningOp<AddOp>();
    if (!add || add.getRhs().getType() != grad.getType())
      return false;
    terms[i] = add.getRhs();
    ops.push_back(add);
    sum = add.getLhs();
  }
  if (sum.getType() != grad.getType())
    return false;
  terms[0] = sum;
  p.terms = std::move(terms);
  p.meanOps = std::move(ops);
  return true;
}

/// The flat gradient of `grads` (one unit's, `padded` elements) reduced to this rank's
/// `shardType` shard: in bf16, half the bytes, where every gradient arrives as a cast up from
/// bf16 (bf16-mixed; the shard is then bf16, cast up for the update), else as they are.
Value reduceFlat(OpBuilder &b, Location loc, ArrayRef<Value> grads, int64_t padded,
                 RankedTensorType shardType, ArrayAttr shardGroups, ArrayAttr replicaGroups) {
  SmallVector<Value> halves;
  for (Value grad : grads)
    if (Value half = halfGradient(grad))
      halves.push_back(half);
  if (halves.size() != grads.size())
    return b.create<SyncGradOp>(loc, shardType, flattenInto(b, loc, grads, padded),
                                shardGroups, replicaGroups);
  auto halfShard = RankedTensorType::get(
      shardType.getShape(), cast<RankedTensorType>(halves[0].getType()).getElementType());
  return b.create<SyncGradOp>(loc, halfShard, flattenInto(b, loc, halves, padded),
                              shardGroups, replicaGroups);
}

/// The optimizer state operands of an update op, in operand order.
SmallVector<Value> stateOperands(Operation *update) { return updateStates(update); }

/// The weight EMA (--ema-decay) that averages `update`'s new param, or null.
WeightEmaOp emaOf(Operation *update) {
  for (Operation *user : update->getResult(0).getUsers())
    if (auto ema = dyn_cast<WeightEmaOp>(user))
      return ema;
  return {};
}

/// Erases a param's weight EMA (its assign, the op and its state) once the flat shard's
/// replaces it.
void eraseEma(WeightEmaOp ema) {
  Operation *state = ema.getEma(0).getDefiningOp();
  for (Operation *user : llvm::to_vector(ema->getUsers()))
    user->erase();
  ema->erase();
  if (state && state->use_empty())
    state->erase();
}

/// The names of an update's states after the param's (torch's state_dict keys), as
/// plait-build-train-step names them.
SmallVector<StringRef> stateSuffixes(Operation *update) {
  if (auto adamw = dyn_cast<AdamWUpdateOp>(update)) {
    if (adamw.getAmsgrad())
      return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"exp_avg", "exp_avg_sq"};
  }
  if (isa<AdagradUpdateOp>(update))
    return {"sum"};
  if (isa<LionUpdateOp>(update))
    return {"exp_avg"};
  if (isa<AsgdUpdateOp>(update))
    return {"ax"};
  if (isa<AdamaxUpdateOp>(update))
    return {"exp_avg", "exp_inf"};
  if (isa<NAdamUpdateOp, RAdamUpdateOp, LambUpdateOp>(update))
    return {"exp_avg", "exp_avg_sq"};
  if (isa<AdadeltaUpdateOp>(update))
    return {"square_avg", "acc_delta"};
  if (isa<RpropUpdateOp>(update))
    return {"prev", "step_size"};
  if (auto adafactor = dyn_cast<AdafactorUpdateOp>(update)) {
    SmallVector<StringRef> names;
    if (adafactor.getBeta1())
      names.push_back("exp_avg");
    if (adafactor.factored())
      names.append({"exp_avg_sq_row", "exp_avg_sq_col"});
    else
      names.push_back("exp_avg_sq");
    return names;
  }
  if (auto rmsprop = dyn_cast<RMSpropUpdateOp>(update)) {
    SmallVector<StringRef> names{"square_avg"};
    if (rmsprop.getCentered())
      names.push_back("grad_avg");
    if (rmsprop.getMomentum().convertToDouble() != 0.0)
      names.push_back("momentum_buffer");
    return names;
  }
  return stateOperands(update).empty() ? SmallVector<StringRef>{}
                                       : SmallVector<StringRef>{"momentum_buffer"};
}

/// The phases of the step in program order, numbered from 0: a forward (the ops the loss is
/// computed from), then a backward (the other ops), then, with micro-batches, the next
/// micro-batch's forward and backward, and so on. Even phases are forwards. Ops without
/// operands (params, constants) take the phase of the op before them.
DenseMap<Operation *, int64_t> stepPhases(Block &body, Value loss) {
  unsigned ops = unsigned(body.getOperations().size());
  DenseSet<Value> toLoss{loss};
  DenseSet<Operation *> forward;
  toLoss.reserve(ops);
  forward.reserve(ops);
  for (Operation &op : llvm::reverse(body))
    if (llvm::any_of(op.getResults(), [&](Value r) { return toLoss.contains(r); })) {
      forward.insert(&op);
      toLoss.insert(op.operand_begin(), op.operand_end());
    }
  DenseMap<Operation *, int64_t> phase;
  phase.reserve(ops);
  int64_t current = 0;
  for (Operation &op : body) {
    if (op.getNumOperands() > 0 && forward.contains(&op) != (current % 2 == 0))
      ++current;
    phase[&op] = current;
  }
  return phase;
}

/// Two updates differ in anything but their tensors (the flat update needs one setting).
bool sameSettings(Operation *a, Operation *b) {
  // Adafactor's second moment is a row and a column per matrix, one tensor per vector: its
  // state count follows each param's rank, not its settings.
  return a->getName() == b->getName() && a->getAttrDictionary() == b->getAttrDictionary() &&
         (isa<AdafactorUpdateOp>(a) || stateOperands(a).size() == stateOperands(b).size());
}

/// When p's update reads a negation of its gradient that nothing else reads, marked as a param
/// group's maximize (kMaximizeNegationAttr: plait-build-train-step puts it just before the
/// update; a gradient's own negation, a subtracted param's, is not lifted), the update
/// reads the gradient itself and p is marked negated: the gradient is then reduced, clipped
/// and sharded as any other, and negateGradient puts the negation back. IEEE negation is
/// exact and commutes with sums, means and scaling, so the update reads the same bits.
/// Returns the negation, now unused, for the caller to erase.
Operation *liftNegation(TrainableParam &p) {
  auto neg = p.grad().getDefiningOp<NegOp>();
  if (!neg || !neg->hasOneUse() || !neg->hasAttr(kMaximizeNegationAttr))
    return nullptr;
  p.update->setOperand(1, neg.getX());
  p.negated = true;
  return neg;
}

/// `update` reads the negation of its gradient, taken just before it.
void negateGradient(Operation *update) {
  OpBuilder b(update);
  update->setOperand(1, b.create<NegOp>(update->getLoc(), update->getOperand(1)));
}

struct ShardPass : impl::ShardPassBase<ShardPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    if (worldSize < 1) {
      module.emitError("world size must be at least 1, got ") << worldSize;
      return signalPassFailure();
    }
    std::string error;
    auto strategyPlacement = parsePlacement(strategy, worldSize, error);
    if (!strategyPlacement) {
      module.emitError("--strategy: ") << error;
      return signalPassFailure();
    }
    auto rules = parsePlacementRules(placement, worldSize, error);
    if (!rules) {
      module.emitError("--placement: ") << error;
      return signalPassFailure();
    }
    std::vector<std::regex> regexes;
    for (const PlacementRule &rule : *rules) {
      try {
        regexes.emplace_back(rule.regex);
      } catch (const std::regex_error &e) {
        module.emitError("--placement: invalid regex '") << rule.regex << "': " << e.what();
        return signalPassFailure();
      }
    }
    auto func = entryFunction(module, "shard");
    if (failed(func))
      return signalPassFailure();
    // key, what it clips to, this pass's option
    const char *const clipping[][3] = {{"clip_grad_norm", "norm", "clip-grad-norm"},
                                       {"clip_grad_value", "value", "clip-grad-value"}};
    if (worldSize > 1)
      if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train"))
        for (auto [key, what, option] : clipping)
          if (auto clip = train.getAs<FloatAttr>(key); clip && clip.getValueAsDouble() > 0) {
            module.emitError("the training step already clips local gradients; with world "
                             "size > 1 give the ")
                << what << " to plait-shard (" << option << ") instead";
            return signalPassFailure();
          }
    if (worldSize > 1)
      if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train");
          train && train.get("log_grad_norm")) {
        module.emitError("the training step already outputs the local gradients' norm; with "
                         "world size > 1 give log-grad-norm to plait-shard instead");
        return signalPassFailure();
      }
    if (clipGradNorm < 0 || clipGradValue < 0) {
      module.emitError(clipGradNorm < 0 ? "clip-grad-norm" : "clip-grad-value")
          << " must be >= 0, got " << (clipGradNorm < 0 ? clipGradNorm : clipGradValue);
      return signalPassFailure();
    }
    if (std::string why = invalidNormType(clipGradNormType); !why.empty()) {
      module.emitError(why);
      return signalPassFailure();
    }
    if (failed(lowerSyncMeans(module, *func, worldSize)))
      return signalPassFailure();

    Block &body = func->getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : body)
      position[&op] = position.size();

    // Trainable params: the ones an optimizer update writes.
    std::deque<TrainableParam> params;
    for (Operation &op : body) {
      if (!isOptimizerUpdate(&op))
        continue;
      auto param = op.getOperand(0).getDefiningOp<ParamOp>();
      if (!param) {
        op.emitOpError("updates a value that is not a plait.param; cannot shard it");
        return signalPassFailure();
      }
      TrainableParam p{param, &op, std::numeric_limits<int64_t>::max()};
      for (Operation *user : param->getUsers())
        if (!isOptimizerUpdate(user) && !isa<AssignOp>(user))
          p.firstUse = std::min(p.firstUse, position[user]);
      params.push_back(p);
    }
    for (TrainableParam &p : params)
      if (Operation *neg = liftNegation(p)) {
        position.erase(neg);
        neg->erase();
      }
    if (params.empty()) {
      module.emitError("no trainable params to place (run plait-build-train-step first)");
      return signalPassFailure();
    }
    SmallVector<TrainableParam *> byUse;
    for (TrainableParam &p : params)
      byUse.push_back(&p);
    llvm::stable_sort(byUse, [](TrainableParam *a, TrainableParam *b) {
      return a->firstUse < b->firstUse;
    });

    // Units.
    std::vector<Unit> units;
    if (unitSize > 0) {
      int64_t bytes = 0;
      for (TrainableParam *p : byUse) {
        if (units.empty() || bytes >= unitSize) {
          units.push_back({"unit" + std::to_string(units.size())});
          bytes = 0;
        }
        units.back().params.push_back(p);
        bytes += tensorBytes(p->type());
      }
    } else {
      std::map<std::string, size_t> index;
      for (TrainableParam *p : byUse) {
        std::string key = defaultUnitKey(p->op.getName());
        auto [it, inserted] = index.emplace(key, units.size());
        if (inserted)
          units.push_back({key});
        units[it->second].params.push_back(p);
      }
    }
    // A flat shard is updated by one op: a unit whose params' updates differ in their settings
    // (--no-weight-decay, --lr-scale, a param group's maximize) is split into one unit per
    // setting, in first-use order, the second and later named UNIT/1, UNIT/2, ...
    std::vector<Unit> split;
    for (Unit &u : units) {
      std::vector<Unit> parts;
      for (TrainableParam *p : u.params) {
        auto same = llvm::find_if(parts, [&](const Unit &part) {
          return part.negated == p->negated &&
                 part.params.front()->update->getAttrDictionary() ==
                     p->update->getAttrDictionary();
        });
        if (same == parts.end()) {
          std::string name =
              parts.empty() ? u.name : u.name + "/" + std::to_string(parts.size());
          parts.push_back({name});
          parts.back().negated = p->negated;
          same = std::prev(parts.end());
        }
        same->params.push_back(p);
      }
      for (Unit &part : parts)
        split.push_back(std::move(part));
    }
    units = std::move(split);
    for (Unit &u : units)
      u.firstUse = u.params.front()->firstUse;

    // Placements: --strategy, then the first matching --placement rule.
    std::vector<bool> ruleUsed(rules->size(), false);
    for (Unit &u : units) {
      u.placement = *strategyPlacement;
      for (size_t i = 0; i < rules->size(); ++i)
        if (std::regex_search(u.name, regexes[i])) {
          u.placement = (*rules)[i].placement;
          ruleUsed[i] = true;
          break;
        }
    }
    for (size_t i = 0; i < rules->size(); ++i)
      if (!ruleUsed[i]) {
        std::string names;
        for (const Unit &u : units)
          names += (names.empty() ? "" : ", ") + u.name;
        module.emitError("--placement: rule '")
            << (*rules)[i].regex << "' matches no unit (units: " << names << ")";
        return signalPassFailure();
      }

    // With micro-batches, units with sharded gradients reduce each micro-batch's.
    int64_t microBatches = 1;
    if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train"))
      if (auto k = train.getAs<IntegerAttr>("micro_batches"))
        microBatches = k.getInt();
    if (worldSize > 1 && microBatches > 1 && shardedAccumulation)
      for (Unit &u : units) {
        if (!u.placement.shardsGrads())
          continue;
        u.accumulateInShard = llvm::all_of(u.params, [&](TrainableParam *p) {
          return findMicroBatchMean(*p, microBatches);
        });
        u.deferReplicaReduce = u.accumulateInShard && deferReplicaReduce &&
                               microBatches >= 3 &&
                               u.placement.replicaGroupSize(worldSize) > 1;
      }

    recordUnits(module, units);
    if (worldSize == 1) {
      negateGradients(units);
      return; // one rank: every placement is the single-rank step
    }

    Value loss = cast<func::ReturnOp>(body.getTerminator()).getOperand(0);
    DenseMap<Operation *, int64_t> phase = stepPhases(body, loss);
    Operation *optimizerStart = nullptr;
    for (Operation &op : body)
      if (isa<HyperOp, StateOp, AssignOp>(op) || isOptimizerUpdate(&op)) {
        optimizerStart = &op;
        break;
      }

    for (Unit &u : units) {
      LogicalResult done = u.placement.kind == PlacementKind::Ddp
                               ? placeDdp(u)
                               : placeFlat(*func, u, position, phase, optimizerStart);
      if (failed(done))
        return signalPassFailure();
    }
    if (clipGradValue > 0)
      clampSyncedGradients(body, clipGradValue);
    if (clipGradNorm > 0 || logGradNorm)
      if (Value norm = clipSyncedGradients(body, clipGradNorm, clipGradNormType))
        appendGradNormOutput(*func, norm);
    negateGradients(units); // after clipping, as torch's step; before LAMB's norms read them
    materializeLambNorms(body);
    materializeAdafactorSums(body);
    // Assigns end the step; the new ones were built before the terminator, after old ones.
    Operation *terminator = body.getTerminator();
    for (AssignOp assign : llvm::to_vector(body.getOps<AssignOp>()))
      assign->moveBefore(terminator);
  }

  /// The negations liftNegation took: on each negated unit's updates (its params' under ddp
  /// or on one rank, its flat shard's otherwise).
  static void negateGradients(std::vector<Unit> &units) {
    for (Unit &u : units) {
      if (!u.negated)
        continue;
      if (u.shardUpdate) {
        negateGradient(u.shardUpdate);
        continue;
      }
      for (TrainableParam *p : u.params)
        negateGradient(p->update);
    }
  }

  /// The elements of unit `u`'s optimizer states (and weight EMA averages), as they are
  /// before sharding.
  static int64_t stateElements(const Unit &u) {
    int64_t n = 0;
    for (TrainableParam *p : u.params) {
      for (Value state : stateOperands(p->update))
        n += cast<RankedTensorType>(state.getType()).getNumElements();
      if (emaOf(p->update))
        n += p->type().getNumElements();
    }
    return n;
  }

  void recordUnits(ModuleOp module, const std::vector<Unit> &units) {
    OpBuilder b(module.getContext());
    module->setAttr(kWorldSizeAttr, b.getI64IntegerAttr(worldSize));
    SmallVector<Attribute> list;
    for (const Unit &u : units) {
      SmallVector<Attribute> names;
      for (TrainableParam *p : u.params)
        names.push_back(p->op.getNameAttr());
      int64_t g = u.placement.shardGroupSize(worldSize);
      Type element = u.params.front()->type().getElementType();
      int64_t elementBytes = tensorBytes(RankedTensorType::get({1}, element));
      // The weight EMA's average is sharded with the optimizer's states. A sharded
      // Adafactor unit shards only its exp_avg; its second moments stay whole on every rank.
      Operation *first = u.params.front()->update;
      auto adafactor = dyn_cast<AdafactorUpdateOp>(first);
      const bool replicatedMoments = adafactor && worldSize > 1 && u.placement.shardsOptimizer();
      const int64_t statesPerParam =
          replicatedMoments ? int64_t((adafactor.getBeta1() ? 1 : 0) + (emaOf(first) ? 1 : 0))
                            : int64_t(stateOperands(first).size() + (emaOf(first) ? 1 : 0));
      SmallVector<NamedAttribute> entries{
          b.getNamedAttr("name", b.getStringAttr(u.name)),
          b.getNamedAttr("placement", b.getStringAttr(u.placement.str())),
          b.getNamedAttr("params", b.getArrayAttr(names)),
          b.getNamedAttr("numel", b.getI64IntegerAttr(u.numel())),
          b.getNamedAttr("padded_numel", b.getI64IntegerAttr(paddedNumel(u.numel(), g))),
          b.getNamedAttr("element_bytes", b.getI64IntegerAttr(elementBytes)),
          b.getNamedAttr("states_per_param", b.getI64IntegerAttr(statesPerParam)),
          b.getNamedAttr("precision",
                         b.getStringAttr(llvm::all_of(u.params,
                                                      [](TrainableParam *p) {
                                                        return !halfCopies(p->op).empty();
                                                      })
                                             ? "bf16-mixed"
                                             : "fp32")),
          // Bytes of a gradient element as it is reduced and kept: bf16 where every
          // gradient arrives as a cast from bf16, else (f32 accumulation over
          // micro-batches, or fp32) the params'.
          b.getNamedAttr("grad_element_bytes",
                         b.getI64IntegerAttr(llvm::all_of(u.params,
                                                          [](TrainableParam *p) {
                                                            return bool(
                                                                halfGradient(unclipped(p->grad())));
                                                          })
                                                 ? kHalfBytes
                                                 : elementBytes))};
      if (u.accumulateInShard)
        entries.push_back(b.getNamedAttr("accumulate_in_shard", b.getBoolAttr(true)));
      if (u.deferReplicaReduce)
        entries.push_back(b.getNamedAttr("defer_replica_reduce", b.getBoolAttr(true)));
      // States not of their params' shapes (Adafactor's rows and columns): their own
      // element count, where states_per_param x numel would misstate it; sharded, the
      // second moments' elements, whole on every rank, beside the sharded exp_avg.
      const int64_t states = stateElements(u);
      if (replicatedMoments) {
        int64_t moments = 0;
        for (TrainableParam *p : u.params)
          for (Value m : secondMoments(cast<AdafactorUpdateOp>(p->update)))
            moments += cast<RankedTensorType>(m.getType()).getNumElements();
        entries.push_back(
            b.getNamedAttr("replicated_state_elements", b.getI64IntegerAttr(moments)));
      } else if (states != statesPerParam * u.numel()) {
        entries.push_back(b.getNamedAttr("state_elements", b.getI64IntegerAttr(states)));
      }
      list.push_back(b.getDictionaryAttr(entries));
    }
    module->setAttr("plait.units", b.getArrayAttr(list));
  }

  /// ddp: each gradient is averaged over all ranks where it is produced.
  LogicalResult placeDdp(Unit &u) {
    ArrayAttr world = groupsAttr(&getContext(), worldGroup(worldSize));
    for (TrainableParam *p : u.params) {
      Value grad = p->grad();
      OpBuilder b(&getContext());
      b.setInsertionPointAfterValue(grad);
      if (Value half = halfGradient(grad)) {
        // bf16-mixed: averaged in bf16 (half the bytes), then cast up for the update.
        // The cast stands just before the update (plait-schedule moves the two together):
        // the collective lowering may move the gradient's sync later, but not past it.
        auto sync = b.create<SyncGradOp>(grad.getLoc(), half.getType(), half, ArrayAttr(), world);
        b.setInsertionPoint(p->update);
        p->update->setOperand(1, b.create<CastOp>(grad.getLoc(), grad.getType(), sync));
        if (Operation *old = grad.getDefiningOp(); old && old->use_empty())
          old->erase();
        continue;
      }
      auto sync = b.create<SyncGradOp>(grad.getLoc(), grad.getType(), grad, ArrayAttr(), world);
      p->update->setOperand(1, sync);
    }
    return success();
  }

  /// A sharded state's layout, for checkpoints: the unit's flat buffer with each param's
  /// slot named "<param>.<suffix>" (the name the state has under ddp), split like the
  /// params' shards. The plan writer turns it into the state tensor's Shard.
  static DictionaryAttr stateLayout(OpBuilder &b, Unit &u, StringRef suffix,
                                    ArrayAttr shardGroups, int64_t padded) {
    SmallVector<Attribute> pieces;
    int64_t offset = 0;
    for (TrainableParam *p : u.params) {
      pieces.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(p->op.getName() + "." + suffix)),
           b.getNamedAttr("shape", b.getDenseI64ArrayAttr(p->type().getShape())),
           b.getNamedAttr("offset", b.getI64IntegerAttr(offset))}));
      offset += p->type().getNumElements();
    }
    return b.getDictionaryAttr({b.getNamedAttr("unit", b.getStringAttr(u.name)),
                                b.getNamedAttr("groups", shardGroups),
                                b.getNamedAttr("padded_numel", b.getI64IntegerAttr(padded)),
                                b.getNamedAttr("pieces", b.getArrayAttr(pieces))});
  }

  LogicalResult placeFlat(func::FuncOp func, Unit &u, DenseMap<Operation *, int64_t> &position,
                          const DenseMap<Operation *, int64_t> &phase,
                          Operation *optimizerStart) {
    MLIRContext *ctx = &getContext();
    Block &body = func.getBody().front();
    Operation *like = u.params.front()->update;
    Type element = u.params.front()->type().getElementType();
    for (TrainableParam *p : u.params) {
      if (p->type().getElementType() != element)
        return p->op.emitOpError("unit '") << u.name << "' mixes element types; give it "
                                           << "another unit (--unit-size) or ddp";
      if (!sameSettings(p->update, like))
        return p->update->emitOpError("unit '") << u.name << "' mixes optimizer settings";
      WeightEmaOp ema = emaOf(p->update), likeEma = emaOf(like);
      if (bool(ema) != bool(likeEma) ||
          (ema && ema->getAttrDictionary() != likeEma->getAttrDictionary()))
        return p->op.emitOpError("unit '") << u.name << "' mixes weight EMA settings";
    }
    int64_t g = u.placement.shardGroupSize(worldSize);
    int64_t padded = paddedNumel(u.numel(), g);
    auto shardType = RankedTensorType::get({padded / g}, element);
    ArrayAttr shardGroups = groupsAttr(ctx, u.placement.kind == PlacementKind::Hsdp
                                                ? blockGroups(worldSize, g)
                                                : worldGroup(worldSize));
    ArrayAttr replicaGroups;
    if (u.placement.replicaGroupSize(worldSize) > 1)
      replicaGroups = groupsAttr(ctx, strideGroups(worldSize, g));
    Location loc = NameLoc::get(StringAttr::get(ctx, u.name));
    SmallVector<Type> paramTypes;
    SmallVector<Value> grads, paramValues;
    Operation *lastGrad = nullptr;
    for (TrainableParam *p : u.params) {
      paramTypes.push_back(p->type());
      grads.push_back(p->grad());
      paramValues.push_back(p->op);
      Operation *def = p->grad().getDefiningOp();
      if (def && (!lastGrad || position[def] > position[lastGrad]))
        lastGrad = def;
    }

    // The unit's gradient: flattened where its last piece is produced (zero1: at the end
    // of backward, so the whole gradient stays until the optimizer step, as ZeRO-1 does).
    OpBuilder b(ctx);
    if (u.placement.kind == PlacementKind::Zero1 || !lastGrad)
      b.setInsertionPoint(optimizerStart);
    else
      b.setInsertionPointAfter(lastGrad);
    // bf16-mixed: the gradient is reduced in bf16 and its shard cast up for the update (the
    // f32 casts it replaces are then unused).
    Value gradShard;
    if (u.accumulateInShard) {
      gradShard = accumulateInShard(b, loc, u, position, optimizerStart, padded, shardType,
                                    shardGroups, replicaGroups);
    } else {
      gradShard = reduceFlat(b, loc, grads, padded, shardType, shardGroups, replicaGroups);
      for (Value grad : grads)
        if (Operation *def = grad.getDefiningOp(); def && def->use_empty())
          def->erase();
    }

    // This rank's shard of the params. Under bf16-mixed the f32 params are the master
    // weights, part of the optimizer state in ZeRO's accounting: sharded with it under zero1
    // and zero2 too, their bf16 working copies gathered once per step and kept until the
    // backward is done (as ZeRO-1/2 keep replicated fp16 params).
    bool mixed = llvm::all_of(u.params, [](TrainableParam *p) { return !halfCopies(p->op).empty(); });
    bool shardParams = u.placement.shardsParams() || mixed;
    Value paramShard;
    if (shardParams) {
      b.setInsertionPointToStart(&body);
      SmallVector<Attribute> pieces;
      int64_t offset = 0;
      for (TrainableParam *p : u.params) {
        SmallVector<NamedAttribute> piece{
            b.getNamedAttr("name", p->op.getNameAttr()),
            b.getNamedAttr("shape", b.getDenseI64ArrayAttr(p->type().getShape())),
            b.getNamedAttr("offset", b.getI64IntegerAttr(offset))};
        if (auto value = p->op.getValueAttr())
          piece.push_back(b.getNamedAttr("value", value));
        else
          piece.push_back(b.getNamedAttr("init", p->op.getInitAttr()));
        pieces.push_back(b.getDictionaryAttr(piece));
        offset += p->type().getNumElements();
      }
      paramShard = b.create<ParamShardOp>(loc, shardType, b.getStringAttr(u.name), shardGroups,
                                          b.getI64IntegerAttr(padded), b.getArrayAttr(pieces));
      bool reshard = reshardAfterForward && u.placement.shardsParams();
      if (failed(replaceParamUses(u, paramShard, shardGroups, position, phase, reshard, mixed)))
        return failure();
    } else {
      b.setInsertionPoint(optimizerStart);
      Value flatParams = flattenInto(b, loc, paramValues, padded);
      paramShard = b.create<LocalShardOp>(loc, shardType, flatParams, shardGroups);
    }

    // The optimizer step on the shard, with shard-sized state.
    Operation *terminator = body.getTerminator();
    b.setInsertionPoint(terminator);
    SmallVector<Value> states;
    auto adafactor = dyn_cast<AdafactorUpdateOp>(like);
    for (StringRef suffix : stateSuffixes(like)) {
      if (adafactor && suffix != "exp_avg")
        continue; // its second moments stay whole: below
      auto state =
          b.create<StateOp>(loc, shardType, b.getStringAttr(u.name + "." + suffix.str()));
      state->setAttr(kStateLayoutAttr, stateLayout(b, u, suffix, shardGroups, padded));
      states.push_back(state);
    }
    if (cast<RankedTensorType>(gradShard.getType()).getElementType() != element)
      gradShard = b.create<CastOp>(loc, shardType, gradShard); // bf16-mixed: up for the update
    Operation *update;
    if (adafactor) {
      SmallVector<AdafactorUpdateOp> perParam;
      for (TrainableParam *p : u.params)
        perParam.push_back(cast<AdafactorUpdateOp>(p->update));
      update =
          buildAdafactorShardUpdate(b, loc, perParam, paramShard, gradShard, shardGroups, states);
    } else {
      update = buildShardUpdate(b, loc, like, paramShard, gradShard, states);
    }
    u.shardUpdate = update;
    if (auto lamb = dyn_cast<LambUpdateOp>(update); lamb && lamb.adapts()) {
      // Each param's trust ratio needs its norms over the whole unit: its segment of the flat
      // buffer, summed over the shard group (materializeLambNorms, once clipping is done).
      SmallVector<int64_t> segments;
      for (TrainableParam *p : u.params)
        segments.push_back(p->type().getNumElements());
      lamb.setSegments(segments);
      lamb.setGroupsAttr(shardGroups);
    }
    if (shardParams) {
      b.create<AssignOp>(loc, paramShard, update->getResult(0));
    } else {
      Value whole = b.create<UnshardOp>(loc, RankedTensorType::get({padded}, element),
                                        update->getResult(0), shardGroups);
      for (auto [p, piece] : llvm::zip(u.params, unflatten(b, loc, whole, paramTypes)))
        b.create<AssignOp>(loc, p->op, piece);
    }
    for (auto [i, state] : llvm::enumerate(states))
      b.create<AssignOp>(loc, state, update->getResult(i + 1));
    // The weight EMA of the shard's new params, its average a shard laid out as the states.
    if (WeightEmaOp likeEma = emaOf(like)) {
      auto average = b.create<StateOp>(loc, shardType, b.getStringAttr(u.name + ".ema"));
      average->setAttr(kStateLayoutAttr, stateLayout(b, u, "ema", shardGroups, padded));
      auto ema = b.create<WeightEmaOp>(loc, TypeRange{shardType},
                                       ValueRange{update->getResult(0), average, likeEma.getStep()},
                                       likeEma->getAttrs());
      b.create<AssignOp>(loc, average, ema->getResult(0));
    }

    // The per-param updates, their assigns and state are gone.
    for (TrainableParam *p : u.params) {
      if (WeightEmaOp ema = emaOf(p->update))
        eraseEma(ema);
      SmallVector<Value> oldStates = stateOperands(p->update);
      // Its users are the assigns of the new param and state values.
      for (Operation *user : llvm::to_vector(p->update->getUsers()))
        user->erase();
      p->update->erase();
      p->update = nullptr;
      for (Value s : oldStates)
        if (Operation *def = s.getDefiningOp())
          if (def->use_empty())
            def->erase();
      if (u.accumulateInShard)
        eraseWholeMean(*p);
      if (shardParams) {
        if (!p->op->use_empty())
          return p->op.emitOpError("is still used after sharding unit '") << u.name << "'";
        p->op->erase();
      }
    }
    return success();
  }

  /// A unit's gradient shard with sharded accumulation: each micro-batch's gradients are
  /// flattened and reduce-scattered where the last of them is produced (in bf16 where they
  /// all arrive as casts up from bf16), and the shards summed in f32 (each joins the sum
  /// where the next micro-batch's reduction starts, so its collective overlaps a whole
  /// micro-batch; the last before the optimizer), then divided by K: the mean the whole
  /// gradients' chain computed, with no whole gradient kept past its micro-batch.
  ///
  /// hsdp (replicas of the shard group) with K >= 3: only the last micro-batch's shard is
  /// all-reduced across the replicas by itself; the first K - 1 are summed unreduced and
  /// their sum all-reduced once, where the last micro-batch's reduction starts (so it
  /// overlaps that micro-batch's remaining backward). Two all-reduces per step instead of
  /// K (the mean is linear), and no replica-reduced copy of each shard kept alive.
  Value accumulateInShard(OpBuilder &b, Location loc, Unit &u,
                          DenseMap<Operation *, int64_t> &position, Operation *optimizerStart,
                          int64_t padded, RankedTensorType shardType, ArrayAttr shardGroups,
                          ArrayAttr replicaGroups) {
    size_t k = u.params.front()->terms.size();
    auto up = [&](Value shard) -> Value {
      if (shard.getType() == shardType)
        return shard;
      return b.create<CastOp>(loc, shardType, shard);
    };
    Value sum, pending;
    for (size_t i = 0; i < k; ++i) {
      SmallVector<Value> terms;
      Operation *last = nullptr;
      for (TrainableParam *p : u.params) {
        Value term = p->terms[i];
        terms.push_back(term);
        Operation *def = term.getDefiningOp();
        if (def && (!last || position[def] > position[last]))
          last = def;
      }
      if (last)
        b.setInsertionPointAfter(last);
      else
        b.setInsertionPoint(optimizerStart);
      if (pending)
        sum = sum ? Value(b.create<AddOp>(loc, sum, up(pending))) : up(pending);
      bool lastMicroBatch = i + 1 == k;
      if (u.deferReplicaReduce && lastMicroBatch)
        sum = b.create<AllReduceOp>(loc, sum, replicaGroups, b.getStringAttr("mean"));
      ArrayAttr replicas = !u.deferReplicaReduce || lastMicroBatch ? replicaGroups : ArrayAttr();
      pending = reduceFlat(b, loc, terms, padded, shardType, shardGroups, replicas);
    }
    b.setInsertionPoint(optimizerStart);
    sum = sum ? Value(b.create<AddOp>(loc, sum, up(pending))) : up(pending);
    Value count = u.params.front()->meanOps.front()->getOperand(1); // the division's K
    return b.create<DivOp>(loc, sum, count);
  }

  /// After sharded accumulation: the whole gradients' mean and running sums (each erased
  /// after its one user), and the casts up of bf16 terms that the reductions read in bf16.
  static void eraseWholeMean(TrainableParam &p) {
    for (Operation *op : p.meanOps) {
      if (!op->use_empty())
        return;
      op->erase();
    }
    for (Value term : p.terms)
      if (auto c = term.getDefiningOp<CastOp>(); c && c->use_empty())
        c->erase();
  }

  /// zero3/fsdp/hsdp: each forward reads the params from one gather placed before its first
  /// use, each backward from a second one (or the forward's, without resharding). With
  /// micro-batches every micro-batch's forward and backward gathers again.
  ///
  /// `half` (bf16-mixed): the params are read through bf16 casts; the shard is cast and the
  /// gather moves bf16 (half the bytes), its pieces replacing the casts.
  LogicalResult replaceParamUses(Unit &u, Value shard, ArrayAttr groups,
                                 DenseMap<Operation *, int64_t> &position,
                                 const DenseMap<Operation *, int64_t> &phase, bool reshard,
                                 bool half) {
    auto shardType = cast<RankedTensorType>(shard.getType());
    int64_t g = groupsOf(groups).front().size();
    Type element = shardType.getElementType();
    if (half)
      element = BFloat16Type::get(&getContext());
    auto wholeType = RankedTensorType::get({shardType.getDimSize(0) * g}, element);
    SmallVector<Type> types;
    for (TrainableParam *p : u.params)
      types.push_back(RankedTensorType::get(p->type().getShape(), element));
    // What reads each param: its uses, or (half) the uses of its bf16 casts.
    SmallVector<SmallVector<OpOperand *>> uses(u.params.size());
    for (auto [i, p] : llvm::enumerate(u.params)) {
      if (half) {
        for (CastOp c : halfCopies(p->op))
          for (OpOperand &use : c->getUses())
            uses[i].push_back(&use);
        continue;
      }
      for (OpOperand &use : p->op->getUses())
        if (!isOptimizerUpdate(use.getOwner()) && !isa<AssignOp>(use.getOwner()))
          uses[i].push_back(&use);
    }
    // The earliest user in each phase.
    std::map<int64_t, Operation *> firstUser;
    for (auto &list : uses)
      for (OpOperand *use : list) {
        Operation *user = use->getOwner();
        Operation *&first = firstUser[phase.lookup(user)];
        if (!first || position[user] < position[first])
          first = user;
      }
    std::map<int64_t, SmallVector<Value>> pieces;
    for (auto [at, first] : firstUser) {
      bool backward = at % 2 == 1;
      if (backward && !reshard && pieces.count(at - 1)) {
        pieces[at] = pieces[at - 1];
        continue;
      }
      OpBuilder b(first);
      Value source = shard;
      if (half)
        source = b.create<CastOp>(shard.getLoc(),
                                  RankedTensorType::get(shardType.getShape(), element), shard);
      Value whole = b.create<UnshardOp>(shard.getLoc(), wholeType, source, groups);
      pieces[at] = unflatten(b, shard.getLoc(), whole, types);
    }
    for (auto [i, list] : llvm::enumerate(uses))
      for (OpOperand *use : list)
        use->set(pieces[phase.lookup(use->getOwner())][i]);
    if (half)
      for (TrainableParam *p : u.params)
        for (Operation *user : llvm::to_vector(p->op->getUsers()))
          if (isa<CastOp>(user) && user->use_empty())
            user->erase();
    return success();
  }
};

} // namespace
} // namespace plait
