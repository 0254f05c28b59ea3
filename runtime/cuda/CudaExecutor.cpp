// The CUDA instruction loop (CudaExecutor.h). Offsets come from the compiler's memory plan and
// were range-checked by the loader, as for the CPU executor.
// Run on an H200 by tests/gpu/run.sh (every sample's CUDA plan against the CPU backend).
#include "runtime/cuda/CudaExecutor.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "runtime/PlanInit.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/NcclComm.h"
#include "runtime/cuda/kernels/Launch.h"

namespace plait::rt {

namespace {

/// Device allocations are aligned far beyond what any view needs (cudaMalloc: 256 bytes);
/// the workspace is rounded to that too.
constexpr uint64_t kAlign = 256;

} // namespace

Status CudaExecutor::create(const Plan &plan, const CudaExecutorOptions &options,
                            std::unique_ptr<CudaExecutor> &out) {
  if (plan.device != "cuda")
    return Status::errorf("{}: compiled for --device {}, not cuda", plan.path, plan.device);
  if (options.rank >= plan.worldSize)
    return Status::errorf("{}: rank {} out of range (world size {})", plan.path, options.rank,
                          plan.worldSize);
  std::unique_ptr<CudaExecutor> exec(new CudaExecutor(plan, options));
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
  std::string prefix = fmt::format("{}: rank {}: ", plan.path, options.rank);
  // Binding first: a plan with an op this backend cannot run fails before any allocation.
  PLAIT_RETURN_IF_ERROR(exec->bindInstructions());
  PLAIT_RETURN_IF_ERROR(exec->selectDevice().withPrefix(prefix));
  PLAIT_RETURN_IF_ERROR(exec->checkInstructions());
  PLAIT_RETURN_IF_ERROR(exec->allocate().withPrefix(prefix));
  PLAIT_RETURN_IF_ERROR(exec->loadGeneratedKernels().withPrefix(prefix));
  PLAIT_RETURN_IF_ERROR(exec->createCommunicators());
  PLAIT_RETURN_IF_ERROR(exec->initialiseParamsAndConstants());
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(exec->compute_));
  out = std::move(exec);
  return {};
}

CudaExecutor::CudaExecutor(const Plan &plan, const CudaExecutorOptions &options)
    : plan_(plan), options_(options) {}

Status CudaExecutor::checkPlan(const Plan &plan, uint32_t rank) {
  if (rank >= plan.worldSize)
    return Status::errorf("{}: rank {} out of range (world size {})", plan.path, rank,
                          plan.worldSize);
  CudaExecutorOptions options;
  options.rank = rank;
  std::unique_ptr<CudaExecutor> exec(new CudaExecutor(plan, options));
  PLAIT_RETURN_IF_ERROR(exec->bindInstructions());
  return exec->checkInstructions();
}

CudaExecutor::~CudaExecutor() {
  // Nothing can be reported from here: errors are dropped, resources released in reverse.
  if (compute_)
    (void)cudaStreamSynchronize(compute_);
  if (comm_stream_)
    (void)cudaStreamSynchronize(comm_stream_);
  nccl_.reset();
  for (BoundInstr &b : bound_) {
    if (b.ready)
      (void)cudaEventDestroy(b.ready);
    if (b.done)
      (void)cudaEventDestroy(b.done);
    b.cache.reset(); // cuBLASLt / cuDNN descriptors, before their handles go
  }
  if (graph_)
    (void)cudaGraphExecDestroy(graph_);
  for (cudaEvent_t e : timingEvents_)
    (void)cudaEventDestroy(e);
  if (stepDone_)
    (void)cudaEventDestroy(stepDone_);
  module_.reset();
  libraries_.reset();
  context_.reset();
  if (deviceError_)
    (void)cudaFree(deviceError_);
  if (workspace_)
    (void)cudaFree(workspace_);
  if (arena_)
    (void)cudaFree(arena_);
  if (comm_stream_)
    (void)cudaStreamDestroy(comm_stream_);
  if (compute_)
    (void)cudaStreamDestroy(compute_);
}

