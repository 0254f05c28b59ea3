// The instruction loop. Offsets come from the compiler's memory plan and were range-checked
// by the loader; tensors may overlap in time, and the executor trusts that plan.
#include "runtime/Executor.h"
#include "runtime/PlanInit.h"
#include "runtime/RunActivity.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "runtime/Trace.h"

namespace plait::rt {

Status Executor::create(const Plan &plan, const ExecutorOptions &options,
                        std::unique_ptr<Executor> &out) {
  if (options.rank >= plan.worldSize)
    return Status::errorf("{}: rank {} out of range (world size {})", plan.path, options.rank,
                          plan.worldSize);
  std::unique_ptr<Executor> exec(new Executor(plan, options));
  exec->comm_ = options.comm;
  if (!exec->comm_) {
    exec->ownComm_ = makeLocalComm(options.rank, plan.worldSize);
    exec->comm_ = exec->ownComm_.get();
  }
  if (exec->comm_->rank() != options.rank || exec->comm_->size() != plan.worldSize)
    return Status::errorf("{}: the communicator is rank {} of {}, the plan runs as rank {} of "
                          "world size {}",
                          plan.path, exec->comm_->rank(), exec->comm_->size(), options.rank,
                          plan.worldSize);
  Status allocated = Arena::allocate(plan.arenaBytes[options.rank], exec->arena_);
  if (!allocated.ok())
    return allocated.withPrefix(fmt::format("{}: rank {}: ", plan.path, options.rank));
  allocated = Arena::allocate(plan.workspaceBytes[options.rank], exec->workspace_, "workspace");
  if (!allocated.ok())
    return allocated.withPrefix(fmt::format("{}: rank {}: ", plan.path, options.rank));

  exec->bound_.resize(plan.instrs.size());
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const PlanInstr &in = plan.instrs[i];
    BoundInstr &b = exec->bound_[i];
    for (uint32_t t : in.inputs)
      b.inputs.push_back(exec->view(t));
    for (uint32_t t : in.outputs)
      b.outputs.push_back(exec->view(t));
    for (const auto *list : {&in.inputs, &in.outputs})
      for (uint32_t t : *list)
        b.arenaEnd = std::max(b.arenaEnd, plan.tensors[t].offset + plan.tensors[t].bytes);
  }
  // At most every collective is in flight at once: reserved here, not grown during a step.
  uint32_t collectives = 0;
  for (const PlanInstr &in : plan.instrs)
    collectives += in.isCollective;
  exec->inFlight_.reserve(collectives);
  exec->comm_->reserveRequests(collectives);
  exec->inputSet_.assign(plan.inputs.size(), false);
  for (uint32_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].kind == TensorKind::Hyper)
      exec->hyperTensors_.push_back(t);
  PLAIT_RETURN_IF_ERROR(exec->createGroups());
  exec->generated_ = loadGeneratedKernels(plan);
  PLAIT_RETURN_IF_ERROR(exec->initialiseParamsAndConstants());
  out = std::move(exec);
  return {};
}

// One communicator per distinct partition, created in plan order (collectives, then sharded
// params) so that every rank makes the same collective calls in the same order; the shard
// groups' are made here for gatherShards (the communicator keeps them), whose gathers then
// create none mid-run.
Status Executor::createGroups() {
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    const PlanInstr &in = plan_.instrs[i];
    if (!in.isCollective)
      continue;
    BoundInstr &b = bound_[i];
    uint32_t group, index;
    b.member = in.collective.groups.locate(options_.rank, group, index);
    Status s = comm_->group(in.collective.groups, b.group);
    if (!s.ok())
      return s.withPrefix(where(i));
  }
  for (uint32_t t = 0; t < plan_.tensors.size(); ++t) {
    if (!plan_.tensors[t].sharded)
      continue;
    CommGroup group = 0;
    Status s = comm_->group(plan_.tensors[t].shard.groups, group);
    if (!s.ok())
      return s.withPrefix(fmt::format("{}: tensor {} ('{}'): ", plan_.path, t,
                                      printable(plan_.tensors[t].name)));
  }
  return {};
}

