// Lowers a plait function to plan tensors and instructions; attributes are encoded generically.
#include "codegen/mlir/PlanWriter.h"

#include <cstring>
#include <functional>

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace plait {

std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
            std::to_string(file.getColumn()));
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return locationName(fused.getLocations().front());
  if (auto callsite = dyn_cast<CallSiteLoc>(loc))
    return locationName(callsite.getCallee());
  return "";
}

namespace {

FailureOr<fb::DType> toDType(Type element) {
  if (element.isF32()) return fb::DType::F32;
  if (element.isF64()) return fb::DType::F64;
  if (element.isBF16()) return fb::DType::BF16;
  if (element.isF16()) return fb::DType::F16;
  if (auto integer = dyn_cast<IntegerType>(element)) {
    // i8/i16/i32/i64 are signless in the dialect and signed in the runtime; ui* unsigned.
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return fb::DType::I1;
    case 8: return isUnsigned ? fb::DType::U8 : fb::DType::I8;
    case 16: return isUnsigned ? fb::DType::U16 : fb::DType::I16;
    case 32: return isUnsigned ? fb::DType::U32 : fb::DType::I32;
    case 64: return isUnsigned ? fb::DType::U64 : fb::DType::I64;
    default: break;
    }
  }
  return failure();
}

template <typename T> void appendLE(std::vector<uint8_t> &out, T v) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

/// Row-major little-endian bytes of `attr` in the runtime's layout (i1: one byte each).
FailureOr<std::vector<uint8_t>> elementBytes(Operation *op, ElementsAttr attr) {
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return op->emitOpError("holds a non-dense elements attribute; only dense data is supported");
  Type element = dense.getElementType();
  std::vector<uint8_t> out;
  out.reserve(tensorBytes(cast<RankedTensorType>(dense.getType())));
  // Widths of 8, 16, 32 and 64 bits are stored as the runtime stores them (little-endian,
  // row-major): copy the raw bytes, repeating a splat's one element (a causal mask of a
  // 2,048-token model is 4M elements: element by element took a tenth of a second).
  unsigned bits = element.getIntOrFloatBitWidth();
  if ((bits == 8 || bits == 16 || bits == 32 || bits == 64) && llvm::sys::IsLittleEndianHost) {
    ArrayRef<char> raw = dense.getRawData();
    size_t size = bits / 8;
    if (dense.isSplat()) {
      int64_t n = dense.getNumElements();
      out.resize(size_t(n) * size);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(out.data() + size_t(i) * size, raw.data(), size);
    } else {
      out.assign(raw.begin(), raw.end());
    }
    return out;
  }
  if (bits == 1) {
    if (dense.isSplat()) {
      out.assign(size_t(dense.getNumElements()), dense.getSplatValue<bool>() ? 1 : 0);
    } else {
      for (bool v : dense.getValues<bool>())
        out.push_back(v ? 1 : 0);
    }
    return out;
  }
  if (auto floatType = dyn_cast<FloatType>(element)) {
    unsigned width = floatType.getWidth();
    for (const APFloat &v : dense.getValues<APFloat>()) {
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      if (width == 32) appendLE<uint32_t>(out, (uint32_t)bits);
      else if (width == 64) appendLE<uint64_t>(out, bits);
      else appendLE<uint16_t>(out, (uint16_t)bits);
    }
    return out;
  }
  unsigned width = element.getIntOrFloatBitWidth();
  for (const APInt &v : dense.getValues<APInt>()) {
    uint64_t word = v.getZExtValue(); // the low `width` bits, whatever the signedness
    if (width == 1) out.push_back(v.getBoolValue() ? 1 : 0);
    else if (width == 8) out.push_back(uint8_t(word));
    else if (width == 16) appendLE<uint16_t>(out, uint16_t(word));
    else if (width == 32) appendLE<uint32_t>(out, uint32_t(word));
    else appendLE<uint64_t>(out, word);
  }
  return out;
}

/// Encodes one op attribute; returns false for attributes the runtime has no use for.
FailureOr<bool> encodeAttr(Operation *op, NamedAttribute named, plan::AttrDesc &out) {
  out.name = named.getName().str();
  Attribute attr = named.getValue();
  if (auto b = dyn_cast<BoolAttr>(attr)) {
    out.ints = {b.getValue() ? 1 : 0};
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    out.ints = {i.getInt()};
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    out.floats = {f.getValueAsDouble()};
  } else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.ints.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<DenseF64ArrayAttr>(attr)) {
    out.floats.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    out.str = s.str();
  } else {
    return op->emitOpError("attribute '") << out.name << "' cannot be encoded in a plan";
  }
  return true;
}

} // namespace

