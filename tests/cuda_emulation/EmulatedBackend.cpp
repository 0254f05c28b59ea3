// plait-run-emulated: plait-run (runtime/tools/plait-run.cpp) with every CPU kernel that has a
// CUDA kernel of plait's own replaced by that CUDA kernel under the emulation (Emulation.h):
// its host side and device code run on the plan's host arena, everything else (the executor,
// the data, the optimizer's hyper-parameters, collectives) as plait-run has it. The library
// ops (matmul and gemm, the convolutions, generated fused kernels) stay the CPU's. A call the
// CUDA kernel refuses (a dtype it has no kernel for) runs the CPU kernel. At exit it prints,
// to stderr, one line of how many calls each emulated kernel ran and which fell back:
//   plait-run-emulated: emulated CUDA kernels ran: add_layer_norm 40, attention 20, ...;
//   fell back to the CPU: none
// tests/cuda_emulation/emulated_parity.py trains the samples with it against plait-run.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/Kernel.h"
#include "runtime/cuda/CudaKernel.h"
#include "tests/cuda_emulation/EmulatedCall.h"
#include "tests/cuda_emulation/Emulation.h"

namespace plait {
namespace {

constexpr size_t kMaxKernels = 160;

struct Swapped {
  std::string name;
  rt::KernelFn cpu = nullptr;
  rt::CudaKernelFn cuda = nullptr;
};

struct State {
  std::vector<Swapped> kernels; // by wrapper index
  std::map<std::string, int64_t> ran, fellBack;
  std::vector<uint8_t> workspace; // the CUDA kernels' workspace, grown as calls need more
  std::mutex mutex;               // the emulation is one scheduler: one call at a time
};

State &state() {
  static State s;
  return s;
}

/// The call through the CUDA kernel of kernels[I], or its CPU kernel where the CUDA kernel
/// does not take the operands.
template <size_t I> rt::Status emulated(const rt::KernelCall &call) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Swapped &k = s.kernels[I];
  emu_test::EmulatedCall r = emu_test::callEmulated(k.cuda, call.inputs, call.outputs, call.attrs,
                                                    call.rank, call.worldSize, s.workspace);
  if (!r.taken) {
    ++s.fellBack[k.name];
    return k.cpu(call);
  }
  if (!r.status.ok())
    return rt::Status::internal(fmt::format("{} (emulated CUDA): {} {}", k.name,
                                            r.status.message(), plait_emu::lastFailure()));
  if (r.deviceError)
    return rt::Status::errorf("{} (emulated CUDA): the device flagged its operands (an index "
                              "or a target out of range)",
                              k.name);
  ++s.ran[k.name];
  return r.status;
}

template <size_t... I>
constexpr std::array<rt::KernelFn, sizeof...(I)> wrappers(std::index_sequence<I...>) {
  return {&emulated<I>...};
}

void report() {
  State &s = state();
  std::string ran, fell;
  for (const auto &[name, n] : s.ran)
    ran += fmt::format("{}{} {}", ran.empty() ? "" : ", ", name, n);
  for (const auto &[name, n] : s.fellBack)
    fell += fmt::format("{}{} {}", fell.empty() ? "" : ", ", name, n);
  std::fprintf(stderr,
               "plait-run-emulated: emulated CUDA kernels ran: %s; fell back to the CPU: %s\n",
               ran.empty() ? "none" : ran.c_str(), fell.empty() ? "none" : fell.c_str());
}

const bool kSwapped = [] {
  static constexpr auto kWrappers = wrappers(std::make_index_sequence<kMaxKernels>());
  State &s = state();
  for (const std::string &name : rt::cudaKernelNames()) {
    rt::KernelFn cpu = rt::findKernel(name); // registers the CPU kernels first
    if (!cpu)
      continue;
    if (s.kernels.size() == kMaxKernels) {
      std::fprintf(stderr, "plait-run-emulated: more than %zu CUDA kernels; raise kMaxKernels\n",
                   kMaxKernels);
      std::abort();
    }
    rt::registerKernel(name, kWrappers[s.kernels.size()]);
    s.kernels.push_back({name, cpu, rt::findCudaKernel(name)});
  }
  std::atexit(report);
  return true;
}();

} // namespace
} // namespace plait