Status Executor::initialiseParamsAndConstants() {
  for (uint32_t i = 0; i < plan_.tensors.size(); ++i) {
    const PlanTensor &t = plan_.tensors[i];
    // Optimizer state starts as zeros, like PyTorch's: the fresh arena's pages already are,
    // and leaving them untouched keeps them out of RSS until the first update.
    if (t.kind != TensorKind::Param && t.kind != TensorKind::Constant)
      continue;
    PLAIT_RETURN_IF_ERROR(
        initialTensorBytes(plan_, i, options_.rank, options_.seed, arena_.data() + t.offset));
  }
  return {};
}

Status Executor::gatherParam(uint32_t tensor, std::vector<uint8_t> &out) {
  return gatherShards(*this, *comm_, tensor, out);
}

TensorView Executor::view(uint32_t tensor) const {
  const PlanTensor &t = plan_.tensors[tensor];
  TensorView v;
  v.data = arena_.data() + t.offset;
  v.dtype = t.dtype;
  v.shape = t.shape;
  return v;
}

Status Executor::setInput(size_t index, const TensorView &value) {
  return setInput(index, value.dtype, value.shape, value.data);
}

Status Executor::setInput(size_t index, DType dtype, const std::vector<int64_t> &shape,
                          const void *data) {
  if (index >= plan_.inputs.size())
    return Status::errorf("{}: input index {} out of range ({} inputs)", plan_.path, index,
                          plan_.inputs.size());
  const PlanTensor &t = plan_.tensors[plan_.inputs[index]];
  if (dtype != t.dtype || shape != t.shape)
    return Status::errorf("{}: input '{}': expected {} {}, got {} {}", plan_.path,
                          printable(t.name), dtypeName(t.dtype), shapeString(t.shape),
                          dtypeName(dtype), shapeString(shape));
  if (t.bytes != 0) // an empty tensor's data may be a null pointer
    std::memcpy(arena_.data() + t.offset, data, t.bytes);
  touch(plan_.inputs[index]);
  inputSet_[index] = true;
  return {};
}

std::string Executor::where(size_t i) const {
  const PlanInstr &in = plan_.instrs[i];
  return fmt::format("{}: instruction {} ('{}', kernel {}): ", plan_.path, i,
                     printable(in.name), printable(plan_.kernels[in.kernel]));
}

Status Executor::runInstr(size_t i) {
  const PlanInstr &in = plan_.instrs[i];
  if (!in.waits.empty()) {
    ScopedTraceEvent waiting(trace_, TraceKind::Wait, int64_t(i));
    for (uint32_t w : in.waits)
      PLAIT_RETURN_IF_ERROR(completeCollective(w));
  }
  ScopedTraceEvent running(trace_, TraceKind::Instruction, int64_t(i));
  if (in.isCollective)
    return startCollective(i);
  BoundInstr &b = bound_[i];
  touched_ = std::max(touched_, b.arenaEnd);
  uint64_t used = 0;
  KernelCall call{b.inputs,        b.outputs,         in.attrs,          options_.rank,
                  plan_.worldSize, workspace_.data(), workspace_.size(), &used,
                  generated_.byInstr[i]};
  try {
    Status s = in.fn(call);
    stepWorkspaceHighWater_ = std::max(stepWorkspaceHighWater_, used);
    if (!s.ok())
      return s.withPrefix(where(i)); // formatted only on failure: this is the hot path
  } catch (const std::exception &e) {
    // Kernels report errors through Status; an exception is a kernel bug or OOM.
    return Status::internal(where(i) + "kernel threw: " + e.what());
  }
  return {};
}

Status Executor::startCollective(size_t i) {
  BoundInstr &b = bound_[i];
  if (!b.member) // a rank in no group skips the instruction; its output stays as it was
    return {};
  touched_ = std::max(touched_, b.arenaEnd);
  const CollectiveSpec &spec = plan_.instrs[i].collective;
  const TensorView &x = b.inputs[0], &y = b.outputs[0];
  // In place on the output for broadcast: the root sends it, the others overwrite it.
  if (spec.kind == CollectiveKind::Broadcast && x.data != y.data && y.bytes() != 0)
    std::memmove(y.data, x.data, y.bytes());
  uint64_t fullBytes = 0; // the buffer the ring model counts (CommModel.h)
  CollectiveArgs args = collectiveArgsOf(spec.kind, spec.root, x, y, fullBytes);
  Status s = comm_->start(b.group, args, b.request);
  if (!s.ok())
    return s.withPrefix(where(i));
  b.inFlight = true;
  inFlight_.push_back(i);
  stepCommBytes_.add(spec.kind, fullBytes, spec.groups.groupSize);
  if (trace_)
    trace_->collectiveStarted(uint32_t(i), fullBytes);
  return {};
}

