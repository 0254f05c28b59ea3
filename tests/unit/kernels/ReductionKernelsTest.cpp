// Reductions over axes (keepdims, negative axes, all axes), argmax/argmin and top_k.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

// x[i][j][k] = i*12 + j*4 + k over [2, 3, 4].
OwnedTensor iota234() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i)
    v[i] = float(i);
  return make<float>({2, 3, 4}, v);
}

Attrs axesAttrs(std::vector<int64_t> axes, bool keepdims) {
  return AttrsBuilder().ints("axes", std::move(axes)).i("keepdims", keepdims).build();
}

TEST(ReductionKernels, SumOverEachAxis) {
  auto x = iota234();
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {3, 4}, axesAttrs({0}, false)).floats(),
                       {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {2, 1, 4}, axesAttrs({1}, true)).floats(),
                       {12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {2, 3}, axesAttrs({-1}, false)).floats(),
                       {6, 22, 38, 54, 70, 86}));
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {3}, axesAttrs({0, 2}, false)).floats(),
                       {60, 92, 124}));
}

TEST(ReductionKernels, EmptyAxesReduceEverything) {
  auto x = iota234();
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {1, 1, 1}, axesAttrs({}, true)).floats(),
                       {276}));
  EXPECT_TRUE(allClose(runOk("reduce_mean", {x}, DType::F32, {}, axesAttrs({}, false)).floats(),
                       {11.5}));
  // keepdims defaults to true.
  EXPECT_TRUE(allClose(
      runOk("reduce_max", {x}, DType::F32, {1, 1, 1}, AttrsBuilder().ints("axes", {}).build())
          .floats(),
      {23}));
}

TEST(ReductionKernels, MeanMaxMinProd) {
  auto x = make<double>({2, 3}, {1, -2, 3, 4, 5, -6});
  EXPECT_TRUE(allClose(runOk("reduce_mean", {x}, DType::F64, {2}, axesAttrs({1}, false)).values<double>(),
                       {2.0 / 3, 1}));
  EXPECT_TRUE(allClose(runOk("reduce_max", {x}, DType::F64, {3}, axesAttrs({0}, false)).values<double>(),
                       {4, 5, 3}));
  EXPECT_TRUE(allClose(runOk("reduce_min", {x}, DType::F64, {2, 1}, axesAttrs({-1}, true)).values<double>(),
                       {-2, -6}));
  EXPECT_TRUE(allClose(runOk("reduce_prod", {x}, DType::F64, {2}, axesAttrs({1}, false)).values<double>(),
                       {-6, -120}));
}

