// The CUDA device kernels (runtime/cuda/kernels/*.cu) run on the host under the emulation
// (Emulation.h: a fiber per thread, barriers and warp shuffles as a device has them), against
// the CPU kernels or a reference in double, on every machine: the kernels that have never run
// on a GPU (the norms with a residual add and the norm gradients, the fused attention and its
// gradient, the dropout mask) first, with the shapes the device tests use. What the emulation
// cannot see (timing, occupancy, CUDA's own expf/erff) the device tests still check
// (tests/unit/cuda, tests/gpu/run.sh). First, the emulation itself: barriers, shuffles,
// deadlocks and refused launches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/Workspace.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/kernels/Launch.h"
#include "tests/cuda_emulation/EmulatedCall.h"
#include "tests/cuda_emulation/EmulatedTestSupport.h"
#include "tests/cuda_emulation/Emulation.h"
#include "tests/unit/cuda/AttentionReference.h"
#include "tests/unit/cuda/TensorBytes.h"
#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait {
namespace {

using rt::DType;
using rt::test::OwnedTensor;
using namespace emulated_test;
namespace cuda = rt::cuda;

//===--- the emulation ----------------------------------------------------------------------===//

// Each thread writes its index to shared memory; after a barrier it reads its right
// neighbour's, then sums its warp by xor shuffles and takes lane 3's value by an indexed one.
__global__ void exchangeKernel(int *neighbour, int *warpSum, int *lane3) {
  __shared__ int values[1024];
  const int t = int(threadIdx.x);
  values[t] = t;
  __syncthreads();
  neighbour[t] = values[(t + 1) % int(blockDim.x)];
  int sum = t;
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  warpSum[t] = sum;
  lane3[t] = __shfl_sync(0xffffffffu, t, 3);
}

TEST(CudaEmulation, BarriersAndShufflesBehaveAsOnADevice) {
  const int threads = 96;
  std::vector<int> neighbour(threads), warpSum(threads), lane3(threads);
  plait_emu::Launch(1, threads)(exchangeKernel, neighbour.data(), warpSum.data(), lane3.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << plait_emu::lastFailure();
  for (int t = 0; t < threads; ++t) {
    const int warp = t / 32 * 32;
    EXPECT_EQ(neighbour[t], (t + 1) % threads) << t;
    EXPECT_EQ(warpSum[t], 32 * warp + 31 * 32 / 2) << t; // warp + (warp + 1) + ... + (warp + 31)
    EXPECT_EQ(lane3[t], warp + 3) << t;
  }
}

// Half the threads wait at __syncthreads while the other half wait in a warp shuffle: a
// device hangs; the emulation reports it and the launch fails.
__global__ void divergentKernel(int *out) {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 2);
}

TEST(CudaEmulation, ABarrierNotEveryThreadReachesIsADeadlock) {
  std::vector<int> out(64);
  plait_emu::Launch(1, 64)(divergentKernel, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(plait_emu::lastFailure().find("block (0, 0, 0) deadlocks: of 64 threads, 32 wait at "
                                          "__syncthreads, 32 at a warp shuffle, 0 have exited"),
            std::string::npos)
      << plait_emu::lastFailure();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess); // the error is cleared by reading it
}

__global__ void countKernel(int *count) { atomicAdd(count, 1); }

TEST(CudaEmulation, LaunchesADeviceRefusesDoNotRun) {
  int count = 0;
  plait_emu::Launch(1, 1025)(countKernel, &count);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  plait_emu::Launch(0, 32)(countKernel, &count);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  // More than 48 KiB of dynamic shared memory needs the kernel's attribute raised first.
  plait_emu::Launch(1, 32, 64 * 1024)(countKernel, &count);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(count, 0);
  ASSERT_EQ(cudaFuncSetAttribute(countKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 64 * 1024),
            cudaSuccess);
  plait_emu::Launch(3, 32, 64 * 1024)(countKernel, &count);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(count, 96);
}

//===--- norms --------------------------------------------------------------------------------===//

/// got (bytes of `dtype`) against the CPU kernel's result within tol * max(1, |want|).
void expectClose(const char *what, DType dtype, const std::vector<uint8_t> &got,
                 const OwnedTensor &want, double tol) {
  std::vector<float> w = want.floats();
  attention_test::expectNear(what, decode(dtype, got), std::vector<double>(w.begin(), w.end()),
                             tol);
}

/// f32 within 1e-5; bf16 within a unit in the last place (the kernels round once, from f32
/// values that may differ in their last bits).
double toleranceOf(DType dtype) { return dtype == DType::F32 ? 1e-5 : 1.0 / 128; }

// layer_norm, rms_norm, add_layer_norm and add_rms_norm, with and without a bias, f32 and
// bf16, over 37 rows of 200 (not a multiple of a warp or of the block).
TEST(EmulatedKernels, NormsMatchTheCpuKernels) {
  std::mt19937 rng(3);
  const int64_t rows = 37, n = 200;
  const double eps = 1e-5;
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool rms : {false, true})
      for (bool add : {false, true})
        for (bool bias : {false, true}) {
          if (rms && bias)
            continue;
          std::string name = std::string(add ? "add_" : "") + (rms ? "rms_norm" : "layer_norm");
          SCOPED_TRACE(name + " " + rt::dtypeName(dtype) + (bias ? " with a bias" : ""));
          OwnedTensor x = randomTensor(rng, dtype, {rows, n}, -2, 2),
                      residual = randomTensor(rng, dtype, {rows, n}, -2, 2),
                      scale = randomTensor(rng, dtype, {n}, 0.5, 1.5),
                      shift = randomTensor(rng, dtype, {n}, -1, 1);
          std::vector<OwnedTensor> inputs = {x};
          if (add)
            inputs.push_back(residual);
          inputs.push_back(scale);
          if (bias)
            inputs.push_back(shift);
          std::vector<std::pair<DType, std::vector<int64_t>>> results = {{dtype, {rows, n}}};
          if (add)
            results.push_back({dtype, {rows, n}});
          rt::test::KernelResult cpu = rt::test::runKernel(
              name, inputs, results, rt::test::AttrsBuilder().i("axis", 1).f("epsilon", eps).build());
          ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
          std::vector<uint8_t> xb = bytes(x), rb = bytes(residual), sb = bytes(scale),
                               bb = bytes(shift), y(xb.size()), sum(xb.size());
          ASSERT_EQ(cuda::launchNorm(rms, int(dtype), xb.data(), add ? rb.data() : nullptr,
                                     sb.data(), bias ? bb.data() : nullptr, y.data(),
                                     add ? sum.data() : nullptr, rows, n, eps, nullptr),
                    cudaSuccess)
              << plait_emu::lastFailure();
          expectClose("y", dtype, y, cpu.out(0), toleranceOf(dtype));
          if (add) // the sum is one rounding of x + residual: the same bits
            EXPECT_EQ(sum, bytes(cpu.out(1)));
        }
}