namespace {

// A mean is the completed sum divided by the group size, in the tensor's own precision
// (16-bit floats through f32, as their kernels compute).
void divideInPlace(const TensorView &t, uint32_t divisor) {
  // The count and the pointer taken once, so that the loops vectorise: a gradient bucket's
  // mean is on the step's critical path, right after its all-reduce completes.
  const int64_t n = t.numel();
  switch (t.dtype) {
  case DType::F32: {
    float *p = t.as<float>();
    const float d = float(divisor);
    for (int64_t i = 0; i < n; ++i)
      p[i] = p[i] / d;
    break;
  }
  case DType::F64: {
    double *p = t.as<double>();
    const double d = double(divisor);
    for (int64_t i = 0; i < n; ++i)
      p[i] = p[i] / d;
    break;
  }
  case DType::BF16: {
    uint16_t *p = t.as<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = floatToBf16(bf16ToFloat(p[i]) / float(divisor));
    break;
  }
  case DType::F16: {
    uint16_t *p = t.as<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = floatToF16(f16ToFloat(p[i]) / float(divisor));
    break;
  }
  default: // the loader allows means of float tensors only
    break;
  }
}

} // namespace

Status Executor::completeCollective(size_t i) {
  BoundInstr &b = bound_[i];
  if (!b.inFlight) // a rank in no group started nothing
    return {};
  activity::setWaiting(int64_t(i));
  Status s = comm_->wait(b.request);
  activity::setWaiting(-1);
  if (!s.ok())
    return s.withPrefix(where(i));
  if (trace_)
    trace_->collectiveCompleted(uint32_t(i));
  b.inFlight = false;
  inFlight_.erase(std::find(inFlight_.begin(), inFlight_.end(), i));
  const CollectiveSpec &spec = plan_.instrs[i].collective;
  if (spec.mean && spec.groups.groupSize > 1)
    divideInPlace(b.outputs[0], spec.groups.groupSize);
  return {};
}

Status Executor::run() {
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (!inputSet_[i])
      return Status::errorf("{}: input '{}' was not set before the run", plan_.path,
                            printable(plan_.tensors[plan_.inputs[i]].name));
  if (!inFlight_.empty()) // a failed step left them; their buffers cannot be trusted
    return Status::internal(fmt::format("{}: a previous step failed with collectives in "
                                        "flight", plan_.path));
  stepCommBytes_ = {};
  stepWorkspaceHighWater_ = 0;
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    PLAIT_RETURN_IF_ERROR(runInstr(i));
    ++instructionsRun_;
    // Non-blocking collectives advance only inside MPI calls: poll between kernels so that
    // they progress while the next kernels compute.
    if (!inFlight_.empty()) {
      Status polled = comm_->poll();
      if (!polled.ok())
        return polled.withPrefix(where(i));
    }
  }
  // Collectives nobody waited for complete here, before the updates may read them.
  if (!inFlight_.empty()) {
    ScopedTraceEvent waiting(trace_, TraceKind::StepEndWait);
    while (!inFlight_.empty())
      PLAIT_RETURN_IF_ERROR(completeCollective(inFlight_.front()));
  }
  // New weights and optimizer state become visible only after the whole step ran.
  ScopedTraceEvent updating(plan_.updates.empty() ? nullptr : trace_, TraceKind::Updates);
  for (const PlanUpdate &u : plan_.updates) {
    std::memcpy(arena_.data() + plan_.tensors[u.target].offset,
                arena_.data() + plan_.tensors[u.source].offset, plan_.tensors[u.target].bytes);
    touch(u.source);
    touch(u.target);
  }
  inputSet_.assign(plan_.inputs.size(), false);
  // The next step's high water starts with its own inputs and hyper-parameters.
  stepArenaHighWater_ = touched_;
  touched_ = 0;
  return {};
}

void Executor::setHyperParameters(int64_t step, double lr, double prevLr) {
  for (uint32_t i : hyperTensors_) {
    const PlanTensor &t = plan_.tensors[i];
    writeHyperParameter(t,
                        t.name == "lr"        ? lr
                        : t.name == "prev_lr" ? prevLr
                                              : double(step),
                        arena_.data() + t.offset);
    touch(i);
  }
}

} // namespace plait::rt
