// The CUDA kernels' index arithmetic (runtime/cuda/kernels/IndexMath.h: which element each
// thread reads), run on the host and checked against the CPU kernels on integer data, where
// any misplaced element shows as an exact mismatch.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/cpu/PoolSupport.h"
#include "runtime/cuda/CudaGemmPlan.h"
#include "runtime/cuda/CudaKernelSupport.h"
#include "runtime/cuda/kernels/IndexMath.h"

namespace plait {
namespace {

using namespace rt::cuda;
namespace cpu = rt::cpu;

/// Runs CPU kernel `name` on i64 tensors; returns output 0.
std::vector<int64_t> runCpu(const std::string &name, std::vector<std::vector<int64_t>> inputs,
                            std::vector<std::vector<int64_t>> shapes,
                            std::vector<int64_t> outShape, const rt::Attrs &attrs = {},
                            rt::DType outType = rt::DType::I64) {
  std::vector<rt::TensorView> in, out;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back({inputs[i].data(), rt::DType::I64, shapes[i]});
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<int64_t> result(size_t(std::max<int64_t>(n, 1)), -777);
  out.push_back({result.data(), outType, outShape});
  std::vector<uint8_t> workspace(1 << 20);
  rt::KernelCall call{in, out, attrs};
  call.workspace = workspace.data();
  call.workspaceBytes = workspace.size();
  rt::Status s = rt::findKernel(name)(call);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  result.resize(size_t(n));
  return result;
}

std::vector<int64_t> iota(int64_t n, int64_t from = 1) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = from + i * 7 % 1000003;
  return v;
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

rt::AttrValue ints(std::vector<int64_t> v) {
  rt::AttrValue a;
  a.ints = std::move(v);
  return a;
}

// Binary ops read each operand at strided(g, k, i): checked against the CPU's add.
TEST(IndexMath, BroadcastOffsetsMatchTheCpuWalk) {
  const std::vector<std::array<std::vector<int64_t>, 2>> cases = {
      {{{2, 3, 4}, {4}}},       {{{2, 1, 4}, {1, 3, 1}}}, {{{5}, {1}}},
      {{{2, 3, 1, 5}, {3, 4, 1}}}, {{{1, 1, 6}, {2, 3, 1}}}, {{{}, {2, 2}}}};
  for (const auto &[aShape, bShape] : cases) {
    cpu::Dims out;
    ASSERT_TRUE(cpu::broadcastShapes(aShape, bShape, out));
    std::vector<int64_t> outShape(out.begin(), out.end());
    std::vector<int64_t> a = iota(numel(aShape), 1), b = iota(numel(bShape), 100000);
    std::vector<int64_t> expected = runCpu("add", {a, b}, {aShape, bShape}, outShape);
    StridedGeometry g = toGeometry(cpu::planBroadcast<2>(outShape, {aShape, bShape}));
    for (int64_t i = 0; i < numel(outShape); ++i)
      ASSERT_EQ(a[size_t(indexing::strided(g, 0, i))] + b[size_t(indexing::strided(g, 1, i))],
                expected[size_t(i)])
          << "element " << i << " of " << rt::shapeString(outShape);
  }
}

// The reduction kernels sum x[reduceBase(o) + reduceStep(r)] over r: checked against the
// CPU's reduce_sum for several axis sets (integers: sums are exact in any order).
TEST(IndexMath, ReductionOffsetsMatchTheCpuReductions) {
  const std::vector<int64_t> shape = {3, 4, 5, 2};
  const std::vector<std::vector<int64_t>> axesSets = {{}, {0}, {1}, {3}, {0, 2}, {1, 3}, {-1, 0}};
  std::vector<int64_t> x = iota(numel(shape));
  for (const std::vector<int64_t> &axes : axesSets)
    for (bool keepdims : {false, true}) {
      cpu::Dims outShape;
      ReduceGeometry g;
      ASSERT_TRUE(planReduceGeometry("reduce_sum", shape, axes, keepdims, outShape, g).ok());
      rt::Attrs attrs;
      attrs.set("axes", ints(axes));
      attrs.set("keepdims", ints({keepdims}));
      std::vector<int64_t> out(outShape.begin(), outShape.end());
      std::vector<int64_t> expected = runCpu("reduce_sum", {x}, {shape}, out, attrs);
      ASSERT_EQ(g.outCount, int64_t(expected.size()));
      for (int64_t o = 0; o < g.outCount; ++o) {
        int64_t sum = 0;
        for (int64_t r = 0; r < g.reducedCount; ++r)
          sum += x[size_t(indexing::reduceBase(g, o) + indexing::reduceStep(g, r))];
        ASSERT_EQ(sum, expected[size_t(o)]) << "output " << o << ", " << axes.size() << " axes";
      }
    }
}

TEST(IndexMath, PadSourcesMatchTheCpuPad) {
  const std::vector<int64_t> shape = {2, 3, 4};
  const std::vector<int64_t> pads = {1, 0, 2, 0, 3, 1};
  std::vector<int64_t> outShape = {3, 6, 7};
  rt::Attrs attrs;
  attrs.set("pads", ints(pads));
  rt::AttrValue value;
  value.floats = {-5};
  attrs.set("value", value);
  std::vector<int64_t> x = iota(numel(shape));
  std::vector<int64_t> expected = runCpu("pad", {x}, {shape}, outShape, attrs);
  PadGeometry g;
  g.rank = 3;
  for (int d = 0; d < 3; ++d) {
    g.outShape[d] = outShape[size_t(d)];
    g.inShape[d] = shape[size_t(d)];
    g.padBegin[d] = pads[size_t(d)];
  }
  for (int64_t i = 0; i < numel(outShape); ++i) {
    int64_t source = indexing::padSource(g, i);
    ASSERT_EQ(source >= 0 ? x[size_t(source)] : -5, expected[size_t(i)]) << "element " << i;
  }
}

TEST(IndexMath, TriluKeepsWhatTheCpuKeeps) {
  const std::vector<int64_t> shape = {2, 4, 5};
  std::vector<int64_t> x = iota(numel(shape));
  for (bool upper : {true, false})
    for (int64_t k : {-2, 0, 1, 7}) {
      rt::Attrs attrs;
      attrs.set("upper", ints({upper}));
      attrs.set("k", ints({k}));
      std::vector<int64_t> expected = runCpu("trilu", {x}, {shape}, shape, attrs);
      for (int64_t i = 0; i < numel(shape); ++i)
        ASSERT_EQ(indexing::triluKeeps(i, 4, 5, upper, k) ? x[size_t(i)] : 0, expected[size_t(i)])
            << "upper " << upper << " k " << k << " element " << i;
    }
}

/// Runs CPU kernel `name` on f32 tensors; returns output 0 (of `outShape`).
std::vector<float> runCpuF32(const std::string &name, std::vector<std::vector<float>> inputs,
                             std::vector<std::vector<int64_t>> shapes,
                             std::vector<int64_t> outShape, const rt::Attrs &attrs) {
  std::vector<rt::TensorView> in, out;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back({inputs[i].data(), rt::DType::F32, shapes[i]});
  std::vector<float> result(size_t(numel(outShape)), -777.0f);
  out.push_back({result.data(), rt::DType::F32, outShape});
  std::vector<uint8_t> workspace(1 << 20);
  rt::KernelCall call{in, out, attrs};
  call.workspace = workspace.data();
  call.workspaceBytes = workspace.size();
  rt::Status s = rt::findKernel(name)(call);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return result;
}

// The pool kernels' windows (poolArgmax, avgSpan, avgDivisor), their forward values and the
// gradients their adjoints scatter, against the CPU pools, with padding, strides, dilation
// and both divisor rules. Small integers: every sum is exact, whatever its order.
TEST(IndexMath, PoolWindowsMatchTheCpuPools) {
  const std::vector<int64_t> xShape = {2, 3, 7, 6};
  std::vector<float> x(size_t(numel(xShape)));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int64_t(i * 37 % 23) - 11); // ties included
  struct Case {
    std::vector<int64_t> kernel, strides, pads, dilations;
    bool countPad;
  };
  const Case cases[] = {{{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
                        {{3, 3}, {1, 2}, {1, 1, 1, 0}, {1, 1}, false},
                        {{3, 2}, {2, 1}, {1, 0, 1, 1}, {1, 1}, true},
                        {{2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 1}, false}};
  for (const Case &c : cases)
    for (bool max : {true, false}) {
      if (!max && c.dilations[0] != 1)
        continue; // avg_pool2d has no dilations
      rt::Attrs attrs;
      attrs.set("kernel", ints(c.kernel));
      attrs.set("strides", ints(c.strides));
      attrs.set("pads", ints(c.pads));
      if (max)
        attrs.set("dilations", ints(c.dilations));
      attrs.set("count_include_pad", ints({c.countPad}));
      // The pooled shape from the CPU's own rules.
      std::vector<float> scratch(1);
      rt::TensorView xv{x.data(), rt::DType::F32, xShape};
      cpu::PoolShape s;
      std::vector<int64_t> yShape = {2, 3, 0, 0};
      {
        cpu::Window2d w;
        w.kernel[0] = c.kernel[0];
        w.kernel[1] = c.kernel[1];
        ASSERT_TRUE(cpu::parseWindow(max ? "max_pool2d" : "avg_pool2d", attrs, max, w).ok());
        yShape[2] = w.outputSize(0, xShape[2]);
        yShape[3] = w.outputSize(1, xShape[3]);
      }
      rt::TensorView yv{scratch.data(), rt::DType::F32, yShape};
      ASSERT_TRUE(cpu::planPoolShape("pool", attrs, max, xv, yv, "output", s).ok());
      PoolGeometry g = poolGeometry(s, c.countPad);
      std::vector<float> forward = runCpuF32(max ? "max_pool2d" : "avg_pool2d", {x}, {xShape},
                                             yShape, attrs);
      std::vector<float> dy(forward.size());
      for (size_t i = 0; i < dy.size(); ++i)
        dy[i] = float(int64_t(i % 5) + 1);
      std::vector<float> backward =
          max ? runCpuF32("max_pool2d_grad", {x, dy}, {xShape, yShape}, xShape, attrs)
              : runCpuF32("avg_pool2d_grad", {dy}, {yShape}, xShape, attrs);
      std::vector<double> acc(x.size(), 0.0); // the device's atomic adds, in some order
      for (int64_t i = 0; i < numel(yShape); ++i) {
        int64_t plane, oh, ow;
        indexing::poolOutput(g, i, plane, oh, ow);
        const float *p = x.data() + plane * g.height * g.width;
        if (max) {
          float value;
          int64_t at = indexing::poolArgmax(
              g, oh, ow, [p](int64_t k) { return p[k]; }, value);
          ASSERT_EQ(value, forward[size_t(i)]) << "max window " << i;
          if (at >= 0)
            acc[size_t(plane * g.height * g.width + at)] += dy[size_t(i)];
        } else {
          indexing::AvgSpan rows = indexing::avgSpan(g, 0, oh, g.height);
          indexing::AvgSpan cols = indexing::avgSpan(g, 1, ow, g.width);
          int64_t count = indexing::avgDivisor(rows, cols, g.countIncludePad);
          double sum = 0;
          for (int64_t h = rows.begin; h < rows.end; ++h)
            for (int64_t w = cols.begin; w < cols.end; ++w)
              sum += p[h * g.width + w];
          ASSERT_EQ(float(count > 0 ? sum / double(count) : 0.0), forward[size_t(i)])
              << "avg window " << i;
          if (count > 0) {
            float share = float(double(dy[size_t(i)]) / double(count));
            for (int64_t h = rows.begin; h < rows.end; ++h)
              for (int64_t w = cols.begin; w < cols.end; ++w)
                acc[size_t(plane * g.height * g.width + h * g.width + w)] += share;
          }
        }
      }
      for (size_t e = 0; e < x.size(); ++e)
        ASSERT_NEAR(acc[e], backward[e], 1e-5) << (max ? "max" : "avg") << " grad " << e;
    }
}

// A matmul as the CUDA backend plans it (planCudaMatmul: folds, strided calls, per-call
// offsets, transposes and pitches), evaluated on the host with the device GEMMs' offsets
// (gemmOffsetA/B), against the CPU matmul: what cuBLASLt and the fallback kernel are given.
TEST(IndexMath, PlannedGemmsComputeTheCpuMatmul) {
  struct Case {
    std::vector<int64_t> a, b, out;
    std::vector<std::pair<std::string, std::vector<int64_t>>> attrs;
  };
  const Case cases[] = {
      {{4, 6, 5}, {5, 3}, {4, 6, 3}, {}},                           // folds into M
      {{2, 4, 3, 5}, {2, 4, 3, 5}, {2, 4, 3, 3}, {{"transpose_rhs", {1}}}},
      {{2, 4, 5, 3}, {2, 4, 5, 3}, {2, 4, 3, 3}, {{"transpose_lhs", {1}}}},
      {{2, 1, 3, 4}, {1, 5, 4, 6}, {2, 5, 3, 6}, {}},               // broadcast batches
      {{2, 6, 4, 5}, {2, 6, 4, 5}, {2, 4, 6, 6},                    // attention via perms
       {{"lhs_perm", {0, 2, 1, 3}}, {"rhs_perm", {0, 2, 3, 1}}}},
      {{2, 6, 4, 5}, {2, 4, 5, 6}, {2, 6, 4, 6},                    // result_perm
       {{"lhs_perm", {0, 2, 1, 3}}, {"result_perm", {0, 2, 1, 3}}}},
      {{5}, {5, 3}, {3}, {}},                                       // vector promotion
      {{3, 5}, {5}, {3}, {}}};
  for (const Case &c : cases) {
    rt::Attrs attrs;
    for (const auto &[name, values] : c.attrs)
      attrs.set(name, ints(values));
    std::vector<float> a(size_t(numel(c.a))), b(size_t(numel(c.b)));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(int64_t(i * 13 % 11) - 5);
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(int64_t(i * 7 % 9) - 4);
    std::vector<float> expected = runCpuF32("matmul", {a, b}, {c.a, c.b}, c.out, attrs);
    rt::GemmPlan plan;
    rt::Status planned = rt::planCudaMatmul(attrs, {nullptr, rt::DType::F32, c.a},
                                            {nullptr, rt::DType::F32, c.b},
                                            {nullptr, rt::DType::F32, c.out}, plan);
    ASSERT_TRUE(planned.ok()) << planned.message();
    GemmGeometry g = rt::gemmGeometryOf(plan);
    std::vector<float> got(expected.size(), -777.0f);
    for (int64_t call = 0; call < plan.calls(); ++call) {
      int64_t baseA = plan.offA.empty() ? 0 : plan.offA[size_t(call)];
      int64_t baseB = plan.offB.empty() ? 0 : plan.offB[size_t(call)];
      int64_t baseC = plan.offC.empty() ? 0 : plan.offC[size_t(call)];
      for (int64_t e = 0; e < g.batch; ++e)
        for (int64_t i = 0; i < g.m; ++i)
          for (int64_t j = 0; j < g.n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < g.k; ++p)
              sum += double(a[size_t(baseA + e * g.strideA + indexing::gemmOffsetA(g, i, p))]) *
                     double(b[size_t(baseB + e * g.strideB + indexing::gemmOffsetB(g, p, j))]);
            got[size_t(baseC + e * g.strideC + i * g.ldc + j)] = float(sum);
          }
    }
    EXPECT_EQ(got, expected) << rt::shapeString(c.a) << " x " << rt::shapeString(c.b);

    // The same GEMMs as cuBLASLt is asked for them (ltCallOf), evaluated with BLAS's
    // column-major semantics: D[r + c * ldc] = sum_p op(A)[r, p] op(B)[p, c], where a
    // layout (rows, cols, ld) holds element (r, c) at r + c * ld and op transposes.
    rt::LtCall lt = rt::ltCallOf(plan);
    int64_t mm = lt.transA ? lt.aCols : lt.aRows, kk = lt.transA ? lt.aRows : lt.aCols;
    int64_t nn = lt.transB ? lt.bRows : lt.bCols;
    ASSERT_EQ(kk, lt.transB ? lt.bCols : lt.bRows);
    ASSERT_EQ(mm, lt.cRows);
    ASSERT_EQ(nn, lt.cCols);
    ASSERT_GE(lt.lda, lt.aRows);
    ASSERT_GE(lt.ldb, lt.bRows);
    ASSERT_GE(lt.ldc, lt.cRows);
    std::vector<float> viaLt(expected.size(), -777.0f);
    for (int64_t call = 0; call < plan.calls(); ++call) {
      // cuBLASLt's A pointer is our B, its B our A.
      const float *pa = b.data() + (plan.offB.empty() ? 0 : plan.offB[size_t(call)]);
      const float *pb = a.data() + (plan.offA.empty() ? 0 : plan.offA[size_t(call)]);
      float *pc = viaLt.data() + (plan.offC.empty() ? 0 : plan.offC[size_t(call)]);
      for (int64_t e = 0; e < lt.batch; ++e)
        for (int64_t r = 0; r < mm; ++r)
          for (int64_t col = 0; col < nn; ++col) {
            double sum = 0;
            for (int64_t p = 0; p < kk; ++p) {
              double x = lt.transA ? pa[e * lt.strideA + p + r * lt.lda]
                                   : pa[e * lt.strideA + r + p * lt.lda];
              double y = lt.transB ? pb[e * lt.strideB + col + p * lt.ldb]
                                   : pb[e * lt.strideB + p + col * lt.ldb];
              sum += x * y;
            }
            pc[e * lt.strideC + r + col * lt.ldc] = float(sum);
          }
    }
    EXPECT_EQ(viaLt, expected) << "cuBLASLt mapping: " << rt::shapeString(c.a) << " x "
                               << rt::shapeString(c.b);
  }
}

// ONNX Gemm (the mlp's and cnn's linear layers): planOnnxGemm through the cuBLASLt mapping,
// with the bias broadcast into the result first and beta applied by the GEMM, against the
// CPU's gemm for every transpose combination.
TEST(IndexMath, OnnxGemmThroughTheCuBlasLtMappingMatchesTheCpu) {
  const int64_t m = 3, k = 4, n = 5;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      std::vector<int64_t> aShape = transA ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
      std::vector<int64_t> bShape = transB ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
      std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      std::vector<float> bias(static_cast<size_t>(n));
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = float(int64_t(i * 5 % 7) - 3);
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = float(int64_t(i * 3 % 8) - 4);
      for (size_t i = 0; i < bias.size(); ++i)
        bias[i] = float(i) - 2;
      rt::Attrs attrs;
      attrs.set("trans_a", ints({transA}));
      attrs.set("trans_b", ints({transB}));
      rt::AttrValue alpha, beta;
      alpha.floats = {2.0};
      beta.floats = {0.5};
      attrs.set("alpha", alpha);
      attrs.set("beta", beta);
      std::vector<float> expected =
          runCpuF32("gemm", {a, b, bias}, {aShape, bShape, {n}}, {m, n}, attrs);
      rt::LtCall lt = rt::ltCallOf(rt::planOnnxGemm(transA, transB, aShape, bShape));
      std::vector<float> c(size_t(m * n));
      for (int64_t i = 0; i < m; ++i) // the bias broadcast into C (launchStridedCopy)
        for (int64_t j = 0; j < n; ++j)
          c[size_t(i * n + j)] = bias[size_t(j)];
      int64_t mm = lt.transA ? lt.aCols : lt.aRows, kk = lt.transA ? lt.aRows : lt.aCols;
      int64_t nn = lt.transB ? lt.bRows : lt.bCols;
      ASSERT_EQ(mm, n);
      ASSERT_EQ(nn, m);
      ASSERT_EQ(kk, k);
      for (int64_t r = 0; r < mm; ++r)
        for (int64_t col = 0; col < nn; ++col) {
          double sum = 0;
          for (int64_t p = 0; p < kk; ++p)
            sum += double(lt.transA ? b[size_t(p + r * lt.lda)] : b[size_t(r + p * lt.lda)]) *
                   double(lt.transB ? a[size_t(col + p * lt.ldb)] : a[size_t(p + col * lt.ldb)]);
          float &out = c[size_t(r + col * lt.ldc)];
          out = float(2.0 * sum + 0.5 * double(out));
        }
      EXPECT_EQ(c, expected) << "trans_a " << transA << " trans_b " << transB;
    }
}

// gather and gather_grad read and scatter through gatherIndex / gatherOffset /
// normalizedIndex: checked against the CPU's gather and gather_grad (negative indices,
// repeats, every axis).
TEST(IndexMath, GatherOffsetsMatchTheCpuGather) {
  const std::vector<int64_t> dataShape = {3, 5, 2};
  const std::vector<int64_t> indices = {4, -1, 0, 2, 2, -5};
  std::vector<int64_t> data = iota(numel(dataShape));
  for (int64_t axis : {0, 1, 2}) {
    int64_t size = dataShape[size_t(axis)];
    std::vector<int64_t> valid;
    for (int64_t v : indices)
      if (v >= -size && v < size)
        valid.push_back(v);
    std::vector<int64_t> idxShape = {int64_t(valid.size())};
    std::vector<int64_t> outShape(dataShape.begin(), dataShape.begin() + axis);
    outShape.push_back(int64_t(valid.size()));
    outShape.insert(outShape.end(), dataShape.begin() + axis + 1, dataShape.end());
    rt::Attrs attrs;
    attrs.set("axis", ints({axis}));
    std::vector<int64_t> expected = runCpu("gather", {data, valid}, {dataShape, idxShape},
                                           outShape, attrs);
    int64_t outer = 1, inner = 1, count = int64_t(valid.size());
    for (int64_t d = 0; d < axis; ++d)
      outer *= dataShape[size_t(d)];
    for (size_t d = size_t(axis) + 1; d < dataShape.size(); ++d)
      inner *= dataShape[d];
    std::vector<int64_t> scattered(data.size(), 0); // what gather_grad of `expected` adds up
    for (int64_t i = 0; i < outer * count * inner; ++i) {
      int64_t q;
      int64_t row = indexing::normalizedIndex(valid[size_t(indexing::gatherIndex(i, inner,
                                                                                 count, q))],
                                              size);
      ASSERT_GE(row, 0);
      int64_t at = indexing::gatherOffset(i, row, size, inner, count);
      ASSERT_EQ(data[size_t(at)], expected[size_t(i)]) << "axis " << axis << " element " << i;
      scattered[size_t(at)] += expected[size_t(i)];
    }
    // The CPU's gather_grad of `expected` (as f32) must equal the scatter above.
    std::vector<float> grad(expected.begin(), expected.end()), result(data.size(), -1.0f);
    std::vector<rt::TensorView> in{{grad.data(), rt::DType::F32, outShape},
                                   {const_cast<int64_t *>(valid.data()), rt::DType::I64, idxShape}};
    std::vector<rt::TensorView> out{{result.data(), rt::DType::F32, dataShape}};
    std::vector<uint8_t> workspace(1 << 16);
    rt::KernelCall call{in, out, attrs};
    call.workspace = workspace.data();
    call.workspaceBytes = workspace.size();
    ASSERT_TRUE(rt::findKernel("gather_grad")(call).ok());
    for (size_t e = 0; e < data.size(); ++e)
      ASSERT_EQ(double(result[e]), double(scattered[e])) << "axis " << axis << " grad " << e;
  }
}

/// cudaMemcpy2D on the host: `rows` rows of `width` bytes from src (pitch spitch) to dst
/// (pitch dpitch). Nothing for an empty part, as the kernels skip it (whose buffer may be
/// null: memcpy must not see it).
void copy2d(void *dst, int64_t dpitch, const void *src, int64_t spitch, int64_t width,
            int64_t rows) {
  if (width <= 0 || rows <= 0)
    return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char *>(dst) + r * dpitch,
                static_cast<const char *>(src) + r * spitch, size_t(width));
}

