// reshape, transpose, broadcast_to, slice, pad, concat, split over every element size.
#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

std::vector<int64_t> iota(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = start + i;
  return v;
}

TEST(MovementKernels, Reshape) {
  auto x = make<int64_t>({2, 3}, iota(6));
  EXPECT_EQ(runOk("reshape", {x}, DType::I64, {3, 2}).values<int64_t>(), iota(6));
  auto r = runKernel("reshape", {x}, {{DType::I64, {4}}});
  EXPECT_EQ(r.status.message(), "reshape: cannot reshape [2, 3] to [4]");
}

TEST(MovementKernels, Transpose2dAndBatched) {
  auto x = make<int64_t>({2, 3}, iota(6));
  EXPECT_EQ(runOk("transpose", {x}, DType::I64, {3, 2}, AttrsBuilder().ints("perm", {1, 0}).build())
                .values<int64_t>(),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  // [2,3,4] -> perm (2,0,1) -> [4,2,3]
  auto y = make<int32_t>({2, 3, 4}, [] {
    std::vector<int32_t> v(24);
    for (int i = 0; i < 24; ++i)
      v[i] = i;
    return v;
  }());
  auto out = runOk("transpose", {y}, DType::I32, {4, 2, 3}, AttrsBuilder().ints("perm", {2, 0, 1}).build())
                 .values<int32_t>();
  std::vector<int32_t> expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        expected.push_back(i * 12 + j * 4 + k);
  EXPECT_EQ(out, expected);
}

TEST(MovementKernels, TransposeLargeTiledAndByteTypes) {
  // 70 x 45 crosses tile boundaries in both directions.
  std::vector<float> v(70 * 45);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  auto out = runOk("transpose", {make<float>({70, 45}, v)}, DType::F32, {45, 70},
                   AttrsBuilder().ints("perm", {1, 0}).build())
                 .values<float>();
  for (int r = 0; r < 45; ++r)
    for (int c = 0; c < 70; ++c)
      ASSERT_EQ(out[r * 70 + c], float(c * 45 + r));
  auto b = make<uint8_t>({1, 2, 2}, {1, 0, 0, 1});
  EXPECT_EQ(runOk("transpose", {b}, DType::I1, {2, 2, 1}, AttrsBuilder().ints("perm", {2, 1, 0}).build())
                .values<uint8_t>(),
            (std::vector<uint8_t>{1, 0, 0, 1}));
  auto h = makeFloat(DType::BF16, {2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(allClose(runOk("transpose", {h}, DType::BF16, {2, 2}, AttrsBuilder().ints("perm", {1, 0}).build())
                           .floats(),
                       {1, 3, 2, 4}));
}

TEST(MovementKernels, BroadcastTo) {
  auto x = make<int64_t>({3, 1}, {1, 2, 3});
  EXPECT_EQ(runOk("broadcast_to", {x}, DType::I64, {2, 3, 2}).values<int64_t>(),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  auto s = make<float>({}, {7});
  EXPECT_EQ(runOk("broadcast_to", {s}, DType::F32, {2, 2}).values<float>(),
            (std::vector<float>{7, 7, 7, 7}));
  EXPECT_EQ(runKernel("broadcast_to", {x}, {{DType::I64, {2, 2}}}).status.message(),
            "broadcast_to: cannot broadcast [3, 1] to [2, 2]");
}

TEST(MovementKernels, SliceForwardAndStrided) {
  auto x = make<int64_t>({3, 4}, iota(12));
  auto out = runOk("slice", {x}, DType::I64, {2, 2},
                   AttrsBuilder().ints("starts", {1, 0}).ints("ends", {3, 4}).ints("steps", {1, 2}).build());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{4, 6, 8, 10}));
}

TEST(MovementKernels, SliceNegativeSteps) {
  auto x = make<int64_t>({3, 4}, iota(12));
  // Reverse both dims entirely: start n-1, end -1, step -1.
  auto rev = runOk("slice", {x}, DType::I64, {3, 4},
                   AttrsBuilder().ints("starts", {2, 3}).ints("ends", {-1, -1}).ints("steps", {-1, -1}).build());
  EXPECT_EQ(rev.values<int64_t>(), (std::vector<int64_t>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  // Columns 3, 1 (step -2 from 3 down to, not including, 0).
  auto cols = runOk("slice", {x}, DType::I64, {3, 2},
                    AttrsBuilder().ints("starts", {0, 3}).ints("ends", {3, 0}).ints("steps", {1, -2}).build());
  EXPECT_EQ(cols.values<int64_t>(), (std::vector<int64_t>{3, 1, 7, 5, 11, 9}));
  auto empty = runOk("slice", {x}, DType::I64, {0, 4},
                     AttrsBuilder().ints("starts", {2, 0}).ints("ends", {2, 4}).ints("steps", {1, 1}).build());
  EXPECT_EQ(empty.view.numel(), 0);
  auto r = runKernel("slice", {x}, {{DType::I64, {1, 4}}},
                     AttrsBuilder().ints("starts", {3, 0}).ints("ends", {4, 4}).ints("steps", {1, 1}).build());
  EXPECT_EQ(r.status.message(), "slice: [3:4:1] of dimension 0 (size 3) is not normalised");
  r = runKernel("slice", {x}, {{DType::I64, {1, 4}}},
                AttrsBuilder().ints("starts", {0, 0}).ints("ends", {1, 4}).ints("steps", {0, 1}).build());
  EXPECT_FALSE(r.status.ok());
}

TEST(MovementKernels, PadWithConstantEveryDtype) {
  auto x = make<float>({2, 2}, {1, 2, 3, 4});
  auto out = runOk("pad", {x}, DType::F32, {3, 5},
                   AttrsBuilder().ints("pads", {1, 2, 0, 1}).f("value", -1).build());
  EXPECT_EQ(out.values<float>(),
            (std::vector<float>{-1, -1, -1, -1, -1, -1, -1, 1, 2, -1, -1, -1, 3, 4, -1}));
  auto xi = make<int32_t>({2}, {5, 6});
  EXPECT_EQ(runOk("pad", {xi}, DType::I32, {4}, AttrsBuilder().ints("pads", {1, 1}).f("value", 9.7).build())
                .values<int32_t>(),
            (std::vector<int32_t>{9, 5, 6, 9}));
  auto xb = make<uint8_t>({1}, {0});
  EXPECT_EQ(runOk("pad", {xb}, DType::I1, {2}, AttrsBuilder().ints("pads", {0, 1}).f("value", 1).build())
                .values<uint8_t>(),
            (std::vector<uint8_t>{0, 1}));
  auto xh = makeFloat(DType::F16, {1}, {2});
  EXPECT_TRUE(allClose(runOk("pad", {xh}, DType::F16, {3}, AttrsBuilder().ints("pads", {1, 1}).build())
                           .floats(),
                       {0, 2, 0}));
  auto x3 = make<int64_t>({1, 2, 1}, {7, 8});
  EXPECT_EQ(runOk("pad", {x3}, DType::I64, {1, 3, 2}, AttrsBuilder().ints("pads", {0, 0, 1, 0, 1, 0}).build())
                .values<int64_t>(),
            (std::vector<int64_t>{0, 7, 0, 8, 0, 0}));
  auto r = runKernel("pad", {x}, {{DType::F32, {2, 2}}}, AttrsBuilder().ints("pads", {0, 0}).build());
  EXPECT_EQ(r.status.message(), "pad: 'pads' must have 4 entries, got 2");
}

TEST(MovementKernels, ConcatAndSplit) {
  auto a = make<int64_t>({2, 1}, {1, 2});
  auto b = make<int64_t>({2, 2}, {3, 4, 5, 6});
  auto cat = runOk("concat", {a, b}, DType::I64, {2, 3}, AttrsBuilder().i("axis", -1).build());
  EXPECT_EQ(cat.values<int64_t>(), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  auto cat0 = runOk("concat", {b, b}, DType::I64, {4, 2}, AttrsBuilder().i("axis", 0).build());
  EXPECT_EQ(cat0.values<int64_t>(), (std::vector<int64_t>{3, 4, 5, 6, 3, 4, 5, 6}));

  auto parts = runKernel("split", {cat}, {{DType::I64, {2, 1}}, {DType::I64, {2, 2}}},
                         AttrsBuilder().i("axis", 1).ints("sizes", {1, 2}).build());
  ASSERT_TRUE(parts.status.ok()) << parts.status.message();
  EXPECT_EQ(parts.out(0).values<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(parts.out(1).values<int64_t>(), (std::vector<int64_t>{3, 4, 5, 6}));

  auto hb = make<uint8_t>({3}, {1, 0, 1});
  auto three = runKernel("split", {hb}, {{DType::I1, {1}}, {DType::I1, {0}}, {DType::I1, {2}}},
                         AttrsBuilder().i("axis", 0).ints("sizes", {1, 0, 2}).build());
  ASSERT_TRUE(three.status.ok());
  EXPECT_EQ(three.out(2).values<uint8_t>(), (std::vector<uint8_t>{0, 1}));

  auto r = runKernel("concat", {a, make<int64_t>({3, 1}, {1, 2, 3})}, {{DType::I64, {2, 2}}},
                     AttrsBuilder().i("axis", 1).build());
  EXPECT_EQ(r.status.message(), "concat: inputs differ in dimension 0");
  r = runKernel("concat", {a, make<int32_t>({2, 1}, {1, 2})}, {{DType::I64, {2, 2}}},
                AttrsBuilder().i("axis", 1).build());
  EXPECT_EQ(r.status.message(), "concat: unsupported dtype i32 x i64");
  r = runKernel("split", {cat}, {{DType::I64, {2, 1}}, {DType::I64, {2, 1}}},
                AttrsBuilder().i("axis", 1).ints("sizes", {1, 1}).build());
  EXPECT_EQ(r.status.message(), "split: sizes add up to 2, dimension 1 is 3");
}

TEST(MovementKernels, ConcatAndSplitOfManyTensors) {
  // A data-parallel bucket: the gradients of 29 params flattened and concatenated, then split
  // back (more parts than a shape has dimensions: the CUDA concat once dropped those after
  // the 16th, and the shadow run compares its output here). Along axis 1 of [2, n] too.
  constexpr int kParts = 29;
  std::vector<OwnedTensor> flat, rows;
  std::vector<double> whole, wide;
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (int k = 0; k < kParts; ++k) {
    const int64_t n = 1 + k % 5;
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i)
      v.push_back(double(k) + double(i) / 8);
    flat.push_back(makeFloat(DType::F32, {n}, v));
    whole.insert(whole.end(), v.begin(), v.end());
    sizes.push_back(n);
    total += n;
  }
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < kParts; ++k)
      for (int64_t i = 0; i < sizes[size_t(k)]; ++i)
        wide.push_back(double(r) * 100 + double(k) + double(i) / 8);
  for (int k = 0; k < kParts; ++k) {
    std::vector<double> v;
    for (int r = 0; r < 2; ++r)
      for (int64_t i = 0; i < sizes[size_t(k)]; ++i)
        v.push_back(double(r) * 100 + double(k) + double(i) / 8);
    rows.push_back(makeFloat(DType::F32, {2, sizes[size_t(k)]}, v));
  }
  OwnedTensor bucket =
      runOk("concat", flat, DType::F32, {total}, AttrsBuilder().i("axis", 0).build());
  EXPECT_TRUE(allClose(bucket.floats(), whole, 0, 0));
  OwnedTensor table =
      runOk("concat", rows, DType::F32, {2, total}, AttrsBuilder().i("axis", 1).build());
  EXPECT_TRUE(allClose(table.floats(), wide, 0, 0));
  std::vector<std::pair<DType, std::vector<int64_t>>> outs;
  for (int64_t n : sizes)
    outs.push_back({DType::F32, {n}});
  KernelResult parts =
      runKernel("split", {bucket}, outs, AttrsBuilder().i("axis", 0).ints("sizes", sizes).build());
  ASSERT_TRUE(parts.status.ok()) << parts.status.message();
  for (int k = 0; k < kParts; ++k)
    EXPECT_EQ(parts.out(size_t(k)).floats(), flat[size_t(k)].floats()) << "part " << k;
}

} // namespace
} // namespace plait::rt::test