/// A Shard for the plan from a param_shard's attributes or a sharded state's layout (whose
/// pieces carry no values: optimizer state starts as zeros).
static LogicalResult decodeShard(Operation *op, const std::string &unit, ArrayAttr groups,
                                 int64_t paddedNumel, ArrayAttr pieces,
                                 plan::ShardDesc &desc) {
  desc.unit = unit;
  RankGroupList list = groupsOf(groups);
  if (list.empty())
    return op->emitOpError("has no rank groups");
  for (const auto &group : list)
    desc.groups.insert(desc.groups.end(), group.begin(), group.end());
  desc.groupSize = list.front().size();
  desc.paddedNumel = paddedNumel;
  for (Attribute attr : pieces) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
    auto shapeAttr = dict ? dict.getAs<DenseI64ArrayAttr>("shape") : DenseI64ArrayAttr();
    auto offset = dict ? dict.getAs<IntegerAttr>("offset") : IntegerAttr();
    if (!name || !shapeAttr || !offset)
      return op->emitOpError("has a shard piece without name, shape or offset");
    plan::ShardPieceDesc piece;
    piece.name = name.str();
    auto shape = shapeAttr.asArrayRef();
    piece.shape.assign(shape.begin(), shape.end());
    piece.offset = offset.getInt();
    piece.numel = 1;
    for (int64_t d : shape)
      piece.numel *= d;
    if (auto value = dict.getAs<ElementsAttr>("value")) {
      auto bytes = elementBytes(op, value);
      if (failed(bytes))
        return failure();
      piece.data = std::move(*bytes);
    } else if (auto init = dict.getAs<StringAttr>("init")) {
      piece.init = init.str();
    }
    desc.pieces.push_back(std::move(piece));
  }
  return success();
}