std::string CudaExecutor::where(size_t i) const {
  const PlanInstr &in = plan_.instrs[i];
  return fmt::format("{}: instruction {} ('{}', kernel {}): ", plan_.path, i,
                     printable(in.name), printable(plan_.kernels[in.kernel]));
}

Status CudaExecutor::bindInstructions() {
  bound_.resize(plan_.instrs.size());
  hyperValues_.assign(plan_.tensors.size(), 0.0);
  hyperBytes_.assign(plan_.tensors.size(), 0);
  for (uint32_t t = 0; t < plan_.tensors.size(); ++t)
    if (plan_.tensors[t].kind == TensorKind::Hyper)
      hyperTensors_.push_back(t);
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    const PlanInstr &in = plan_.instrs[i];
    BoundInstr &b = bound_[i];
    if (in.isCollective)
      continue;
    const std::string &op = plan_.kernels[in.kernel];
    b.fn = findCudaKernel(op);
    if (!b.fn)
      return Status::errorf("{}: instruction {} ('{}'): op '{}' has no CUDA kernel (this "
                            "plait-run's CUDA backend has {} kernels)",
                            plan_.path, i, printable(in.name), printable(op),
                            cudaKernelNames().size());
    for (uint32_t t : in.inputs)
      b.hostScalars.push_back(plan_.tensors[t].kind == TensorKind::Hyper ? &hyperValues_[t]
                                                                          : nullptr);
  }
  inputSet_.assign(plan_.inputs.size(), false);
  return {};
}

Status CudaExecutor::selectDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return Status::errorf("no CUDA device: {} ({})", cudaGetErrorString(err),
                          cudaGetErrorName(err));
  if (count == 0)
    return Status::error("no CUDA device: the driver reports 0 devices");
  device_ = options_.device >= 0 ? options_.device : int(options_.rank % uint32_t(count));
  if (device_ >= count)
    return Status::errorf("CUDA device {} requested, {} present", device_, count);
  PLAIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaFree(nullptr)); // creates the primary context now
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&stepDone_, cudaEventDisableTiming));
  cudaDeviceProp prop{};
  PLAIT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device_));
  note_ = fmt::format("CUDA backend: device {} ({}, sm_{}{})", device_, prop.name, prop.major,
                      prop.minor);
  return {};
}

TensorView CudaExecutor::deviceView(uint32_t tensor) const {
  const PlanTensor &t = plan_.tensors[tensor];
  TensorView v;
  v.data = static_cast<uint8_t *>(arena_) + t.offset;
  v.dtype = t.dtype;
  v.shape = t.shape;
  return v;
}

CudaKernelCall CudaExecutor::callFor(size_t i, bool check) {
  BoundInstr &b = bound_[i];
  CudaKernelCall call{b.inputs, b.outputs, plan_.instrs[i].attrs};
  call.rank = options_.rank;
  call.worldSize = plan_.worldSize;
  call.check = check;
  call.stream = compute_;
  call.workspace = workspace_;
  call.workspaceBytes = workspaceBytes_;
  call.libraries = libraries_.get();
  call.hostScalars = &b.hostScalars;
  call.deviceError = deviceError_;
  call.errorTag = int(i) + 1;
  call.cache = &b.cache;
  if (module_) {
    call.fused.driver = &context_->driver();
    call.fused.function = b.fusedFunction;
  }
  return call;
}

// Every kernel checks its operands once, before anything is allocated on the device, and
// says how much workspace it will take; a plan it cannot run fails here, not at step 37.
Status CudaExecutor::checkInstructions() {
  uint64_t needed = plan_.workspaceBytes[options_.rank];
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    if (plan_.instrs[i].isCollective)
      continue;
    BoundInstr &b = bound_[i];
    // Views with null data: a checking call reads shapes and dtypes only.
    for (uint32_t t : plan_.instrs[i].inputs)
      b.inputs.push_back(TensorView{nullptr, plan_.tensors[t].dtype, plan_.tensors[t].shape});
    for (uint32_t t : plan_.instrs[i].outputs)
      b.outputs.push_back(TensorView{nullptr, plan_.tensors[t].dtype, plan_.tensors[t].shape});
    CudaKernelCall call = callFor(i, true);
    uint64_t need = 0;
    call.workspaceNeeded = &need;
    Status s = b.fn(call);
    if (!s.ok())
      return s.withPrefix(where(i));
    needed = std::max(needed, need);
  }
  workspaceBytes_ = (needed + kAlign - 1) / kAlign * kAlign;
  return {};
}