// layer_norm_grad (with and without dbias) and rms_norm_grad, f32 and bf16, over 300 rows
// (more than normGradBlocks: blocks take several rows each) of 96.
TEST(EmulatedKernels, NormGradientsMatchTheCpuKernels) {
  std::mt19937 rng(5);
  const int64_t rows = 300, n = 96;
  const double eps = 1e-5;
  ASSERT_GT(rows, cuda::normGradBlocks(rows));
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool rms : {false, true})
      for (bool bias : {false, true}) {
        if (rms && bias)
          continue;
        std::string name = rms ? "rms_norm_grad" : "layer_norm_grad";
        SCOPED_TRACE(name + " " + rt::dtypeName(dtype) + (bias ? " with dbias" : ""));
        OwnedTensor x = randomTensor(rng, dtype, {rows, n}, -2, 2),
                    scale = randomTensor(rng, dtype, {n}, 0.5, 1.5),
                    dy = randomTensor(rng, dtype, {rows, n}, -1, 1);
        std::vector<std::pair<DType, std::vector<int64_t>>> results = {{dtype, {rows, n}},
                                                                      {dtype, {n}}};
        if (bias)
          results.push_back({dtype, {n}});
        rt::test::KernelResult cpu =
            rt::test::runKernel(name, {x, scale, dy}, results,
                                rt::test::AttrsBuilder().i("axis", 1).f("epsilon", eps).build());
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        const int64_t params = bias ? 2 : 1;
        std::vector<double> partial(size_t(cuda::normGradBlocks(rows) * params * n));
        std::vector<uint8_t> xb = bytes(x), sb = bytes(scale), dyb = bytes(dy), dx(xb.size()),
                             dscale(sb.size()), dbias(sb.size());
        ASSERT_EQ(cuda::launchNormGrad(rms, int(dtype), xb.data(), sb.data(), dyb.data(),
                                       dx.data(), dscale.data(), bias ? dbias.data() : nullptr,
                                       partial.data(), rows, n, eps, nullptr),
                  cudaSuccess)
            << plait_emu::lastFailure();
        const double tol = dtype == DType::F32 ? 1e-4 : 2e-2;
        expectClose("dx", dtype, dx, cpu.out(0), tol);
        expectClose("dscale", dtype, dscale, cpu.out(1), tol);
        if (bias)
          expectClose("dbias", dtype, dbias, cpu.out(2), tol);
      }
}