LogicalResult lowerToPlan(func::FuncOp func, const MemoryPlan &memory, plan::PlanDesc &plan,
                          bool names) {
  // Tensors, one per planned buffer, in definition order.
  llvm::DenseMap<Value, uint32_t> tensorOf;
  tensorOf.reserve(unsigned(memory.buffers.size()));
  plan.tensors.reserve(memory.buffers.size());
  plan.instrs.reserve(func.getBody().front().getOperations().size());
  for (const PlannedBuffer &b : memory.buffers) {
    auto type = cast<RankedTensorType>(b.value.getType());
    plan::TensorDesc t;
    auto dtype = toDType(type.getElementType());
    if (failed(dtype))
      return emitError(b.value.getLoc()) << "element type " << type.getElementType()
                                         << " has no runtime representation";
    t.dtype = *dtype;
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    t.offset = b.offset;
    if (auto arg = dyn_cast<BlockArgument>(b.value)) {
      t.kind = fb::TensorKind::Input;
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "plait.name");
      t.name = name ? name.str() : "input" + std::to_string(arg.getArgNumber());
    } else if (auto param = b.value.getDefiningOp<ParamOp>()) {
      t.kind = fb::TensorKind::Param;
      t.name = param.getName().str();
      if (!names) {
        // Screening: sized and timed, never run; no initial values.
      } else if (auto value = param.getValueAttr()) {
        auto bytes = elementBytes(param, value);
        if (failed(bytes))
          return failure();
        t.data = std::move(*bytes);
      } else {
        t.init = param.getInit()->str();
      }
    } else if (auto shard = b.value.getDefiningOp<ParamShardOp>()) {
      t.kind = fb::TensorKind::Param;
      t.name = shard.getUnit().str();
      if (names && failed(decodeShard(shard, t.name, shard.getGroups(), shard.getPaddedNumel(),
                             shard.getPieces(), t.shard)))
        return failure();
    } else if (auto state = b.value.getDefiningOp<StateOp>()) {
      t.kind = fb::TensorKind::State;
      t.name = state.getName().str();
      if (auto layout = state->getAttrOfType<DictionaryAttr>(kStateLayoutAttr); layout && names) {
        auto unit = layout.getAs<StringAttr>("unit");
        auto groups = layout.getAs<ArrayAttr>("groups");
        auto padded = layout.getAs<IntegerAttr>("padded_numel");
        auto pieces = layout.getAs<ArrayAttr>("pieces");
        if (!unit || !groups || !padded || !pieces)
          return state.emitOpError("has a malformed '") << kStateLayoutAttr << "' attribute";
        if (failed(decodeShard(state, unit.str(), groups, padded.getInt(), pieces, t.shard)))
          return failure();
      }
    } else if (auto hyper = b.value.getDefiningOp<HyperOp>()) {
      t.kind = fb::TensorKind::Hyper;
      t.name = hyper.getName().str();
    } else if (auto constant = b.value.getDefiningOp<ConstantOp>()) {
      t.kind = fb::TensorKind::Constant;
      t.name = "constant" + std::to_string(plan.tensors.size());
      if (names) {
        auto bytes = elementBytes(constant, constant.getValue());
        if (failed(bytes))
          return failure();
        t.data = std::move(*bytes);
      }
    } else if (!names) {
      t.kind = fb::TensorKind::Activation;
    } else {
      t.kind = fb::TensorKind::Activation;
      Operation *def = b.value.getDefiningOp();
      std::string base = locationName(def->getLoc());
      if (base.empty())
        base = def->getName().stripDialect().str();
      unsigned resultNo = cast<OpResult>(b.value).getResultNumber();
      t.name = def->getNumResults() > 1 ? base + ":" + std::to_string(resultNo) : base;
    }
    tensorOf[b.value] = plan.tensors.size();
    plan.tensors.push_back(std::move(t));
  }

  // Instructions, one per compute op, in program order.
  llvm::DenseMap<Operation *, uint32_t> instrOf;
  bool seenAssign = false;
  for (Operation &op : func.getBody().front()) {
    if (isa<ParamOp, ParamShardOp, ConstantOp, StateOp, HyperOp>(op))
      continue;
    if (isa<UnshardOp, SyncGradOp>(op))
      return op.emitOpError("is a placement-level op with no runtime kernel; run "
                            "plait-insert-collectives first");
    if (auto assign = dyn_cast<AssignOp>(op)) {
      uint32_t source = tensorOf.lookup(assign.getValue());
      uint32_t target = tensorOf.lookup(assign.getTarget());
      // A value the memory plan put inside its target is already there: nothing to copy.
      if (plan.tensors[source].offset != plan.tensors[target].offset)
        plan.updates.push_back({source, target});
      seenAssign = true;
      continue;
    }
    // Updates are copied after the last instruction, so a compute op after an assign
    // would see values the memory plan considers dead.
    if (seenAssign && !isa<func::ReturnOp>(op))
      return op.emitOpError("follows a plait.assign; assigns must end the step");
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        uint32_t t = tensorOf.lookup(v);
        plan.outputs.push_back(t);
        auto name = func.getResultAttrOfType<StringAttr>(i, "plait.name");
        plan.outputNames.push_back(name ? name.str() : "output" + std::to_string(i));
        if (name && plan.tensors[t].kind == fb::TensorKind::Activation)
          plan.tensors[t].name = name.str(); // messages then name the value as the user does
      }
      continue;
    }
    if (op.getDialect() == nullptr || !isa<PlaitDialect>(op.getDialect()))
      return op.emitOpError("has no runtime kernel (only plait ops can be planned)");
    // A reshape the memory plan put in its operand's bytes moves nothing: no instruction.
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      auto x = memory.index.find(reshape.getX()), y = memory.index.find(reshape.getResult());
      if (x != memory.index.end() && y != memory.index.end()) {
        int64_t home = memory.buffers[x->second].aliasOf >= 0 ? memory.buffers[x->second].aliasOf
                                                               : int64_t(x->second);
        if (memory.buffers[y->second].aliasOf == home)
          continue;
      }
    }
    plan::InstrDesc instr;
    instr.kernel = op.getName().stripDialect().str();
    if (names)
      instr.name = locationName(op.getLoc());
    for (Value v : op.getOperands())
      instr.inputs.push_back(tensorOf.lookup(v));
    for (Value v : op.getResults())
      instr.outputs.push_back(tensorOf.lookup(v));
    for (NamedAttribute named : op.getAttrDictionary()) {
      plan::AttrDesc attr;
      if (named.getName() == "groups") { // rank lists: flat, group-major, plus group_size
        RankGroupList groups = groupsOf(cast<ArrayAttr>(named.getValue()));
        attr.name = "groups";
        for (const auto &group : groups)
          attr.ints.insert(attr.ints.end(), group.begin(), group.end());
        instr.attrs.push_back(std::move(attr));
        instr.attrs.push_back({"group_size", {(int64_t)groups.front().size()}, {}, ""});
        continue;
      }
      auto keep = encodeAttr(&op, named, attr);
      if (failed(keep))
        return failure();
      if (*keep)
        instr.attrs.push_back(std::move(attr));
    }
    // The scratch its runtime kernel takes per call, sized by the runtime's own rule.
    instr.workspace = plan::workspaceBytesOf(plan, instr);
    instrOf[&op] = plan.instrs.size();
    plan.instrs.push_back(std::move(instr));
  }
  // A collective completes before its first user; one read only by the return or an assign
  // completes at the end of the step.
  // (A reshape without an instruction passes the wait on to its own users.)
  std::function<void(Operation *, std::optional<uint32_t> &)> firstReader =
      [&](Operation *op, std::optional<uint32_t> &first) {
        for (Operation *user : op->getUsers()) {
          if (auto it = instrOf.find(user); it != instrOf.end())
            first = std::min(first.value_or(it->second), it->second);
          else if (isa<ReshapeOp>(user))
            firstReader(user, first);
        }
      };
  // A reduce-scatter also completes before a later one starts (nextReduceScatters).
  llvm::DenseMap<Operation *, Operation *> nextReduceScatter =
      nextReduceScatters(func.getBody().front());
  for (Operation &op : func.getBody().front()) {
    if (!isCollective(&op))
      continue;
    std::optional<uint32_t> first;
    firstReader(&op, first);
    if (Operation *next = nextReduceScatter.lookup(&op))
      first = std::min(first.value_or(instrOf.lookup(next)), instrOf.lookup(next));
    if (first)
      plan.instrs[*first].waits.push_back(instrOf.lookup(&op));
  }
  for (BlockArgument arg : func.getArguments())
    plan.inputs.push_back(tensorOf.lookup(arg));
  // SPMD: every rank runs the same instructions on the same arena layout.
  plan.worldSize = worldSizeOf(func);
  plan.arenaBytes.assign(plan.worldSize, (uint64_t)memory.arenaBytes);
  uint64_t workspace = 0;
  for (const plan::InstrDesc &instr : plan.instrs)
    workspace = std::max(workspace, instr.workspace);
  plan.workspaceBytes.assign(plan.worldSize, workspace);
  plan.peakBytes.assign(plan.worldSize, plan::peakBytesOf(plan));
  plan.training = seenAssign;
  if (auto module = func->getParentOfType<ModuleOp>())
    if (auto schedule = module->getAttrOfType<DictionaryAttr>("plait.lr_schedule")) {
      auto kind = dyn_cast_or_null<StringAttr>(schedule.get("kind"));
      auto lr = dyn_cast_or_null<FloatAttr>(schedule.get("lr"));
      auto minLr = dyn_cast_or_null<FloatAttr>(schedule.get("min_lr"));
      auto warmup = dyn_cast_or_null<IntegerAttr>(schedule.get("warmup_steps"));
      auto total = dyn_cast_or_null<IntegerAttr>(schedule.get("total_steps"));
      if (!kind || !lr || !minLr || !warmup || !total)
        return module.emitError("plait.lr_schedule needs kind, lr, min_lr, warmup_steps and "
                                "total_steps");
      plan.schedule = {kind.str(), lr.getValueAsDouble(), warmup.getInt(), total.getInt(),
                       minLr.getValueAsDouble()};
      // The parameters of the later kinds, absent from the schedules of the first three
      // (which keep the struct's defaults).
      auto readFloat = [&](const char *key, double &field) {
        if (auto v = dyn_cast_or_null<FloatAttr>(schedule.get(key)))
          field = v.getValueAsDouble();
      };
      auto readInt = [&](const char *key, int64_t &field) {
        if (auto v = dyn_cast_or_null<IntegerAttr>(schedule.get(key)))
          field = v.getInt();
      };
      readFloat("gamma", plan.schedule.gamma);
      readFloat("power", plan.schedule.power);
      readInt("step_size", plan.schedule.stepSize);
      readInt("decay_steps", plan.schedule.decaySteps);
      readInt("cycle_steps", plan.schedule.cycleSteps);
      readInt("cycle_mult", plan.schedule.cycleMult);
      readFloat("pct_start", plan.schedule.pctStart);
      readFloat("div_factor", plan.schedule.divFactor);
      readFloat("final_div_factor", plan.schedule.finalDivFactor);
      readInt("step_size_down", plan.schedule.stepSizeDown);
      readInt("patience", plan.schedule.patience);
      readFloat("threshold", plan.schedule.threshold);
      readInt("cooldown", plan.schedule.cooldown);
      readFloat("eps", plan.schedule.eps);
      readInt("plateau_steps", plan.schedule.plateauSteps);
      if (auto v = dyn_cast_or_null<BoolAttr>(schedule.get("threshold_abs")))
        plan.schedule.thresholdAbs = v.getValue();
      if (auto v = dyn_cast_or_null<BoolAttr>(schedule.get("anneal_linear")))
        plan.schedule.annealLinear = v.getValue();
      if (auto v = dyn_cast_or_null<BoolAttr>(schedule.get("three_phase")))
        plan.schedule.threePhase = v.getValue();
      if (auto v = dyn_cast_or_null<StringAttr>(schedule.get("cyclic_mode")))
        plan.schedule.cyclicMode = v.str();
      if (auto milestones = dyn_cast_or_null<DenseI64ArrayAttr>(schedule.get("milestones")))
        plan.schedule.milestones.assign(milestones.asArrayRef().begin(),
                                        milestones.asArrayRef().end());
    }
  return success();
}

} // namespace plait