Status CudaExecutor::allocate() {
  uint64_t arenaBytes = plan_.arenaBytes[options_.rank];
  if (arenaBytes > 0) {
    cudaError_t err = cudaMalloc(&arena_, arenaBytes);
    if (err != cudaSuccess)
      return Status::errorf("cannot allocate the {}-byte arena on CUDA device {}: {}",
                            arenaBytes, device_, cudaGetErrorString(err));
    // Optimizer state starts as zeros, as on the CPU backend.
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(arena_, 0, arenaBytes, compute_));
  }
  if (workspaceBytes_ > 0) {
    cudaError_t err = cudaMalloc(&workspace_, workspaceBytes_);
    if (err != cudaSuccess)
      return Status::errorf("cannot allocate the {}-byte workspace on CUDA device {}: {}",
                            workspaceBytes_, device_, cudaGetErrorString(err));
  }
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void **>(&deviceError_), sizeof(int)));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(deviceError_, 0, sizeof(int), compute_));
  PLAIT_RETURN_IF_ERROR(
      CudaLibraries::create(compute_, CudaLibraries::kDefaultWorkspaceBytes, libraries_));
  // Rebind every view to the arena now that it exists.
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    const PlanInstr &in = plan_.instrs[i];
    BoundInstr &b = bound_[i];
    b.inputs.clear();
    b.outputs.clear();
    for (uint32_t t : in.inputs)
      b.inputs.push_back(deviceView(t));
    for (uint32_t t : in.outputs)
      b.outputs.push_back(deviceView(t));
  }
  if (options_.timeKernels) {
    kernelTimes_.assign(plan_.instrs.size(), {});
    timingEvents_.assign(2 * plan_.instrs.size(), nullptr);
    for (cudaEvent_t &e : timingEvents_)
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  }
  return {};
}

Status CudaExecutor::loadGeneratedKernels() {
  bool anyFused = false;
  for (const PlanInstr &in : plan_.instrs)
    anyFused |= !in.isCollective && plan_.kernels[in.kernel] == "fused_elementwise";
  if (!anyFused)
    return {};
  PLAIT_RETURN_IF_ERROR(CudaContext::open(device_, context_));
  PLAIT_RETURN_IF_ERROR(CudaModule::load(context_->driver(), plan_.generatedCuda, module_));
  int64_t loaded = 0;
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    const PlanInstr &in = plan_.instrs[i];
    if (in.isCollective || plan_.kernels[in.kernel] != "fused_elementwise")
      continue;
    std::string symbol = in.attrs.getStr("cuda_symbol", "");
    CUfunction function = nullptr;
    Status s = module_->kernel(symbol, function);
    if (!s.ok())
      return s.withPrefix(where(i) + "generated kernel '" + printable(symbol) + "': ");
    bound_[i].fusedFunction = function;
    ++loaded;
  }
  note_ += fmt::format("; {} fused kernels from the plan's fatbin", loaded);
  return {};
}

Status CudaExecutor::createCommunicators() {
  nccl_ = std::make_unique<NcclComms>(*comm_);
  uint32_t collectives = 0;
  for (size_t i = 0; i < plan_.instrs.size(); ++i) {
    const PlanInstr &in = plan_.instrs[i];
    if (!in.isCollective)
      continue;
    ++collectives;
    BoundInstr &b = bound_[i];
    uint32_t group, index;
    b.member = in.collective.groups.locate(options_.rank, group, index);
    b.groupSize = in.collective.groups.groupSize;
    Status s = nccl_->get(in.collective.groups, b.comm);
    if (!s.ok())
      return s.withPrefix(where(i));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.ready, cudaEventDisableTiming));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  }
  inFlight_.reserve(collectives);
  return {};
}

