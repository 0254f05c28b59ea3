// Executes a plan compiled with --device cuda on one GPU per rank: one device arena and one
// workspace, every instruction enqueued on a compute stream, collectives on a communication
// stream through NCCL, ordered by events where the plan says a collective must be complete.
// The public shape follows Executor's (runtime/Executor.h) so that the run driver picks one
// by Plan::device. After create(), a step allocates no device memory.
//
// From the second step on, a step whose plan has no collectives is captured once as a CUDA
// graph and replayed (CudaExecutorOptions::cudaGraphs; plait-run --no-cuda-graphs): the plan
// fixes every address and launch, so only the inputs and hyper-parameters change, and those are
// written to the arena before each replay. Checked on an H200 by tests/gpu/run.sh.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/Status.h"
#include "runtime/comm/Comm.h"
#include "runtime/cuda/CudaKernel.h"

struct ncclComm;

namespace plait::rt {

class CudaContext;
class CudaLibraries;
class CudaModule;
class NcclComms;

struct CudaExecutorOptions {
  uint32_t rank = 0;  // which entry of Plan::arenaBytes to allocate
  uint64_t seed = 0;  // for params initialised from a spec (ParamInit)
  /// The job's communicator (MPI); bootstraps NCCL and must have the plan's world size. Null:
  /// a single-process communicator, enough for plans whose groups all have one rank.
  Communicator *comm = nullptr;
  int device = -1;    // CUDA device ordinal; -1: rank % device count
  /// Time every instruction with CUDA events (kernelTimes()); costs an event pair per
  /// instruction, so it is off unless asked for.
  bool timeKernels = false;
  /// The longest a step may wait for its work to finish (a peer died, a collective stalled)
  /// before the run fails and NCCL is aborted.
  double timeoutSeconds = 300;
  /// Replay steps 2.. as one captured CUDA graph (not with timeKernels, and not for plans
  /// with collectives: NCCL inside a captured graph is not verified yet).
  bool cudaGraphs = true;
};

/// One instruction's device time, summed over the timed steps.
struct CudaKernelTime {
  double totalMs = 0;
  int64_t runs = 0;
};

class CudaExecutor {
public:
  /// Selects the device, allocates the arena and workspace, writes every param and constant
  /// into the arena, binds every instruction to its CUDA kernel and checks its operands. An
  /// op without a CUDA kernel fails here: "PLAN: instruction N ('name'): op 'OP' has no CUDA
  /// kernel". `plan` must outlive the executor.
  static Status create(const Plan &plan, const CudaExecutorOptions &options,
                       std::unique_ptr<CudaExecutor> &out);
  /// What create() checks before it touches a device: every instruction of rank `rank` has a
  /// CUDA kernel that takes its operands. Needs no GPU (tests run it on CPU-only machines).
  static Status checkPlan(const Plan &plan, uint32_t rank = 0);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Copies graph input `index` (host bytes of `dtype` and `shape`) into the device arena.
  Status setInput(size_t index, DType dtype, const std::vector<int64_t> &shape, const void *data);
  Status setInput(size_t index, const TensorView &value) {
    return setInput(index, value.dtype, value.shape, value.data);
  }

  /// The per-step hyper-parameters ("lr", "prev_lr", "step"): kept on the host for the
  /// optimizer kernels and copied to the device at the start of run().
  void setHyperParameters(int64_t step, double lr, double prevLr);

  /// Enqueues every instruction, the collectives and the updates, and waits for the step to
  /// finish. Errors read "PLAN: instruction N ('name', kernel K): message".
  Status run();

  /// Copies tensor `tensor` from the device (after run()).
  Status readTensor(uint32_t tensor, std::vector<uint8_t> &out) const;
  /// Copies `bytes` (the tensor's planned size) onto the device as tensor `tensor` (between
  /// steps: a resumed checkpoint's params and states).
  Status writeTensor(uint32_t tensor, const std::vector<uint8_t> &bytes);
  /// Graph output `index` (a position in Plan::outputs), copied from the device.
  Status readOutput(size_t index, std::vector<uint8_t> &out) const {
    return readTensor(plan_.outputs[index], out);
  }

