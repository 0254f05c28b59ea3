// The sharded Adafactor step's CUDA kernels (adafactor_stats, adafactor_norms, adafactor_update
// with segments): the checking calls (the workspace they ask for, an operand refused)
// everywhere; on a device, one step of a unit of a 6x70 matrix, a 3x2x5 batch of matrices and a
// vector of 9, cut into 2 shards (rank 0 is either, by the order of its group), each kernel
// against the CPU kernel on the same data, the sums fed to the next as the all-reduces would
// (skipped without a CUDA device).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/kernels/Launch.h"
#include "tests/unit/cuda/CudaTestSupport.h"
#include "tests/unit/cuda/DeviceBuffers.h"

namespace plait {
namespace {

using rt::DType;

// The unit: 420 + 30 + 9 = 459 elements, shards of 230 (the second ends with one of padding).
const std::vector<int64_t> kSegments = {420, 30, 9}, kFactors = {6, 70, 2, 5, 0, 0};
const std::vector<std::vector<int64_t>> kMoments = {{6}, {70}, {3, 2}, {3, 5}, {9}};
constexpr int64_t kShard = 230, kStats = 3 + 6 + 70 + 6 + 15 + 9;

rt::Attrs shardAttrs(int64_t index, bool update) {
  rt::Attrs attrs;
  auto ints = [&](const char *name, std::vector<int64_t> v) {
    rt::AttrValue a;
    a.ints = std::move(v);
    attrs.set(name, a);
  };
  ints("segments", kSegments);
  ints("factors", kFactors);
  ints("groups", index == 0 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 0});
  ints("group_size", {2});
  if (update) {
    rt::AttrValue beta1, decay;
    beta1.floats = {0.9};
    decay.floats = {0.01};
    attrs.set("beta1", beta1);
    attrs.set("weight_decay", decay);
  }
  return attrs;
}

/// Host data of one tensor and its view.
struct Tensor {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

Tensor floats(DType dtype, std::vector<int64_t> shape, std::mt19937 &rng, float lo, float hi) {
  Tensor t{dtype, std::move(shape), {}};
  std::uniform_real_distribution<float> value(lo, hi);
  std::vector<float> x(size_t(t.numel()));
  for (float &v : x)
    v = value(rng);
  if (dtype == DType::F64) {
    std::vector<double> d(x.begin(), x.end());
    t.bytes.resize(d.size() * 8);
    std::memcpy(t.bytes.data(), d.data(), t.bytes.size());
  } else {
    t.bytes = encode(dtype, x);
  }
  return t;
}

Tensor empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t{dtype, std::move(shape), {}};
  t.bytes.assign(size_t(t.numel()) * rt::dtypeSize(dtype), 0);
  return t;
}

/// Runs kernel `name` on the CPU and on the device with the same inputs (the inputs at
/// `scalars`, the lr and step, also given as host values) and checks each result; returns the
/// CPU's results.
std::vector<Tensor> runBoth(const std::string &name, const std::vector<Tensor> &inputs,
                            std::vector<Tensor> outputs, const rt::Attrs &attrs,
                            const std::vector<size_t> &scalars, double tolerance) {
  std::vector<rt::TensorView> in, out;
  for (const Tensor &t : inputs)
    in.push_back({const_cast<uint8_t *>(t.bytes.data()), t.dtype, t.shape});
  for (Tensor &t : outputs)
    out.push_back({t.bytes.data(), t.dtype, t.shape});
  rt::KernelCall cpu{in, out, attrs};
  rt::Status s = rt::findKernel(name)(cpu);
  EXPECT_TRUE(s.ok()) << s.message();
  // The device: copies of every operand, host copies of the hyper-parameters.
  DeviceBuffers memory;
  std::vector<rt::TensorView> din = in, dout = out;
  std::vector<double> hostValues(in.size());
  std::vector<const double *> hostScalars(in.size(), nullptr);
  for (size_t i = 0; i < din.size(); ++i) {
    din[i].data = memory.alloc(inputs[i].bytes.size());
    EXPECT_EQ(cudaMemcpy(din[i].data, inputs[i].bytes.data(), inputs[i].bytes.size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    if (std::find(scalars.begin(), scalars.end(), i) != scalars.end()) {
      hostValues[i] = inputs[i].dtype == DType::F64
                          ? *reinterpret_cast<const double *>(inputs[i].bytes.data())
                          : double(*reinterpret_cast<const float *>(inputs[i].bytes.data()));
      hostScalars[i] = &hostValues[i];
    }
  }
  std::vector<Tensor> device = outputs;
  for (size_t o = 0; o < dout.size(); ++o)
    dout[o].data = memory.alloc(device[o].bytes.size());
  uint64_t need = 0;
  rt::CudaKernelCall check{din, dout, attrs};
  check.check = true;
  check.workspaceNeeded = &need;
  check.hostScalars = &hostScalars;
  EXPECT_TRUE(rt::findCudaKernel(name)(check).ok());
  rt::CudaKernelCall call{din, dout, attrs};
  call.workspace = memory.alloc(need);
  call.workspaceBytes = need;
  call.hostScalars = &hostScalars;
  s = rt::findCudaKernel(name)(call);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t o = 0; o < dout.size(); ++o)
    EXPECT_EQ(cudaMemcpy(device[o].bytes.data(), dout[o].data, device[o].bytes.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const size_t n = size_t(outputs[o].numel());
    for (size_t i = 0; i < n; ++i) {
      double want, got;
      if (outputs[o].dtype == DType::F64) {
        want = reinterpret_cast<const double *>(outputs[o].bytes.data())[i];
        got = reinterpret_cast<const double *>(device[o].bytes.data())[i];
      } else {
        want = reinterpret_cast<const float *>(outputs[o].bytes.data())[i];
        got = reinterpret_cast<const float *>(device[o].bytes.data())[i];
      }
      EXPECT_NEAR(got, want, tolerance * std::max(1.0, std::fabs(want)))
          << name << " result " << o << " element " << i;
    }
  }
  return outputs;
}

TEST(CudaAdafactorShard, CheckingCallsAskForWorkspaceAndRefuseBadStats) {
  rt::TensorView shard{nullptr, DType::F32, {kShard}}, stats{nullptr, DType::F64, {kStats}};
  std::vector<rt::TensorView> in = {shard, shard}, out = {stats};
  rt::Attrs attrs = shardAttrs(0, false);
  uint64_t need = 0;
  rt::CudaKernelCall call{in, out, attrs};
  call.check = true;
  call.workspaceNeeded = &need;
  rt::Status s = rt::findCudaKernel("adafactor_stats")(call);
  ASSERT_TRUE(s.ok()) << s.message();
  // Rank 0's shard: the 6x70 matrix's first 230 elements, 4 of its rows (one batch), 4 slots'
  // sums and the step size and divisor.
  EXPECT_EQ(need, rt::cuda::adafactorShardWorkspaceBytes(230, 1));
  std::vector<rt::TensorView> bad = {{nullptr, DType::F64, {kStats - 1}}};
  rt::CudaKernelCall wrong{in, bad, attrs};
  wrong.check = true;
  wrong.workspaceNeeded = &need;
  EXPECT_EQ(rt::findCudaKernel("adafactor_stats")(wrong).message(),
            "adafactor_stats: stats must be f64 [109], got f64 [108]");
}

TEST(CudaAdafactorShard, EachKernelMatchesTheCpuKernel) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(5);
  std::vector<Tensor> params, grads, moments;
  for (int r = 0; r < 2; ++r) {
    params.push_back(floats(DType::F32, {kShard}, rng, -2, 2));
    grads.push_back(floats(DType::F32, {kShard}, rng, -0.5, 0.5));
  }
  for (const std::vector<int64_t> &shape : kMoments)
    moments.push_back(floats(DType::F32, shape, rng, 0.01f, 0.2f));
  Tensor step = empty(DType::F32, {}), lr = empty(DType::F64, {});
  const float three = 3;
  const double rate = 1e-2;
  std::memcpy(step.bytes.data(), &three, 4);
  std::memcpy(lr.bytes.data(), &rate, 8);
  // The sums over both shards, as the all-reduces give them.
  std::vector<double> stats(kStats, 0.0), norms(3, 0.0);
  for (int r = 0; r < 2; ++r) {
    Tensor s = runBoth("adafactor_stats", {params[r], grads[r]}, {empty(DType::F64, {kStats})},
                       shardAttrs(r, false), {}, 1e-12)[0];
    for (size_t i = 0; i < stats.size(); ++i)
      stats[i] += reinterpret_cast<const double *>(s.bytes.data())[i];
  }
  Tensor statsTensor = empty(DType::F64, {kStats});
  std::memcpy(statsTensor.bytes.data(), stats.data(), stats.size() * 8);
  for (int r = 0; r < 2; ++r) {
    std::vector<Tensor> in = {params[r], grads[r], step, statsTensor};
    in.insert(in.end(), moments.begin(), moments.end());
    Tensor n = runBoth("adafactor_norms", in, {empty(DType::F64, {3})}, shardAttrs(r, false), {2},
                       1e-9)[0];
    for (size_t i = 0; i < norms.size(); ++i)
      norms[i] += reinterpret_cast<const double *>(n.bytes.data())[i];
  }
  Tensor normsTensor = empty(DType::F64, {3});
  std::memcpy(normsTensor.bytes.data(), norms.data(), norms.size() * 8);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("shard " + std::to_string(r));
    Tensor m = floats(DType::F32, {kShard}, rng, -0.05f, 0.05f);
    std::vector<Tensor> in = {params[r], grads[r], lr, step, m};
    std::vector<Tensor> out = {empty(DType::F32, {kShard}), empty(DType::F32, {kShard})};
    for (const Tensor &t : moments) {
      in.push_back(t);
      out.push_back(empty(DType::F32, t.shape));
    }
    in.push_back(statsTensor);
    in.push_back(normsTensor);
    runBoth("adafactor_update", in, out, shardAttrs(r, true), {2, 3}, 1e-5);
  }
}

} // namespace
} // namespace plait