Status CudaExecutor::initialiseParamsAndConstants() {
  std::vector<uint8_t> host; // one tensor at a time: the host never holds the whole arena
  for (uint32_t i = 0; i < plan_.tensors.size(); ++i) {
    const PlanTensor &t = plan_.tensors[i];
    if ((t.kind != TensorKind::Param && t.kind != TensorKind::Constant) || t.bytes == 0)
      continue;
    host.assign(t.bytes, 0);
    PLAIT_RETURN_IF_ERROR(initialTensorBytes(plan_, i, options_.rank, options_.seed, host.data()));
    // Synchronous: `host` is reused for the next tensor.
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t *>(arena_) + t.offset,
                                               host.data(), t.bytes, cudaMemcpyHostToDevice,
                                               compute_));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
  }
  return {};
}

Status CudaExecutor::setInput(size_t index, DType dtype, const std::vector<int64_t> &shape,
                              const void *data) {
  if (index >= plan_.inputs.size())
    return Status::errorf("{}: input index {} out of range ({} inputs)", plan_.path, index,
                          plan_.inputs.size());
  const PlanTensor &t = plan_.tensors[plan_.inputs[index]];
  if (dtype != t.dtype || shape != t.shape)
    return Status::errorf("{}: input '{}': expected {} {}, got {} {}", plan_.path,
                          printable(t.name), dtypeName(t.dtype), shapeString(t.shape),
                          dtypeName(dtype), shapeString(shape));
  // From pageable memory the copy returns once the source was staged, so the caller may
  // reuse its buffer; the compute stream orders it before the step's kernels.
  if (t.bytes != 0)
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t *>(arena_) + t.offset, data,
                                               t.bytes, cudaMemcpyHostToDevice, compute_));
  inputSet_[index] = true;
  return {};
}

void CudaExecutor::setHyperParameters(int64_t step, double lr, double prevLr) {
  for (uint32_t i : hyperTensors_) {
    const PlanTensor &t = plan_.tensors[i];
    // The kernels read the double; the device copy is the tensor's own dtype.
    hyperValues_[i] = t.name == "lr" ? lr : t.name == "prev_lr" ? prevLr : double(step);
    writeHyperParameter(t, hyperValues_[i], &hyperBytes_[i]);
  }
}

Status CudaExecutor::runInstr(size_t i) {
  const PlanInstr &in = plan_.instrs[i];
  for (uint32_t w : in.waits)
    PLAIT_RETURN_IF_ERROR(completeCollective(w));
  if (in.isCollective)
    return startCollective(i);
  if (options_.timeKernels)
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(timingEvents_[2 * i], compute_));
  Status s = bound_[i].fn(callFor(i, false));
  if (!s.ok())
    return s.withPrefix(where(i));
  if (options_.timeKernels)
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(timingEvents_[2 * i + 1], compute_));
  return {};
}

// The collective waits for everything the compute stream enqueued so far (its operand is
// ready), runs on the communication stream, and records `done`; the compute stream waits on
// `done` only where the plan says so (completeCollective), so later kernels overlap it.
Status CudaExecutor::startCollective(size_t i) {
  BoundInstr &b = bound_[i];
  if (!b.member) // a rank in no group skips the instruction
    return {};
  const CollectiveSpec &spec = plan_.instrs[i].collective;
  const TensorView &x = b.inputs[0], &y = b.outputs[0];
  PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.ready, compute_));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(comm_stream_, b.ready, 0));
  // In place on the output for broadcast: the root sends it, the others overwrite it.
  if (spec.kind == CollectiveKind::Broadcast && x.data != y.data && y.bytes() != 0)
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y.data, x.data, y.bytes(),
                                               cudaMemcpyDeviceToDevice, comm_stream_));
  uint64_t fullBytes = 0; // the buffer the ring model counts (CommModel.h), as Executor
  CollectiveArgs args = collectiveArgsOf(spec.kind, spec.root, x, y, fullBytes);
  Status s = NcclComms::enqueue(b.comm, args, comm_stream_);
  if (!s.ok())
    return s.withPrefix(where(i));
  // A mean is the completed sum divided by the group size in the tensor's precision.
  if (spec.mean && spec.groups.groupSize > 1) {
    cudaError_t err = cuda::launchDivideInPlace(int(y.dtype), y.data, y.numel(),
                                                float(spec.groups.groupSize), comm_stream_);
    if (err != cudaSuccess)
      return Status::errorf("{}mean: {}", where(i), cudaGetErrorString(err));
  }
  PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.done, comm_stream_));
  b.inFlight = true;
  inFlight_.push_back(i);
  stepCommBytes_.add(spec.kind, fullBytes, spec.groups.groupSize);
  return {};
}