  const CommBytes &stepCommBytes() const { return stepCommBytes_; }
  /// Per instruction (by index); meaningful with CudaExecutorOptions::timeKernels.
  const std::vector<CudaKernelTime> &kernelTimes() const { return kernelTimes_; }
  /// Forgets the times so far (the first step's include one-time setup such as cuBLASLt's
  /// algorithm choice).
  void resetKernelTimes() { kernelTimes_.assign(kernelTimes_.size(), CudaKernelTime{}); }

  const Plan &plan() const { return plan_; }
  uint32_t rank() const { return options_.rank; }
  int device() const { return device_; }
  uint64_t arenaBytes() const { return plan_.arenaBytes[options_.rank]; }
  uint64_t workspaceBytes() const { return workspaceBytes_; }
  uint64_t instructionsRun() const { return instructionsRun_; }
  /// One line: the device, and how many instructions run generated (fatbin) kernels.
  const std::string &note() const { return note_; }
  /// One line: whether steps replay as a CUDA graph, and if not, why.
  const std::string &graphNote() const { return graphNote_; }

private:
  struct BoundInstr {
    std::vector<TensorView> inputs, outputs; // device pointers
    CudaKernelFn fn = nullptr;
    std::vector<const double *> hostScalars; // per input: a hyper-parameter's host value
    std::shared_ptr<void> cache;            // the kernel's per-instruction state
    void *fusedFunction = nullptr;          // CUfunction of a fused_elementwise
    // Collectives
    bool member = false;
    ncclComm *comm = nullptr;
    uint32_t groupSize = 1;
    bool inFlight = false;
    cudaEvent_t ready = nullptr, done = nullptr;
  };

  CudaExecutor(const Plan &plan, const CudaExecutorOptions &options);
  Status selectDevice();
  Status allocate();
  Status initialiseParamsAndConstants();
  Status loadGeneratedKernels();
  Status bindInstructions();
  Status createCommunicators();
  Status checkInstructions();
  CudaKernelCall callFor(size_t i, bool check);
  Status runInstr(size_t i);
  Status enqueueStep();
  Status captureAndLaunchStep();
  Status startCollective(size_t i);
  Status completeCollective(size_t i);
  Status finishStep();
  TensorView deviceView(uint32_t tensor) const;
  std::string where(size_t i) const;

  const Plan &plan_;
  CudaExecutorOptions options_;
  int device_ = 0;
  std::unique_ptr<Communicator> ownComm_;
  Communicator *comm_ = nullptr;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  void *arena_ = nullptr, *workspace_ = nullptr;
  uint64_t workspaceBytes_ = 0;
  int *deviceError_ = nullptr;
  cudaEvent_t stepDone_ = nullptr;
  std::unique_ptr<CudaLibraries> libraries_;
  std::unique_ptr<CudaContext> context_;
  std::unique_ptr<CudaModule> module_;
  std::unique_ptr<NcclComms> nccl_;
  std::vector<BoundInstr> bound_;
  std::vector<double> hyperValues_;  // by tensor index (only Hyper tensors meaningful)
  std::vector<uint64_t> hyperBytes_; // the same, as each tensor's dtype holds it (f32, f64)
  std::vector<uint32_t> hyperTensors_;
  std::vector<bool> inputSet_;
  std::vector<size_t> inFlight_;
  CommBytes stepCommBytes_;
  uint64_t instructionsRun_ = 0;
  std::vector<CudaKernelTime> kernelTimes_;
  std::vector<cudaEvent_t> timingEvents_; // two per instruction when timing
  std::string note_;
  // CUDA graph replay (run()): captured at the second step, launched from then on.
  cudaGraphExec_t graph_ = nullptr;
  bool graphTried_ = false;
  uint64_t stepsRun_ = 0;
  std::string graphNote_;
};

} // namespace plait::rt