TEST(ReductionKernels, Integers) {
  auto x = make<int64_t>({2, 3}, {1, 2, 4, -3, -3, -1});
  EXPECT_EQ(runOk("reduce_sum", {x}, DType::I64, {2}, axesAttrs({1}, false)).values<int64_t>(),
            (std::vector<int64_t>{7, -7}));
  // Integer means truncate toward zero: 7/3 -> 2, -7/3 -> -2.
  EXPECT_EQ(runOk("reduce_mean", {x}, DType::I64, {2}, axesAttrs({1}, false)).values<int64_t>(),
            (std::vector<int64_t>{2, -2}));
  EXPECT_EQ(runOk("reduce_max", {x}, DType::I64, {3}, axesAttrs({0}, false)).values<int64_t>(),
            (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(runOk("reduce_prod", {x}, DType::I64, {2}, axesAttrs({1}, false)).values<int64_t>(),
            (std::vector<int64_t>{8, -9}));
  auto y = make<int32_t>({3}, {5, -2, 7});
  EXPECT_EQ(runOk("reduce_min", {y}, DType::I32, {}, axesAttrs({0}, false)).values<int32_t>(),
            (std::vector<int32_t>{-2}));
}

TEST(ReductionKernels, EmptyInputGivesIdentities) {
  auto x = make<float>({2, 0}, {});
  EXPECT_TRUE(allClose(runOk("reduce_sum", {x}, DType::F32, {2}, axesAttrs({1}, false)).floats(),
                       {0, 0}));
  EXPECT_TRUE(allClose(runOk("reduce_prod", {x}, DType::F32, {2}, axesAttrs({1}, false)).floats(),
                       {1, 1}));
  auto mx = runOk("reduce_max", {x}, DType::F32, {2}, axesAttrs({1}, false)).floats();
  EXPECT_TRUE(std::isinf(mx[0]) && mx[0] < 0);
  auto xi = make<int64_t>({2, 0}, {});
  EXPECT_EQ(runOk("reduce_mean", {xi}, DType::I64, {2}, axesAttrs({1}, false)).values<int64_t>(),
            (std::vector<int64_t>{0, 0}));
}

TEST(ReductionKernels, MaxPropagatesNaN) {
  auto x = make<float>({4}, {1, std::nanf(""), 3, 2});
  EXPECT_TRUE(std::isnan(runOk("reduce_max", {x}, DType::F32, {}, axesAttrs({}, false)).floats()[0]));
  EXPECT_TRUE(std::isnan(runOk("reduce_min", {x}, DType::F32, {}, axesAttrs({}, false)).floats()[0]));
}

TEST(ReductionKernels, LongF32SumKeepsPrecision) {
  std::vector<float> v(1 << 20, 0.1f);
  auto out = runOk("reduce_sum", {make<float>({1 << 20}, v)}, DType::F32, {}, axesAttrs({}, false));
  EXPECT_TRUE(allClose(out.floats(), {double(0.1f) * (1 << 20)}, 1e-6, 0));
}

TEST(ReductionKernels, HalfPrecision) {
  auto x = makeFloat(DType::BF16, {2, 2}, {1, 2, 3, 4});
  auto out = runOk("reduce_sum", {x}, DType::BF16, {2}, axesAttrs({0}, false));
  EXPECT_TRUE(allClose(out.floats(), {4, 6}));
}

// bf16/f16 reductions read their elements widened, with no f32 copy of the input (runOk
// checks the workspace is the accumulators the rule declares), and give the bits of the f32
// kernel on the widened copy, rounded once: over contiguous rows (one longer than a 1,024
// block of the f32 sum), outer axes split into blocks of rows, middle axes and every axis.
TEST(ReductionKernels, HalfPrecisionReadsElementsWidened) {
  struct Form {
    std::vector<int64_t> shape, axes, out;
  };
  const std::vector<Form> forms = {{{3, 2500}, {1}, {3}},
                                   {{5000, 3}, {0}, {3}},
                                   {{4, 3, 5, 6}, {0, 2, 3}, {3}},
                                   {{4, 6, 5}, {1}, {4, 5}},
                                   {{7, 9}, {}, {}}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Form &f : forms)
      for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
        const bool prod = std::string(op) == "reduce_prod";
        OwnedTensor x = convertedTo(dtype, randomFloats(f.shape, 11, prod ? 0.9 : -4, prod ? 1.1 : 4));
        Attrs attrs = axesAttrs(f.axes, false);
        OwnedTensor want = runOk(op, {convertedTo(DType::F32, x)}, DType::F32, f.out, attrs);
        EXPECT_EQ(runOk(op, {x}, dtype, f.out, attrs).bytes, convertedTo(dtype, want).bytes)
            << op << " " << dtypeName(dtype) << " over " << f.shape.size() << "-d";
      }
  // A NaN poisons max and min; argmax and argmin pick the widened extreme (first NaN wins).
  OwnedTensor x = makeFloat(DType::BF16, {2, 4}, {1, std::nan(""), 3, 2, 5, 7, 7, -1});
  std::vector<float> max = runOk("reduce_max", {x}, DType::BF16, {2}, axesAttrs({1}, false)).floats();
  EXPECT_TRUE(std::isnan(max[0]));
  EXPECT_EQ(max[1], 7);
  Attrs arg = AttrsBuilder().i("axis", 1).i("keepdims", 0).build();
  EXPECT_EQ(runOk("argmax", {x}, DType::I64, {2}, arg).values<int64_t>(),
            (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(runOk("argmin", {x}, DType::I64, {2}, arg).values<int64_t>(),
            (std::vector<int64_t>{1, 3}));
}

TEST(ReductionKernels, ArgMaxArgMin) {
  auto x = make<float>({2, 3}, {1, 5, 5, 7, 0, 7});
  auto attrs = [](int64_t axis, bool keepdims, bool last) {
    return AttrsBuilder().i("axis", axis).i("keepdims", keepdims).i("select_last_index", last).build();
  };
  EXPECT_EQ(runOk("argmax", {x}, DType::I64, {2}, attrs(1, false, false)).values<int64_t>(),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(runOk("argmax", {x}, DType::I64, {2, 1}, attrs(-1, true, true)).values<int64_t>(),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(runOk("argmin", {x}, DType::I64, {1, 3}, attrs(0, true, false)).values<int64_t>(),
            (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(runOk("argmin", {x}, DType::I64, {2}, attrs(1, false, false)).values<int64_t>(),
            (std::vector<int64_t>{0, 1}));
  auto xi = make<int32_t>({4}, {3, 9, 9, 1});
  EXPECT_EQ(runOk("argmax", {xi}, DType::I64, {}, attrs(0, false, false)).values<int64_t>(),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(runOk("argmax", {xi}, DType::I64, {}, attrs(0, false, true)).values<int64_t>(),
            (std::vector<int64_t>{2}));
  auto xh = makeFloat(DType::F16, {3}, {0.5, -1, 2});
  EXPECT_EQ(runOk("argmin", {xh}, DType::I64, {1}, attrs(0, true, false)).values<int64_t>(),
            (std::vector<int64_t>{1}));
}

Attrs topK(int64_t k, bool largest = true) {
  return AttrsBuilder().i("k", k).i("largest", largest).build();
}

TEST(ReductionKernels, TopKOrdersByValueThenIndex) {
  const double nan = std::nan(""), inf = INFINITY;
  // NaN is larger than every number (first when largest, last when smallest); equal values,
  // +0 and -0 included, in index order.
  const std::vector<double> v{1, 5, 5, nan, -0.0, 0, 3, -inf, inf, 3, 2, nan};
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    OwnedTensor x = makeFloat(t, {2, 6}, v);
    EXPECT_EQ(runOk("top_k", {x}, DType::I64, {2, 4}, topK(4)).values<int64_t>(),
              (std::vector<int64_t>{3, 1, 2, 0, 5, 2, 0, 3}));
    EXPECT_EQ(runOk("top_k", {x}, DType::I64, {2, 6}, topK(6, false)).values<int64_t>(),
              (std::vector<int64_t>{4, 5, 0, 1, 2, 3, 1, 4, 0, 3, 2, 5}));
    EXPECT_TRUE(runKernel("top_k", {x}, {{DType::I64, {2, 0}}}, topK(0)).status.ok());
  }
  // Integers compare as themselves (no double: INT64_MAX - 1 and INT64_MAX differ).
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t small = std::numeric_limits<int64_t>::min();
  OwnedTensor xi = make<int64_t>({5}, {big - 1, small, big, 0, big});
  EXPECT_EQ(runOk("top_k", {xi}, DType::I64, {3}, topK(3)).values<int64_t>(),
            (std::vector<int64_t>{2, 4, 0}));
  EXPECT_EQ(runOk("top_k", {xi}, DType::I64, {2}, topK(2, false)).values<int64_t>(),
            (std::vector<int64_t>{1, 3}));
  OwnedTensor xu = makeAs<uint8_t>(DType::U8, {1, 4}, {200, 7, 255, 200});
  EXPECT_EQ(runOk("top_k", {xu}, DType::I64, {1, 3}, topK(3)).values<int64_t>(),
            (std::vector<int64_t>{2, 0, 3}));
}

// Rows short and long (the CUDA kernel takes a thread per row up to 64 elements, a block per
// row beyond), with many ties, against a stable sort; split across threads, the same indices.
TEST(ReductionKernels, TopKMatchesAStableSort) {
  struct Case {
    int64_t rows, n, k;
  };
  for (const Case &c : {Case{5, 10, 3}, Case{3, 64, 64}, Case{4, 65, 7}, Case{2, 300, 300},
                        Case{3, 5000, 20}, Case{300, 40, 2}}) {
    OwnedTensor noise = randomFloats({c.rows, c.n}, uint32_t(c.n), -2, 2);
    std::vector<float> v = noise.values<float>();
    for (float &e : v)
      e = std::round(e * 4) / 4; // 17 distinct values: ties everywhere
    OwnedTensor x = make<float>({c.rows, c.n}, v);
    for (bool largest : {true, false}) {
      std::vector<int64_t> want;
      for (int64_t r = 0; r < c.rows; ++r) {
        std::vector<int64_t> order(static_cast<size_t>(c.n));
        std::iota(order.begin(), order.end(), 0);
        const float *row = v.data() + r * c.n;
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? row[a] > row[b] : row[a] < row[b];
        });
        want.insert(want.end(), order.begin(), order.begin() + c.k);
      }
      SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.n << " k " << c.k << " largest "
                                        << largest);
      EXPECT_EQ(runOk("top_k", {x}, DType::I64, {c.rows, c.k}, topK(c.k, largest))
                    .values<int64_t>(),
                want);
      KernelThreads threads(2);
      EXPECT_EQ(runOk("top_k", {x}, DType::I64, {c.rows, c.k}, topK(c.k, largest))
                    .values<int64_t>(),
                want);
    }
  }
}

TEST(ReductionKernels, TopKErrors) {
  OwnedTensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = runKernel("top_k", {x}, {{DType::I64, {2, 4}}}, topK(4));
  EXPECT_EQ(r.status.message(), "top_k: k 4 is not in [0, 3], the size of the last axis");
  r = runKernel("top_k", {x}, {{DType::I64, {2, 3}}}, topK(2));
  EXPECT_EQ(r.status.message(), "top_k: output has shape [2, 3], expected [2, 2]");
  r = runKernel("top_k", {x}, {{DType::I32, {2, 2}}}, topK(2));
  EXPECT_EQ(r.status.message(), "top_k: output dtype i32 should be i64");
  r = runKernel("top_k", {make<float>({}, {1})}, {{DType::I64, {}}}, topK(0));
  EXPECT_EQ(r.status.message(), "top_k: x must have rank >= 1");
}

TEST(ReductionKernels, Errors) {
  auto x = iota234();
  auto r = runKernel("reduce_sum", {x}, {{DType::F32, {2, 3}}}, axesAttrs({3}, false));
  EXPECT_EQ(r.status.message(), "reduce_sum: axis 3 is out of range for rank 3");
  r = runKernel("reduce_sum", {x}, {{DType::F32, {3}}}, axesAttrs({0, -3}, false));
  EXPECT_EQ(r.status.message(), "reduce_sum: axis -3 is repeated");
  r = runKernel("reduce_sum", {x}, {{DType::F32, {2, 3}}}, axesAttrs({1}, false));
  EXPECT_EQ(r.status.message(), "reduce_sum: output has shape [2, 3], expected [2, 4]");
  auto b = make<uint8_t>({2}, {1, 0});
  r = runKernel("reduce_sum", {b}, {{DType::I1, {}}}, axesAttrs({}, false));
  EXPECT_EQ(r.status.message(), "reduce_sum: unsupported dtype i1");
  r = runKernel("argmax", {make<float>({2, 0}, {})}, {{DType::I64, {2}}},
                AttrsBuilder().i("axis", 1).i("keepdims", 0).build());
  EXPECT_EQ(r.status.message(), "argmax: axis 1 has size 0");
}

} // namespace
} // namespace plait::rt::test