Status CudaExecutor::completeCollective(size_t i) {
  BoundInstr &b = bound_[i];
  if (!b.inFlight)
    return {};
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(compute_, b.done, 0));
  b.inFlight = false;
  inFlight_.erase(std::find(inFlight_.begin(), inFlight_.end(), i));
  return {};
}

// Waits for the step's last work with a deadline, so that a dead peer (a collective that
// never completes) fails the run instead of hanging it; NCCL is then aborted.
Status CudaExecutor::finishStep() {
  PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(stepDone_, compute_));
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(options_.timeoutSeconds);
  for (;;) {
    cudaError_t state = cudaEventQuery(stepDone_);
    if (state == cudaSuccess)
      break;
    if (state != cudaErrorNotReady)
      return cudaStatus(state, "cudaEventQuery(stepDone_)", __FILE__, __LINE__)
          .withPrefix(fmt::format("{}: rank {}: ", plan_.path, options_.rank));
    Status async = nccl_ ? nccl_->asyncError() : Status();
    if (!async.ok()) {
      nccl_->abortAll();
      return async.withPrefix(fmt::format("{}: rank {}: ", plan_.path, options_.rank));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      if (nccl_)
        nccl_->abortAll();
      return Status::errorf("{}: rank {}: the step did not finish within {} s (a collective "
                            "waiting for a peer that died or stalled?)",
                            plan_.path, options_.rank, options_.timeoutSeconds);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  int failed = 0;
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&failed, deviceError_, sizeof failed,
                                             cudaMemcpyDeviceToHost, compute_));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
  if (failed != 0) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(deviceError_, 0, sizeof(int), compute_));
    return Status::error(where(size_t(failed - 1)) +
                         "an index or target is out of range (checked on the device)");
  }
  if (options_.timeKernels)
    for (size_t i = 0; i < plan_.instrs.size(); ++i) {
      if (plan_.instrs[i].isCollective)
        continue;
      float ms = 0;
      PLAIT_CUDA_RETURN_IF_ERROR(
          cudaEventElapsedTime(&ms, timingEvents_[2 * i], timingEvents_[2 * i + 1]));
      kernelTimes_[i].totalMs += double(ms);
      ++kernelTimes_[i].runs;
    }
  return {};
}

Status CudaExecutor::run() {
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (!inputSet_[i])
      return Status::errorf("{}: input '{}' was not set before the run", plan_.path,
                            printable(plan_.tensors[plan_.inputs[i]].name));
  if (!inFlight_.empty())
    return Status::internal(fmt::format("{}: a previous step failed with collectives in "
                                        "flight", plan_.path));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  stepCommBytes_ = {};
  for (uint32_t t : hyperTensors_) // the step's lr and step number, before any kernel
    PLAIT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(static_cast<uint8_t *>(arena_) + plan_.tensors[t].offset, &hyperBytes_[t],
                        plan_.tensors[t].bytes, cudaMemcpyHostToDevice, compute_));
  if (graph_) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_, compute_));
  } else if (!graphTried_ && stepsRun_ >= 1) {
    // The first step ran kernel by kernel: what the kernels set up lazily (cuBLASLt's
    // algorithm, cuDNN's plans) exists now, so the capture holds only launches.
    graphTried_ = true;
    bool collectives = std::any_of(plan_.instrs.begin(), plan_.instrs.end(),
                                   [](const PlanInstr &in) { return in.isCollective; });
    if (!options_.cudaGraphs)
      graphNote_ = "CUDA graphs: off (--no-cuda-graphs); every step launches kernel by kernel";
    else if (options_.timeKernels)
      graphNote_ = "CUDA graphs: off (--kernel-times times every kernel on its own)";
    else if (collectives)
      graphNote_ = "CUDA graphs: off (the plan has collectives; NCCL inside a graph is not "
                   "verified yet)";
    if (graphNote_.empty())
      PLAIT_RETURN_IF_ERROR(captureAndLaunchStep());
    else
      PLAIT_RETURN_IF_ERROR(enqueueStep());
  } else {
    PLAIT_RETURN_IF_ERROR(enqueueStep());
  }
  instructionsRun_ += plan_.instrs.size(); // enqueued: as launches or as the graph
  PLAIT_RETURN_IF_ERROR(finishStep());
  ++stepsRun_;
  inputSet_.assign(plan_.inputs.size(), false);
  return {};
}

