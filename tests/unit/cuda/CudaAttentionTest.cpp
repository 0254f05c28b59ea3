// The CUDA attention kernels (attention, attention_grad) called on device buffers against a
// reference in double on the host: f32 and bf16, causal and not, S != T, D != E, several key
// tiles, head dimensions up to the kernels' limit. Skipped without a CUDA device; what the
// checking calls refuse, and the workspace they ask for, is tested everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaKernel.h"
#include "tests/unit/cuda/AttentionReference.h"
#include "tests/unit/cuda/CudaTestSupport.h"

namespace plait {
namespace {

using ::testing::HasSubstr;
using rt::DType;
using namespace attention_test;

rt::Attrs attentionAttrs(double scale, bool causal) {
  rt::Attrs attrs;
  rt::AttrValue s, c;
  s.floats = {scale};
  c.ints = {causal ? 1 : 0};
  attrs.set("scale", s);
  attrs.set("causal", c);
  return attrs;
}

/// One call of kernel `name` (checking, or on the default stream with `workspace`).
rt::Status callKernel(const char *name, const std::vector<rt::TensorView> &inputs,
                      std::vector<rt::TensorView> &outputs, const rt::Attrs &attrs, bool check,
                      uint64_t *workspaceNeeded, void *workspace = nullptr,
                      uint64_t workspaceBytes = 0) {
  rt::CudaKernelFn fn = rt::findCudaKernel(name);
  if (!fn)
    return rt::Status::errorf("no CUDA kernel {}", name);
  rt::CudaKernelCall call{inputs, outputs, attrs};
  call.check = check;
  call.workspaceNeeded = workspaceNeeded;
  call.workspace = workspace;
  call.workspaceBytes = workspaceBytes;
  return fn(call);
}

//===--- checking calls (no device) -------------------------------------------------------===//

/// The operands and results of attention (grad: attention_grad) for `z`, without data.
void describe(const Shapes &z, bool grad, DType dtype, std::vector<rt::TensorView> &in,
              std::vector<rt::TensorView> &out) {
  rt::TensorView q{nullptr, dtype, {z.b, z.s, z.h, z.d}}, k{nullptr, dtype, {z.b, z.t, z.h, z.d}};
  rt::TensorView v{nullptr, dtype, {z.b, z.t, z.h, z.e}}, o{nullptr, dtype, {z.b, z.s, z.h, z.e}};
  rt::TensorView lse{nullptr, DType::F32, {z.b, z.h, z.s}};
  if (grad) {
    in = {q, k, v, o, lse, o};
    out = {q, k, v};
  } else {
    in = {q, k, v};
    out = {o, lse};
  }
}

TEST(CudaAttention, CheckingCallsTakeTheOperandsAndAskForTheGradientsWorkspace) {
  for (bool grad : {false, true}) {
    std::vector<rt::TensorView> in, out;
    describe({2, 5, 7, 3, 16, 24}, grad, DType::BF16, in, out);
    uint64_t need = 0;
    rt::Status s = callKernel(grad ? "attention_grad" : "attention", in, out,
                              attentionAttrs(0.25, true), true, &need);
    EXPECT_TRUE(s.ok()) << s.message();
    // The gradient keeps each query row's dot(dout, out): f32 [B, H, S].
    EXPECT_EQ(need, grad ? uint64_t(2 * 3 * 5 * 4) : 0u);
  }
}

TEST(CudaAttention, HeadDimensionsBeyondTheLimitAreRefusedNamingTheKernel) {
  for (bool grad : {false, true}) {
    const char *name = grad ? "attention_grad" : "attention";
    for (Shapes z : {Shapes{1, 4, 4, 2, 512, 64}, Shapes{1, 4, 4, 2, 64, 257}}) {
      std::vector<rt::TensorView> in, out;
      describe(z, grad, DType::F32, in, out);
      uint64_t need = 0;
      rt::Status s = callKernel(name, in, out, attentionAttrs(0.125, false), true, &need);
      EXPECT_EQ(s.message(), std::string(name) + ": head dimensions D = " + std::to_string(z.d) +
                                 " (q, k) and E = " + std::to_string(z.e) +
                                 " (v); the CUDA kernel takes at most 256");
    }
    // 256 is taken.
    std::vector<rt::TensorView> in, out;
    describe({1, 4, 4, 2, 256, 256}, grad, DType::F32, in, out);
    uint64_t need = 0;
    EXPECT_TRUE(callKernel(name, in, out, attentionAttrs(0.125, false), true, &need).ok());
  }
}

TEST(CudaAttention, DropoutIsRefusedInOneLine) {
  // The CPU kernels' dropout on the probabilities: plait-fuse-attention leaves it decomposed
  // for CUDA plans, and the kernels refuse it before reading the (device) step operand.
  for (bool grad : {false, true}) {
    const std::string name = grad ? "attention_grad" : "attention";
    std::vector<rt::TensorView> in, out;
    describe({1, 4, 4, 2, 8, 8}, grad, DType::F32, in, out);
    rt::Attrs attrs = attentionAttrs(0.125, true);
    rt::AttrValue ratio;
    ratio.floats = {0.1};
    attrs.set("dropout", ratio);
    uint64_t need = 0;
    rt::Status s = callKernel(name.c_str(), in, out, attrs, true, &need);
    EXPECT_EQ(s.message(), name + ": dropout on the probabilities is not supported by the CUDA "
                                  "kernels (compile for cuda: plait-fuse-attention leaves it "
                                  "decomposed)");
  }
}

TEST(CudaAttention, MismatchedShapesAndDtypesAreRefusedNamingTheKernel) {
  for (bool grad : {false, true}) {
    const std::string name = grad ? "attention_grad" : "attention";
    uint64_t need = 0;
    std::vector<rt::TensorView> in, out;
    describe({2, 5, 7, 3, 16, 24}, grad, DType::F32, in, out);
    in[1].shape = {2, 7, 4, 16}; // k with 4 heads against q's 3
    rt::Status s = callKernel(name.c_str(), in, out, attentionAttrs(0.25, false), true, &need);
    EXPECT_THAT(s.message(), ::testing::StartsWith(name + ": k has shape [2, 7, 4, 16]"));
    EXPECT_EQ(s.message().find('\n'), std::string::npos);

    describe({2, 5, 7, 3, 16, 24}, grad, DType::F16, in, out);
    s = callKernel(name.c_str(), in, out, attentionAttrs(0.25, false), true, &need);
    EXPECT_THAT(s.message(), ::testing::StartsWith(name + ": "));
    EXPECT_THAT(s.message(), HasSubstr("f16"));

    describe({2, 5, 7, 3, 16, 24}, grad, DType::F32, in, out);
    s = callKernel(name.c_str(), in, out, attentionAttrs(0, false), true, &need);
    EXPECT_THAT(s.message(), ::testing::StartsWith(name + ": scale"));
  }
}

//===--- on the device --------------------------------------------------------------------===//

/// Device memory freed on scope exit.
struct DeviceBuffer {
  void *data = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&data, std::max<size_t>(bytes, 1)) != cudaSuccess)
      data = nullptr;
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

/// Copies `x` (as `dtype`) to a new device buffer.
std::unique_ptr<DeviceBuffer> upload(DType dtype, const std::vector<float> &x) {
  std::vector<uint8_t> bytes = encode(dtype, x);
  auto buffer = std::make_unique<DeviceBuffer>(bytes.size());
  if (buffer->data && !bytes.empty())
    cudaMemcpy(buffer->data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
  return buffer;
}

std::vector<float> download(DType dtype, const DeviceBuffer &buffer, size_t n) {
  std::vector<uint8_t> bytes(bytesOf(dtype, n));
  if (!bytes.empty())
    EXPECT_EQ(cudaMemcpy(bytes.data(), buffer.data, bytes.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
  return decode(dtype, bytes);
}

/// Runs kernel `name` on the device: the checking call (its workspace need), then the call,
/// synchronised. `in`/`out` hold the device buffers' views.
void runOnDevice(const char *name, const std::vector<rt::TensorView> &in,
                 std::vector<rt::TensorView> &out, const rt::Attrs &attrs) {
  uint64_t need = 0;
  rt::Status s = callKernel(name, in, out, attrs, true, &need);
  ASSERT_TRUE(s.ok()) << s.message();
  DeviceBuffer workspace(need);
  ASSERT_NE(workspace.data, nullptr);
  s = callKernel(name, in, out, attrs, false, nullptr, workspace.data, need);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
}


TEST(CudaAttention, ForwardMatchesTheReference) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(17);
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Case &c : kCases) {
      SCOPED_TRACE(describeCase(c, dtype));
      const Shapes &z = c.z;
      Operands operands = randomOperands(rng, dtype, z, false);
      const std::vector<float> &q = operands.q, &k = operands.k, &v = operands.v;
      auto qd = upload(dtype, q), kd = upload(dtype, k), vd = upload(dtype, v);
      DeviceBuffer outd(bytesOf(dtype, size_t(z.b * z.s * z.h * z.e)));
      DeviceBuffer lsed(sizeof(float) * size_t(z.b * z.h * z.s));
      std::vector<rt::TensorView> in, out;
      describe(z, false, dtype, in, out);
      in[0].data = qd->data, in[1].data = kd->data, in[2].data = vd->data;
      out[0].data = outd.data, out[1].data = lsed.data;
      runOnDevice("attention", in, out, attentionAttrs(c.scale, c.causal));
      if (HasFatalFailure())
        return;
      Reference ref{z, c.causal, c.scale};
      std::vector<double> wantOut, wantLse;
      ref.forward(q, k, v, wantOut, wantLse);
      const double tol = dtype == DType::BF16 ? 2e-2 : 1e-5;
      expectNear("out", download(dtype, outd, wantOut.size()), wantOut, tol);
      expectNear("lse", download(DType::F32, lsed, wantLse.size()), wantLse, 1e-5);
    }
}

TEST(CudaAttention, GradientsMatchTheReferenceAndRepeatBitwise) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(23);
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Case &c : kCases) {
      SCOPED_TRACE(describeCase(c, dtype));
      const Shapes &z = c.z;
      Operands operands = randomOperands(rng, dtype, z, true);
      const std::vector<float> &q = operands.q, &k = operands.k, &v = operands.v,
                               &dout = operands.dout;
      // The forward's results as the kernel would be given them: out in the dtype, lse f32.
      Reference ref{z, c.causal, c.scale};
      std::vector<double> out64, lse64;
      ref.forward(q, k, v, out64, lse64);
      std::vector<float> out = rounded(dtype, std::vector<float>(out64.begin(), out64.end()));
      std::vector<float> lse(lse64.begin(), lse64.end());
      auto qd = upload(dtype, q), kd = upload(dtype, k), vd = upload(dtype, v);
      auto outd = upload(dtype, out), lsed = upload(DType::F32, lse), doutd = upload(dtype, dout);
      DeviceBuffer dqd(bytesOf(dtype, q.size())), dkd(bytesOf(dtype, k.size())),
          dvd(bytesOf(dtype, v.size()));
      std::vector<rt::TensorView> in, res;
      describe(z, true, dtype, in, res);
      in[0].data = qd->data, in[1].data = kd->data, in[2].data = vd->data;
      in[3].data = outd->data, in[4].data = lsed->data, in[5].data = doutd->data;
      res[0].data = dqd.data, res[1].data = dkd.data, res[2].data = dvd.data;
      const rt::Attrs attrs = attentionAttrs(c.scale, c.causal);
      runOnDevice("attention_grad", in, res, attrs);
      if (HasFatalFailure())
        return;
      std::vector<double> wantDq, wantDk, wantDv;
      ref.grad(q, k, v, out, lse, dout, wantDq, wantDk, wantDv);
      const double tol = dtype == DType::BF16 ? 2e-2 : 1e-5;
      std::vector<float> dq = download(dtype, dqd, q.size()), dk = download(dtype, dkd, k.size()),
                         dv = download(dtype, dvd, v.size());
      expectNear("dq", dq, wantDq, tol);
      expectNear("dk", dk, wantDk, tol);
      expectNear("dv", dv, wantDv, tol);
      // No atomics: a second run gives the same bits.
      runOnDevice("attention_grad", in, res, attrs);
      if (HasFatalFailure())
        return;
      EXPECT_EQ(download(dtype, dqd, q.size()), dq);
      EXPECT_EQ(download(dtype, dkd, k.size()), dk);
      EXPECT_EQ(download(dtype, dvd, v.size()), dv);
    }
}

} // namespace
} // namespace plait
