// The CUDA norm kernels with a residual add or a gradient (add_layer_norm, add_rms_norm,
// layer_norm_grad, rms_norm_grad): the checking calls (operands refused, the workspace the
// gradients ask for) everywhere; on a device, each against the CPU kernel on the same f32 or
// bf16 data (skipped without a CUDA device).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/cpu/Workspace.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/kernels/Launch.h"
#include "tests/unit/cuda/CudaTestSupport.h"
#include "tests/unit/cuda/DeviceBuffers.h"

namespace plait {
namespace {

using rt::DType;

rt::Attrs normAttrs(int64_t axis, double epsilon) {
  rt::Attrs attrs;
  rt::AttrValue a, e;
  a.ints = {axis};
  e.floats = {epsilon};
  attrs.set("axis", a);
  attrs.set("epsilon", e);
  return attrs;
}

/// One norm op's operands and results, without data: x [rows, 2, n / 2] normalised from
/// axis 1.
struct NormCall {
  std::string name;
  std::vector<rt::TensorView> in, out;
};

NormCall describe(const std::string &name, DType dtype, int64_t rows, int64_t n) {
  rt::TensorView x{nullptr, dtype, {rows, 2, n / 2}}, p{nullptr, dtype, {2, n / 2}};
  NormCall c{name, {}, {}};
  if (name == "layer_norm_grad") {
    c.in = {x, p, x};
    c.out = {x, p, p};
  } else if (name == "rms_norm_grad") {
    c.in = {x, p, x};
    c.out = {x, p};
  } else if (name == "add_layer_norm") {
    c.in = {x, x, p, p};
    c.out = {x, x};
  } else { // add_rms_norm
    c.in = {x, x, p};
    c.out = {x, x};
  }
  return c;
}

rt::Status checkCall(NormCall &c, uint64_t &need) {
  rt::CudaKernelFn fn = rt::findCudaKernel(c.name);
  if (!fn)
    return rt::Status::errorf("no CUDA kernel {}", c.name);
  rt::Attrs attrs = normAttrs(1, 1e-5);
  rt::CudaKernelCall call{c.in, c.out, attrs};
  call.check = true;
  call.workspaceNeeded = &need;
  return fn(call);
}

TEST(CudaNorms, CheckingCallsTakeTheOperandsAndTheGradientsAskForTheirPartialSums) {
  const int64_t rows = 300, n = 200;
  for (const char *name : {"layer_norm_grad", "rms_norm_grad", "add_layer_norm", "add_rms_norm"}) {
    SCOPED_TRACE(name);
    NormCall c = describe(name, DType::BF16, rows, n);
    uint64_t need = 0;
    rt::Status s = checkCall(c, need);
    ASSERT_TRUE(s.ok()) << s.message();
    // The gradients: a double per column, parameter gradient and first-phase block.
    uint64_t params = std::string(name) == "layer_norm_grad" ? 2 : 1;
    uint64_t expected = std::string(name).find("_grad") != std::string::npos
                            ? uint64_t(rt::cuda::normGradBlocks(rows)) * params * n * 8
                            : 0;
    EXPECT_EQ(need, expected);
  }
  NormCall c = describe("layer_norm_grad", DType::F32, rows, n);
  c.in[2].shape = {rows, 2, 99};
  uint64_t need = 0;
  EXPECT_EQ(checkCall(c, need).message(), "layer_norm_grad: dy has shape [300, 2, 99], expected "
                                          "[300, 2, 100]");
  c = describe("add_rms_norm", DType::F32, rows, n);
  c.in[1].shape = {2, 100};
  EXPECT_EQ(checkCall(c, need).message(),
            "add_rms_norm: residual has shape [2, 100], expected [300, 2, 100]");
}

//===--- on the device --------------------------------------------------------------------===//

/// `n` floats uniform in [lo, hi), stored as `dtype`.
std::vector<uint8_t> randomBytes(std::mt19937 &rng, DType dtype, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> value(lo, hi);
  std::vector<float> x(n);
  for (float &v : x)
    v = value(rng);
  return encode(dtype, x);
}

/// Runs `c` on the CPU kernel and on the CUDA kernel with the same random inputs and
/// compares every result.
void expectCudaMatchesCpu(NormCall c, DType dtype, double tolerance) {
  std::mt19937 rng(17);
  std::vector<std::vector<uint8_t>> inputs, cpuOut, gpuOut;
  for (const rt::TensorView &t : c.in)
    inputs.push_back(randomBytes(rng, dtype, size_t(t.numel()), -2, 2));
  for (const rt::TensorView &t : c.out) {
    cpuOut.emplace_back(bytesOf(dtype, size_t(t.numel())));
    gpuOut.emplace_back(cpuOut.back().size());
  }
  rt::Attrs attrs = normAttrs(1, 1e-5);
  // CPU: the kernel with exactly the workspace the plan would give it.
  std::vector<rt::TensorView> in = c.in, out = c.out;
  std::vector<rt::OperandType> inTypes, outTypes;
  for (size_t i = 0; i < in.size(); ++i) {
    in[i].data = inputs[i].data();
    inTypes.push_back({in[i].dtype, &in[i].shape});
  }
  for (size_t o = 0; o < out.size(); ++o) {
    out[o].data = cpuOut[o].data();
    outTypes.push_back({out[o].dtype, &out[o].shape});
  }
  uint64_t declared = rt::kernelWorkspaceBytes(c.name, inTypes, outTypes, rt::LazyAttrs(attrs));
  std::vector<uint8_t> workspace(declared + 64);
  rt::KernelCall cpuCall{in, out, attrs};
  cpuCall.workspace = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64);
  cpuCall.workspaceBytes = declared;
  rt::Status s = rt::findKernel(c.name)(cpuCall);
  ASSERT_TRUE(s.ok()) << s.message();
  // CUDA: device copies, the workspace the checking call asks for.
  uint64_t need = 0;
  ASSERT_TRUE(checkCall(c, need).ok());
  DeviceBuffers memory;
  std::vector<rt::TensorView> din = c.in, dout = c.out;
  for (size_t i = 0; i < din.size(); ++i) {
    din[i].data = memory.alloc(inputs[i].size());
    ASSERT_EQ(cudaMemcpy(din[i].data, inputs[i].data(), inputs[i].size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  for (size_t o = 0; o < dout.size(); ++o)
    dout[o].data = memory.alloc(gpuOut[o].size());
  rt::CudaKernelCall call{din, dout, attrs};
  call.workspace = memory.alloc(need);
  call.workspaceBytes = need;
  s = rt::findCudaKernel(c.name)(call);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t o = 0; o < dout.size(); ++o)
    EXPECT_EQ(cudaMemcpy(gpuOut[o].data(), dout[o].data, gpuOut[o].size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
  for (size_t o = 0; o < gpuOut.size(); ++o) {
    std::vector<float> want = decode(dtype, cpuOut[o]), got = decode(dtype, gpuOut[o]);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tolerance * std::max(1.0, std::fabs(double(want[i]))))
          << c.name << " result " << o << " element " << i;
  }
}

TEST(CudaNorms, EachMatchesTheCpuKernel) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  // 300 rows: more than normGradBlocks, so blocks take several rows each.
  for (DType dtype : {DType::F32, DType::BF16})
    for (const char *name : {"layer_norm_grad", "rms_norm_grad", "add_layer_norm", "add_rms_norm"}) {
      SCOPED_TRACE(::testing::Message() << name << " " << rt::dtypeName(dtype));
      expectCudaMatchesCpu(describe(name, dtype, 300, 200), dtype,
                           dtype == DType::F32 ? 1e-4 : 2e-2);
      if (HasFatalFailure())
        return;
    }
}

} // namespace
} // namespace plait