// Every instruction, the collectives' completion and the updates, enqueued on the streams.
Status CudaExecutor::enqueueStep() {
  for (size_t i = 0; i < plan_.instrs.size(); ++i)
    PLAIT_RETURN_IF_ERROR(runInstr(i));
  // Collectives nobody waited for complete before the updates may read them.
  while (!inFlight_.empty())
    PLAIT_RETURN_IF_ERROR(completeCollective(inFlight_.front()));
  // New weights and optimizer state become visible only after the whole step ran.
  for (const PlanUpdate &u : plan_.updates) {
    const PlanTensor &target = plan_.tensors[u.target], &source = plan_.tensors[u.source];
    if (target.bytes != 0)
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t *>(arena_) + target.offset,
                                                 static_cast<uint8_t *>(arena_) + source.offset,
                                                 target.bytes, cudaMemcpyDeviceToDevice,
                                                 compute_));
  }
  return {};
}

// Captures the step's launches into a graph, instantiates it and launches it. Where the
// capture or instantiation fails (a library call that cannot be captured), the step runs
// kernel by kernel instead, now and from then on, and graphNote() says why.
Status CudaExecutor::captureAndLaunchStep() {
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
  Status enqueued = enqueueStep();
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(compute_, &graph);
  std::string failure;
  if (ended != cudaSuccess) {
    failure = enqueued.ok() ? std::string(cudaGetErrorString(ended)) : enqueued.message();
  } else if (!enqueued.ok()) {
    if (graph)
      (void)cudaGraphDestroy(graph);
    return enqueued; // a real error, not the capture's
  } else {
    size_t nodes = 0;
    (void)cudaGraphGetNodes(graph, nullptr, &nodes);
    cudaError_t made = cudaGraphInstantiate(&graph_, graph, 0);
    if (made == cudaSuccess) {
      graphNote_ = fmt::format("CUDA graphs: steps 2.. replay one captured graph of {} nodes "
                               "(--no-cuda-graphs: kernel by kernel)",
                               nodes);
    } else {
      graph_ = nullptr;
      failure = cudaGetErrorString(made);
    }
  }
  if (graph)
    (void)cudaGraphDestroy(graph);
  if (graph_) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph_, compute_));
    return {};
  }
  (void)cudaGetLastError(); // the failed capture's error is reported in the note, not later
  inFlight_.clear();
  for (BoundInstr &b : bound_)
    b.inFlight = false;
  graphNote_ = "CUDA graphs: off (capturing the step failed: " + failure +
               "); every step launches kernel by kernel";
  return enqueueStep();
}

Status CudaExecutor::readTensor(uint32_t tensor, std::vector<uint8_t> &out) const {
  const PlanTensor &t = plan_.tensors[tensor];
  out.resize(t.bytes);
  if (t.bytes == 0)
    return {};
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.data(), static_cast<uint8_t *>(arena_) + t.offset,
                                             t.bytes, cudaMemcpyDeviceToHost, compute_));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
  return {};
}

Status CudaExecutor::writeTensor(uint32_t tensor, const std::vector<uint8_t> &bytes) {
  const PlanTensor &t = plan_.tensors[tensor];
  if (bytes.size() != t.bytes)
    return Status::internal(fmt::format("{}: writing tensor {} ('{}'): {} bytes, planned {}",
                                        plan_.path, tensor, printable(t.name), bytes.size(),
                                        t.bytes));
  if (t.bytes == 0)
    return {};
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t *>(arena_) + t.offset,
                                             bytes.data(), t.bytes, cudaMemcpyHostToDevice,
                                             compute_));
  PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
  return {};
}

} // namespace plait::rt
