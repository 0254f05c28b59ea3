// The instruction loop. Offsets come from the compiler's memory plan and were range-checked
// by the loader; tensors may overlap in time, and the executor trusts that plan.
#include "runtime/Executor.h"

#include <cstring>
#include <exception>

namespace plait::rt {

Status Executor::create(const Plan &plan, const ExecutorOptions &options,
                        std::unique_ptr<Executor> &out) {
  if (options.rank >= plan.worldSize)
    return Status::errorf("{}: rank {} out of range (world size {})", plan.path, options.rank,
                          plan.worldSize);
  std::unique_ptr<Executor> exec(new Executor(plan, options));
  Status allocated = Arena::allocate(plan.arenaBytes[options.rank], exec->arena_);
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
  }
  exec->inputSet_.assign(plan.inputs.size(), false);
  for (uint32_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].kind == TensorKind::Hyper)
      exec->hyperTensors_.push_back(t);
  PLAIT_RETURN_IF_ERROR(exec->initialiseParamsAndConstants());
  out = std::move(exec);
  return {};
}

Status Executor::initialiseParamsAndConstants() {
  for (uint32_t i = 0; i < plan_.tensors.size(); ++i) {
    const PlanTensor &t = plan_.tensors[i];
    uint8_t *dst = arena_.data() + t.offset;
    if (t.kind == TensorKind::State) { // optimizer state starts as zeros, like PyTorch's
      std::memset(dst, 0, t.bytes);
      continue;
    }
    if (t.kind != TensorKind::Param && t.kind != TensorKind::Constant)
      continue;
    if (t.data >= 0) {
      if (t.bytes != 0) // an empty tensor's source may be a null pointer
        std::memcpy(dst, plan_.bufferData(t.data), t.bytes);
      continue;
    }
    Status filled = fillParam(t.init, t.dtype, t.numel(), dst, options_.seed, t.name);
    if (!filled.ok())
      return filled.withPrefix(
          fmt::format("{}: tensor {} ('{}'): ", plan_.path, i, printable(t.name)));
  }
  return {};
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
  if (index >= plan_.inputs.size())
    return Status::errorf("{}: input index {} out of range ({} inputs)", plan_.path, index,
                          plan_.inputs.size());
  const PlanTensor &t = plan_.tensors[plan_.inputs[index]];
  if (value.dtype != t.dtype || value.shape != t.shape)
    return Status::errorf("{}: input '{}': expected {} {}, got {} {}", plan_.path,
                          printable(t.name),
                          dtypeName(t.dtype), shapeString(t.shape), dtypeName(value.dtype),
                          shapeString(value.shape));
  if (t.bytes != 0) // an empty tensor's data may be a null pointer
    std::memcpy(arena_.data() + t.offset, value.data, t.bytes);
  inputSet_[index] = true;
  return {};
}

Status Executor::runInstr(size_t i) {
  const PlanInstr &in = plan_.instrs[i];
  BoundInstr &b = bound_[i];
  KernelCall call{b.inputs, b.outputs, in.attrs};
  // Formatted only on failure: this is the hot path.
  auto where = [&] {
    return fmt::format("{}: instruction {} ('{}', kernel {}): ", plan_.path, i,
                       printable(in.name), printable(plan_.kernels[in.kernel]));
  };
  try {
    Status s = in.fn(call);
    if (!s.ok())
      return s.withPrefix(where());
  } catch (const std::exception &e) {
    // Kernels report errors through Status; an exception is a kernel bug or OOM.
    return Status::internal(where() + "kernel threw: " + e.what());
  }
  return {};
}

Status Executor::run() {
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (!inputSet_[i])
      return Status::errorf("{}: input '{}' was not set before the run", plan_.path,
                            printable(plan_.tensors[plan_.inputs[i]].name));
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    PLAIT_RETURN_IF_ERROR(runInstr(i));
    ++instructionsRun_;
  }
  // New weights and optimizer state become visible only after the whole step ran.
  for (const PlanUpdate &u : plan_.updates)
    std::memcpy(arena_.data() + plan_.tensors[u.target].offset,
                arena_.data() + plan_.tensors[u.source].offset, plan_.tensors[u.target].bytes);
  inputSet_.assign(plan_.inputs.size(), false);
  return {};
}

void Executor::setHyperParameters(int64_t step, double lr) {
  for (uint32_t i : hyperTensors_) {
    const PlanTensor &t = plan_.tensors[i];
    float value = t.name == "lr" ? static_cast<float>(lr) : static_cast<float>(step);
    std::memcpy(arena_.data() + t.offset, &value, sizeof value);
  }
}

} // namespace plait::rt