// batch_norm and batch_norm_grad, f32 and bf16, over [3, 5, 7, 9] (63 values a row: each
// block strides across the rows of its channel), [37, 6] (one value a row) and [2, 300, 4]
// (300 blocks, a row of 4 each).
TEST(EmulatedKernels, BatchNormMatchesTheCpuKernels) {
  std::mt19937 rng(9);
  const double eps = 1e-5;
  for (DType dtype : {DType::F32, DType::BF16})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 5, 7, 9}, {37, 6}, {2, 300, 4}}) {
      SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " " + std::to_string(shape[1]) +
                   " channels");
      const int64_t channels = shape[1], batch = shape[0];
      int64_t spatial = 1;
      for (size_t d = 2; d < shape.size(); ++d)
        spatial *= shape[d];
      OwnedTensor x = randomTensor(rng, dtype, shape, 1, 3), // mean far from 0: two passes
          scale = randomTensor(rng, dtype, {channels}, 0.5, 1.5),
                  shift = randomTensor(rng, dtype, {channels}, -1, 1),
                  dy = randomTensor(rng, dtype, shape, -1, 1);
      rt::Attrs attrs = rt::test::AttrsBuilder().f("epsilon", eps).build();
      rt::test::KernelResult cpu =
          rt::test::runKernel("batch_norm", {x, scale, shift},
                              {{dtype, shape}, {dtype, {channels}}, {dtype, {channels}}}, attrs);
      ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
      std::vector<uint8_t> xb = bytes(x), sb = bytes(scale), bb = bytes(shift), y(xb.size()),
                           mean(sb.size()), var(sb.size());
      ASSERT_EQ(cuda::launchBatchNorm(int(dtype), xb.data(), sb.data(), bb.data(), nullptr, 0,
                                      y.data(), mean.data(), var.data(), batch, channels, spatial,
                                      eps, nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      expectClose("y", dtype, y, cpu.out(0), toleranceOf(dtype));
      expectClose("mean", dtype, mean, cpu.out(1), toleranceOf(dtype));
      expectClose("var", dtype, var, cpu.out(2), toleranceOf(dtype));

      // The gradient from the CPU forward's statistics.
      rt::test::KernelResult grad =
          rt::test::runKernel("batch_norm_grad", {x, scale, cpu.out(1), cpu.out(2), dy},
                              {{dtype, shape}, {dtype, {channels}}, {dtype, {channels}}}, attrs);
      ASSERT_TRUE(grad.status.ok()) << grad.status.message();
      std::vector<uint8_t> mb = bytes(cpu.out(1)), vb = bytes(cpu.out(2)), dyb = bytes(dy),
                           dx(xb.size()), dscale(sb.size()), dbias(sb.size());
      ASSERT_EQ(cuda::launchBatchNormGrad(int(dtype), xb.data(), sb.data(), mb.data(), vb.data(),
                                          dyb.data(), nullptr, dx.data(), dscale.data(),
                                          dbias.data(), batch, channels, spatial, eps, nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      const double tol = dtype == DType::F32 ? 1e-4 : 2e-2;
      expectClose("dx", dtype, dx, grad.out(0), tol);
      expectClose("dscale", dtype, dscale, grad.out(1), tol);
      expectClose("dbias", dtype, dbias, grad.out(2), tol);
    }
}

/// got (a CUDA kernel's result, any float dtype: f64 too) against the CPU kernel's `want`
/// within tol * max(1, |want|).
void expectCloseTensor(const char *what, const OwnedTensor &got, const OwnedTensor &want,
                       double tol) {
  std::vector<double> g = got.doubles(), w = want.doubles();
  ASSERT_EQ(g.size(), w.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < g.size() && reported < 5; ++i)
    if (!(std::fabs(g[i] - w[i]) <= tol * std::max(1.0, std::fabs(w[i])))) {
      ADD_FAILURE() << what << "[" << i << "] = " << g[i] << ", expected " << w[i];
      ++reported;
    }
}

// A SyncBatchNorm's kernels over a batch split between two ranks, f32, bf16 and f64, each
// rank's half [2, 5, 7, 9], [19, 6] or [1, 300, 4] (rows of 63, of one value, 300 blocks):
// batch_norm_stats of each half, batch_norm with both ranks' statistics gathered, then
// batch_norm_grad_sums of each half with the global mean and var, and batch_norm_grad with the
// rank-mean of both ranks' sums. Each CUDA kernel reads what its CPU twin reads (the CPU
// kernels' results of the step before), so that the comparisons do not compound: what the
// block sums over a channel (the statistics, the sums, dscale, dbias) agrees to rounding, and
// what follows elementwise from the same gathered statistics or mean sums (y, mean and var
// combined in rank order, dx) bit for bit.
TEST(EmulatedKernels, SyncBatchNormMatchesTheCpuKernels) {
  std::mt19937 rng(13);
  const double eps = 1e-5;
  const int64_t ranks = 2;
  for (DType dtype : {DType::F32, DType::BF16, DType::F64})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 5, 7, 9}, {19, 6}, {1, 300, 4}}) {
      SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " " + std::to_string(shape[1]) +
                   " channels");
      const int64_t channels = shape[1], batch = shape[0];
      int64_t spatial = 1;
      for (size_t d = 2; d < shape.size(); ++d)
        spatial *= shape[d];
      // The stats and sums vectors are of the compute type: f32 for bf16.
      const DType compute = dtype == DType::BF16 ? DType::F32 : dtype;
      const bool f64 = dtype == DType::F64;
      const double statsTol = f64 ? 1e-12 : toleranceOf(DType::F32);
      const double sumsTol = f64 ? 1e-10 : 1e-4;
      const double gradTol = f64 ? 1e-10 : dtype == DType::F32 ? 1e-4 : 2e-2;
      const OwnedTensor scale = randomTensor(rng, dtype, {channels}, 0.5, 1.5),
                        shift = randomTensor(rng, dtype, {channels}, -1, 1);
      std::vector<OwnedTensor> x, dy;
      for (int64_t r = 0; r < ranks; ++r) {
        x.push_back(randomTensor(rng, dtype, shape, 1, 3)); // mean far from 0: two passes
        dy.push_back(randomTensor(rng, dtype, shape, -1, 1));
      }
      const rt::Attrs attrs = rt::test::AttrsBuilder().f("epsilon", eps).build();
      const std::vector<std::pair<DType, std::vector<int64_t>>> results = {
          {dtype, shape}, {dtype, {channels}}, {dtype, {channels}}};

      // batch_norm_stats on each rank, all-gathered in rank order.
      std::vector<double> gathered;
      for (int64_t r = 0; r < ranks; ++r) {
        rt::test::KernelResult cpu =
            rt::test::runKernel("batch_norm_stats", {x[r]}, {{compute, {2 * channels}}}, attrs);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        OwnedTensor stats(compute, {2 * channels});
        ASSERT_EQ(cuda::launchBatchNormStats(int(dtype), x[r].view.data, stats.view.data, batch,
                                             channels, spatial, nullptr),
                  cudaSuccess)
            << plait_emu::lastFailure();
        expectCloseTensor("stats", stats, cpu.out(0), statsTol);
        std::vector<double> mine = cpu.out(0).doubles();
        gathered.insert(gathered.end(), mine.begin(), mine.end());
      }
      const OwnedTensor stats = rt::test::makeFloat(compute, {ranks * 2 * channels}, gathered);

      // batch_norm with the gathered statistics: every rank's mean and var the global ones.
      std::vector<rt::test::KernelResult> forward;
      for (int64_t r = 0; r < ranks; ++r) {
        forward.push_back(
            rt::test::runKernel("batch_norm", {x[r], scale, shift, stats}, results, attrs));
        const rt::test::KernelResult &cpu = forward.back();
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        OwnedTensor y(dtype, shape), mean(dtype, {channels}), var(dtype, {channels});
        ASSERT_EQ(cuda::launchBatchNorm(int(dtype), x[r].view.data, scale.view.data,
                                        shift.view.data, stats.view.data, ranks, y.view.data,
                                        mean.view.data, var.view.data, batch, channels, spatial,
                                        eps, nullptr),
                  cudaSuccess)
            << plait_emu::lastFailure();
        expectSameBits("y", y, cpu.out(0));
        expectSameBits("mean", mean, cpu.out(1));
        expectSameBits("var", var, cpu.out(2));
      }
      const OwnedTensor &mean = forward[0].out(1), &var = forward[0].out(2);

      // batch_norm_grad_sums on each rank with the global statistics, their rank-mean (a mean
      // all-reduce) the sums batch_norm_grad reads.
      std::vector<double> total(size_t(2 * channels));
      for (int64_t r = 0; r < ranks; ++r) {
        rt::test::KernelResult cpu = rt::test::runKernel(
            "batch_norm_grad_sums", {x[r], mean, var, dy[r]}, {{compute, {2 * channels}}}, attrs);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        OwnedTensor sums(compute, {2 * channels});
        ASSERT_EQ(cuda::launchBatchNormGradSums(int(dtype), x[r].view.data, mean.view.data,
                                                var.view.data, dy[r].view.data, sums.view.data,
                                                batch, channels, spatial, eps, nullptr),
                  cudaSuccess)
            << plait_emu::lastFailure();
        expectCloseTensor("sums", sums, cpu.out(0), sumsTol);
        std::vector<double> mine = cpu.out(0).doubles();
        for (size_t i = 0; i < total.size(); ++i)
          total[i] += mine[i];
      }
      for (double &t : total)
        t /= double(ranks);
      const OwnedTensor sums = rt::test::makeFloat(compute, {2 * channels}, total);

      // batch_norm_grad with the mean sums: dx from the global ones, dscale and dbias this
      // rank's own.
      for (int64_t r = 0; r < ranks; ++r) {
        rt::test::KernelResult cpu = rt::test::runKernel(
            "batch_norm_grad", {x[r], scale, mean, var, dy[r], sums}, results, attrs);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        OwnedTensor dx(dtype, shape), dscale(dtype, {channels}), dbias(dtype, {channels});
        ASSERT_EQ(cuda::launchBatchNormGrad(
                      int(dtype), x[r].view.data, scale.view.data, mean.view.data, var.view.data,
                      dy[r].view.data, sums.view.data, dx.view.data, dscale.view.data,
                      dbias.view.data, batch, channels, spatial, eps, nullptr),
                  cudaSuccess)
            << plait_emu::lastFailure();
        expectSameBits("dx", dx, cpu.out(0));
        expectCloseTensor("dscale", dscale, cpu.out(1), gradTol);
        expectCloseTensor("dbias", dbias, cpu.out(2), gradTol);
      }
    }
}

