// The CUDA kernels' index arithmetic (runtime/cuda/kernels/IndexMath.h: which element each
// thread reads), run on the host and checked against the CPU kernels on integer data, where
// any misplaced element shows as an exact mismatch.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/Kernel.h"
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

} // namespace
} // namespace plait
