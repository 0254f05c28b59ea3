// gather (embedding lookup, negative and out-of-range indices) and trilu.
#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

TEST(IndexingKernels, GatherRowsLikeAnEmbedding) {
  auto table = make<float>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  auto ids = make<int64_t>({2, 2}, {3, 0, -1, 1});
  auto out = runOk("gather", {table, ids}, DType::F32, {2, 2, 2}, AttrsBuilder().i("axis", 0).build());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{30, 31, 0, 1, 30, 31, 10, 11}));
}

TEST(IndexingKernels, GatherInnerAxisAndScalarIndex) {
  auto x = make<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto idx = make<int32_t>({2}, {2, 0});
  EXPECT_EQ(runOk("gather", {x, idx}, DType::I64, {2, 2}, AttrsBuilder().i("axis", -1).build())
                .values<int64_t>(),
            (std::vector<int64_t>{3, 1, 6, 4}));
  auto scalar = make<int64_t>({}, {1});
  EXPECT_EQ(runOk("gather", {x, scalar}, DType::I64, {3}, AttrsBuilder().i("axis", 0).build())
                .values<int64_t>(),
            (std::vector<int64_t>{4, 5, 6}));
  auto b = make<uint8_t>({3}, {1, 0, 1});
  EXPECT_EQ(runOk("gather", {b, idx}, DType::I1, {2}).values<uint8_t>(),
            (std::vector<uint8_t>{1, 1}));
  auto h = makeFloat(DType::F16, {3}, {0.5, 1.5, 2.5});
  EXPECT_TRUE(allClose(runOk("gather", {h, idx}, DType::F16, {2}).floats(), {2.5, 0.5}));
}

TEST(IndexingKernels, GatherOutOfRangeIsAnError) {
  auto table = make<float>({4, 2}, std::vector<float>(8, 0));
  auto r = runKernel("gather", {table, make<int64_t>({2}, {1, 4})}, {{DType::F32, {2, 2}}});
  EXPECT_EQ(r.status.message(), "gather: index 4 is out of range for axis 0 of size 4");
  r = runKernel("gather", {table, make<int64_t>({1}, {-5})}, {{DType::F32, {1, 2}}});
  EXPECT_EQ(r.status.message(), "gather: index -5 is out of range for axis 0 of size 4");
  r = runKernel("gather", {table, make<float>({1}, {0})}, {{DType::F32, {1, 2}}});
  EXPECT_EQ(r.status.message(), "gather: indices must be i64 or i32, got f32");
}

TEST(IndexingKernels, TriluUpperAndLower) {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i)
    v[i] = float(i + 1);
  auto x = make<float>({3, 4}, v);
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4}).values<float>(),
            (std::vector<float>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4}, AttrsBuilder().i("upper", 0).build()).values<float>(),
            (std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4},
                  AttrsBuilder().i("upper", 1).i("k", 1).build()).values<float>(),
            (std::vector<float>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4},
                  AttrsBuilder().i("upper", 0).i("k", -1).build()).values<float>(),
            (std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  // |k| beyond the matrix keeps everything or nothing.
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4},
                  AttrsBuilder().i("upper", 0).i("k", 100).build()).values<float>(), v);
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4},
                  AttrsBuilder().i("upper", 1).i("k", 100).build()).values<float>(),
            std::vector<float>(12, 0));
  EXPECT_EQ(runOk("trilu", {x}, DType::F32, {3, 4},
                  AttrsBuilder().i("upper", 1).i("k", -100).build()).values<float>(), v);
}

TEST(IndexingKernels, TriluBatchedBoolMask) {
  auto ones = make<uint8_t>({2, 2, 2}, std::vector<uint8_t>(8, 1));
  EXPECT_EQ(runOk("trilu", {ones}, DType::I1, {2, 2, 2}, AttrsBuilder().i("upper", 0).build())
                .values<uint8_t>(),
            (std::vector<uint8_t>{1, 0, 1, 1, 1, 0, 1, 1}));
  auto r = runKernel("trilu", {make<float>({3}, {1, 2, 3})}, {{DType::F32, {3}}});
  EXPECT_EQ(r.status.message(), "trilu: needs rank >= 2, got 1");
}

} // namespace
} // namespace plait::rt::test