//===--- attention ----------------------------------------------------------------------------===//

using attention_test::Case;
using attention_test::Reference;

cuda::AttentionGeometry geometryOf(const Case &c) {
  cuda::AttentionGeometry g;
  g.batch = c.z.b, g.queries = c.z.s, g.keys = c.z.t, g.heads = c.z.h;
  g.qkDim = c.z.d, g.vDim = c.z.e, g.scale = c.scale, g.causal = c.causal;
  return g;
}

// The device tests' cases (tests/unit/cuda/AttentionReference.h): f32 and bf16, causal and
// not, S != T, D != E, several key tiles, the largest head dimension (its shared memory
// raised past 48 KiB by cudaFuncSetAttribute).
TEST(EmulatedKernels, AttentionMatchesTheReference) {
  std::mt19937 rng(17);
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Case &c : attention_test::kCases) {
      SCOPED_TRACE(attention_test::describeCase(c, dtype));
      const attention_test::Shapes &z = c.z;
      attention_test::Operands operands = attention_test::randomOperands(rng, dtype, z, false);
      const std::vector<float> &q = operands.q, &k = operands.k, &v = operands.v;
      std::vector<uint8_t> qb = encode(dtype, q), kb = encode(dtype, k), vb = encode(dtype, v);
      std::vector<uint8_t> out(bytesOf(dtype, size_t(z.b * z.s * z.h * z.e)));
      std::vector<float> lse(size_t(z.b * z.h * z.s));
      ASSERT_EQ(cuda::launchAttention(int(dtype), qb.data(), kb.data(), vb.data(), out.data(),
                                      lse.data(), geometryOf(c), nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      Reference ref{z, c.causal, c.scale};
      std::vector<double> wantOut, wantLse;
      ref.forward(q, k, v, wantOut, wantLse);
      attention_test::expectNear("out", decode(dtype, out), wantOut,
                                 dtype == DType::BF16 ? 2e-2 : 1e-5);
      attention_test::expectNear("lse", lse, wantLse, 1e-5);
    }
}

TEST(EmulatedKernels, AttentionGradientsMatchTheReference) {
  std::mt19937 rng(23);
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Case &c : attention_test::kCases) {
      SCOPED_TRACE(attention_test::describeCase(c, dtype));
      const attention_test::Shapes &z = c.z;
      attention_test::Operands operands = attention_test::randomOperands(rng, dtype, z, true);
      const std::vector<float> &q = operands.q, &k = operands.k, &v = operands.v,
                               &dout = operands.dout;
      Reference ref{z, c.causal, c.scale};
      std::vector<double> out64, lse64;
      ref.forward(q, k, v, out64, lse64);
      std::vector<float> out =
          attention_test::rounded(dtype, std::vector<float>(out64.begin(), out64.end()));
      std::vector<float> lse(lse64.begin(), lse64.end());
      std::vector<uint8_t> qb = encode(dtype, q), kb = encode(dtype, k), vb = encode(dtype, v),
                           ob = encode(dtype, out), db = encode(dtype, dout);
      std::vector<uint8_t> dq(qb.size()), dk(kb.size()), dv(vb.size());
      cuda::AttentionGeometry g = geometryOf(c);
      std::vector<float> delta(size_t(cuda::attentionGradWorkspaceFloats(g)));
      ASSERT_EQ(cuda::launchAttentionGrad(int(dtype), qb.data(), kb.data(), vb.data(), ob.data(),
                                          lse.data(), db.data(), dq.data(), dk.data(), dv.data(),
                                          delta.data(), g, nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      std::vector<double> wantDq, wantDk, wantDv;
      ref.grad(q, k, v, out, lse, dout, wantDq, wantDk, wantDv);
      const double tol = dtype == DType::BF16 ? 2e-2 : 1e-5;
      attention_test::expectNear("dq", decode(dtype, dq), wantDq, tol);
      attention_test::expectNear("dk", decode(dtype, dk), wantDk, tol);
      attention_test::expectNear("dv", decode(dtype, dv), wantDv, tol);
    }
}

//===--- dropout ------------------------------------------------------------------------------===//

// The mask of every element is the CPU kernel's, bit for bit: the same draw
// (codegen/schema/DropoutMask.h) keyed by seed, stream, step and rank.
TEST(EmulatedKernels, DropoutMaskIsTheCpuKernelsBitForBit) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (double ratio : {0.0, 0.1, 0.5}) {
      SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " ratio " + std::to_string(ratio));
      const int64_t n = 1000;
      const float step = 5;
      rt::test::KernelResult cpu = rt::test::runKernel(
          "dropout_mask", {rt::test::makeFloat(DType::F32, {1}, {step})}, {{dtype, {n}}},
          rt::test::AttrsBuilder().i("seed", 7).i("stream", 2).f("ratio", ratio).build());
      ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
      std::vector<uint8_t> mask(bytesOf(dtype, n));
      ASSERT_EQ(cuda::launchDropoutMask(int(dtype), &step, mask.data(), n, 7, 2, 0, ratio, nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      EXPECT_EQ(mask, bytes(cpu.out(0)));
    }
}

// plait.random's draws are the CPU kernel's, bit for bit, in every float type.
TEST(EmulatedKernels, RandomIsTheCpuKernelsBitForBit) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16})
    for (const char *distribution : {"uniform", "normal"}) {
      SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " " + distribution);
      const int64_t n = 1000;
      const float step = 3;
      const bool normal = std::string(distribution) == "normal";
      rt::test::KernelResult cpu = rt::test::runKernel(
          "random", {rt::test::makeFloat(DType::F32, {1}, {step})}, {{dtype, {n}}},
          rt::test::AttrsBuilder()
              .s("distribution", distribution)
              .f("a", -1.0)
              .f("b", 2.0)
              .i("seed", 7)
              .i("stream", 2)
              .build());
      ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
      std::vector<uint8_t> values(bytesOf(dtype, n));
      ASSERT_EQ(cuda::launchRandom(int(dtype), &step, values.data(), n, 7, 2, 0, normal, -1.0, 2.0,
                                   nullptr),
                cudaSuccess)
          << plait_emu::lastFailure();
      EXPECT_EQ(values, bytes(cpu.out(0)));
    }
}

