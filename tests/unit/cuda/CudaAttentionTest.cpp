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
#include "tests/unit/cuda/CudaTestSupport.h"

namespace plait {
namespace {

using ::testing::HasSubstr;
using rt::DType;

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

struct Shapes {
  int64_t b, s, t, h, d, e;
};

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

/// The values as `dtype` holds them.
std::vector<float> rounded(DType dtype, std::vector<float> x) {
  return decode(dtype, encode(dtype, x));
}

/// `n` values uniform in [-1, 1), as `dtype` holds them.
std::vector<float> randomValues(std::mt19937 &rng, DType dtype, int64_t n) {
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &f : x)
    f = value(rng);
  return rounded(dtype, std::move(x));
}

struct Case {
  Shapes z;
  bool causal;
  double scale;
};

std::string describeCase(const Case &c, DType dtype) {
  return ::testing::PrintToString(std::vector<int64_t>{c.z.b, c.z.s, c.z.t, c.z.h, c.z.d, c.z.e}) +
         " (B, S, T, H, D, E) " + rt::dtypeName(dtype) + (c.causal ? " causal" : "") +
         " scale " + std::to_string(c.scale);
}

/// The attention of Case in double: indices as the kernels' (BSHD operands, lse [B, H, S]).
struct Reference {
  Shapes z;
  bool causal;
  double scale;
  int64_t qAt(int64_t b, int64_t i, int64_t h) const { return ((b * z.s + i) * z.h + h) * z.d; }
  int64_t kAt(int64_t b, int64_t j, int64_t h) const { return ((b * z.t + j) * z.h + h) * z.d; }
  int64_t vAt(int64_t b, int64_t j, int64_t h) const { return ((b * z.t + j) * z.h + h) * z.e; }
  int64_t oAt(int64_t b, int64_t i, int64_t h) const { return ((b * z.s + i) * z.h + h) * z.e; }
  int64_t lseAt(int64_t b, int64_t i, int64_t h) const { return (b * z.h + h) * z.s + i; }
  bool sees(int64_t i, int64_t j) const { return !causal || j <= i; }
  double score(const std::vector<float> &q, const std::vector<float> &k, int64_t b, int64_t i,
               int64_t j, int64_t h) const {
    double dot = 0;
    for (int64_t d = 0; d < z.d; ++d)
      dot += double(q[qAt(b, i, h) + d]) * double(k[kAt(b, j, h) + d]);
    return scale * dot;
  }

  void forward(const std::vector<float> &q, const std::vector<float> &k,
               const std::vector<float> &v, std::vector<double> &out,
               std::vector<double> &lse) const {
    out.assign(size_t(z.b * z.s * z.h * z.e), 0.0);
    lse.assign(size_t(z.b * z.h * z.s), 0.0);
    for (int64_t b = 0; b < z.b; ++b)
      for (int64_t h = 0; h < z.h; ++h)
        for (int64_t i = 0; i < z.s; ++i) {
          double top = -INFINITY;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j))
              top = std::max(top, score(q, k, b, i, j, h));
          double sum = 0;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j))
              sum += std::exp(score(q, k, b, i, j, h) - top);
          const double l = top + std::log(sum);
          lse[lseAt(b, i, h)] = l;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j)) {
              const double p = std::exp(score(q, k, b, i, j, h) - l);
              for (int64_t e = 0; e < z.e; ++e)
                out[oAt(b, i, h) + e] += p * double(v[vAt(b, j, h) + e]);
            }
        }
  }

  /// attention_grad's formulas, reading `out` and `lse` as given (as the kernel does).
  void grad(const std::vector<float> &q, const std::vector<float> &k,
            const std::vector<float> &v, const std::vector<float> &out,
            const std::vector<float> &lse, const std::vector<float> &dout,
            std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv) const {
    dq.assign(q.size(), 0.0);
    dk.assign(k.size(), 0.0);
    dv.assign(v.size(), 0.0);
    for (int64_t b = 0; b < z.b; ++b)
      for (int64_t h = 0; h < z.h; ++h)
        for (int64_t i = 0; i < z.s; ++i) {
          double delta = 0;
          for (int64_t e = 0; e < z.e; ++e)
            delta += double(dout[oAt(b, i, h) + e]) * double(out[oAt(b, i, h) + e]);
          for (int64_t j = 0; j < z.t; ++j) {
            if (!sees(i, j))
              continue;
            const double p = std::exp(score(q, k, b, i, j, h) - double(lse[lseAt(b, i, h)]));
            double dp = 0;
            for (int64_t e = 0; e < z.e; ++e)
              dp += double(dout[oAt(b, i, h) + e]) * double(v[vAt(b, j, h) + e]);
            const double ds = p * (dp - delta);
            for (int64_t e = 0; e < z.e; ++e)
              dv[vAt(b, j, h) + e] += p * double(dout[oAt(b, i, h) + e]);
            for (int64_t d = 0; d < z.d; ++d) {
              dq[qAt(b, i, h) + d] += scale * ds * double(k[kAt(b, j, h) + d]);
              dk[kAt(b, j, h) + d] += scale * ds * double(q[qAt(b, i, h) + d]);
            }
          }
        }
  }
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

/// got[i] against want[i] within tol * max(1, |want[i]|).
void expectNear(const char *what, const std::vector<float> &got, const std::vector<double> &want,
                double tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= tol * std::max(1.0, std::fabs(want[i])))) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
      ++reported;
    }
}

const Case kCases[] = {
    {{2, 37, 53, 3, 24, 40}, false, 0.2},  // S != T, D != E, ragged row groups and tiles
    {{1, 77, 77, 2, 64, 48}, true, 0.125}, // causal over three key tiles
    {{2, 70, 33, 2, 16, 8}, true, 0.25},   // causal, queries past the last key see them all
    {{1, 20, 90, 2, 32, 33}, true, 0.3},   // causal, keys past the last query get zeros
    {{1, 9, 41, 1, 7, 5}, false, 2.0},     // odd dimensions, wide scores (online rescaling)
    {{1, 19, 40, 1, 256, 256}, false, 0.0625}, // the largest head: > 48 KiB of shared memory
    {{1, 19, 40, 2, 256, 96}, true, 0.0625},
};

TEST(CudaAttention, ForwardMatchesTheReference) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(17);
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Case &c : kCases) {
      SCOPED_TRACE(describeCase(c, dtype));
      const Shapes &z = c.z;
      auto random = [&](int64_t n) { return randomValues(rng, dtype, n); };
      std::vector<float> q = random(z.b * z.s * z.h * z.d), k = random(z.b * z.t * z.h * z.d),
                         v = random(z.b * z.t * z.h * z.e);
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
      auto random = [&](int64_t n) { return randomValues(rng, dtype, n); };
      std::vector<float> q = random(z.b * z.s * z.h * z.d), k = random(z.b * z.t * z.h * z.d),
                         v = random(z.b * z.t * z.h * z.e), dout = random(z.b * z.s * z.h * z.e);
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