// concat and split are one 2-D copy per part (slabCopies): emulated here with the arguments
// cudaMemcpy2DAsync gets, against the CPU's concat and split.
TEST(IndexMath, SlabCopiesConcatAndSplitAsTheCpu) {
  const std::vector<int64_t> whole = {2, 7, 3};
  for (int64_t axis : {0, 1, 2}) {
    std::vector<int64_t> sizes = axis == 0 ? std::vector<int64_t>{1, 1}
                                 : axis == 1 ? std::vector<int64_t>{2, 0, 4, 1}
                                             : std::vector<int64_t>{1, 2};
    std::vector<int64_t> x = iota(numel(whole));
    std::vector<std::vector<int64_t>> parts, shapes;
    std::vector<SlabCopy> copies = slabCopies(whole, axis, sizes, sizeof(int64_t));
    ASSERT_EQ(copies.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<int64_t> shape = whole;
      shape[size_t(axis)] = sizes[i];
      shapes.push_back(shape);
      parts.emplace_back(size_t(numel(shape)), -1);
      const SlabCopy &c = copies[i];
      copy2d(parts.back().data(), c.width, reinterpret_cast<const char *>(x.data()) + c.offset,
             c.pitch, c.width, c.rows); // split
    }
    // The CPU's split, part by part (runCpu returns output 0: split off each part in turn).
    rt::Attrs splitAttrs;
    splitAttrs.set("axis", ints({axis}));
    splitAttrs.set("sizes", ints(sizes));
    {
      std::vector<rt::TensorView> in{{x.data(), rt::DType::I64, whole}}, out;
      std::vector<std::vector<int64_t>> expected;
      for (const auto &shape : shapes)
        expected.emplace_back(size_t(numel(shape)), -2);
      for (size_t i = 0; i < shapes.size(); ++i)
        out.push_back({expected[i].data(), rt::DType::I64, shapes[i]});
      rt::KernelCall call{in, out, splitAttrs};
      ASSERT_TRUE(rt::findKernel("split")(call).ok());
      EXPECT_EQ(parts, expected) << "split along " << axis;
    }
    std::vector<int64_t> joined(x.size(), -3);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const SlabCopy &c = copies[i];
      copy2d(reinterpret_cast<char *>(joined.data()) + c.offset, c.pitch, parts[i].data(),
             c.width, c.width, c.rows); // concat
    }
    rt::Attrs concatAttrs;
    concatAttrs.set("axis", ints({axis}));
    EXPECT_EQ(runCpu("concat", parts, shapes, whole, concatAttrs), joined) << "concat " << axis;
    EXPECT_EQ(joined, x);
  }
}

} // namespace
} // namespace plait