//===--- local_shard -------------------------------------------------------------------------===//

// Each rank keeps its chunk (the chunk of its index within its group): through the CUDA
// backend's kernel (host side and copy) as through the CPU kernel, on every rank of two groups
// of two, for f32 and bf16.
TEST(EmulatedKernels, LocalShardKeepsEachRanksChunkAsTheCpuKernel) {
  rt::CudaKernelFn cudaFn = rt::findCudaKernel("local_shard");
  rt::KernelFn cpuFn = rt::findKernel("local_shard");
  ASSERT_NE(cudaFn, nullptr);
  ASSERT_NE(cpuFn, nullptr);
  std::mt19937 rng(31);
  const rt::Attrs attrs =
      rt::test::AttrsBuilder().ints("groups", {0, 2, 1, 3}).i("group_size", 2).build();
  for (DType dtype : {DType::F32, DType::BF16}) {
    OwnedTensor x = randomTensor(rng, dtype, {6, 10}, -1, 1);
    for (uint32_t rank = 0; rank < 4; ++rank) {
      SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " rank " + std::to_string(rank));
      std::vector<rt::TensorView> in = {x.view};
      OwnedTensor cpu(dtype, {3, 10}), emulated(dtype, {3, 10});
      std::vector<rt::TensorView> cpuOut = {cpu.view}, cudaOut = {emulated.view};
      rt::KernelCall host{in, cpuOut, attrs, rank, 4};
      ASSERT_TRUE(cpuFn(host).ok());
      std::vector<uint8_t> workspace;
      emu_test::EmulatedCall r =
          emu_test::callEmulated(cudaFn, in, cudaOut, attrs, rank, 4, workspace);
      ASSERT_TRUE(r.taken && r.status.ok()) << r.status.message();
      EXPECT_EQ(emulated.bytes, cpu.bytes);
    }
  }
}

} // namespace
} // namespace plait
