// The CPU kernels' thread pool (runtime/cpu/Parallel.h): chunks cover a range exactly once on
// whole units, a region inside a region runs inline, small work is not split; and kernels
// split across threads compute what they compute on one (every element by one thread, in the
// same order), bit for bit; GEMMs within 1e-6 (OpenBLAS's rounding of a block of rows).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait::rt::test {
namespace {

TEST(Parallel, ChunksCoverTheRangeOnceOnWholeUnits) {
  KernelThreads threads(3);
  EXPECT_EQ(cpu::kernelThreads(), 3);
  EXPECT_EQ(cpu::parallelChunks(1000, 10), 3);
  EXPECT_EQ(cpu::parallelChunks(25, 10), 2);  // two grains: two chunks
  EXPECT_EQ(cpu::parallelChunks(19, 10), 1);  // less than two grains: not split
  std::vector<std::atomic<int>> seen(1000);
  std::atomic<int> chunks{0};
  std::atomic<bool> misaligned{false};
  cpu::parallelFor(
      1000, 10,
      [&](int64_t, int64_t begin, int64_t end) {
        chunks.fetch_add(1);
        if (begin % 16 != 0)
          misaligned = true;
        for (int64_t i = begin; i < end; ++i)
          seen[size_t(i)].fetch_add(1);
      },
      16);
  EXPECT_EQ(chunks.load(), 3);
  EXPECT_FALSE(misaligned.load());
  for (size_t i = 0; i < seen.size(); ++i)
    ASSERT_EQ(seen[i].load(), 1) << "element " << i;
}

TEST(Parallel, ARegionInsideARegionRunsInline) {
  KernelThreads threads(2);
  std::atomic<int> inner{0}, innerChunks{0};
  std::atomic<bool> otherThread{false};
  cpu::parallelFor(2, 1, [&](int64_t, int64_t, int64_t) {
    const std::thread::id self = std::this_thread::get_id();
    EXPECT_EQ(cpu::parallelChunks(1000, 1), 1);
    cpu::parallelFor(1000, 1, [&](int64_t, int64_t begin, int64_t end) {
      innerChunks.fetch_add(1);
      inner.fetch_add(int(end - begin));
      if (std::this_thread::get_id() != self)
        otherThread = true;
    });
  });
  EXPECT_EQ(innerChunks.load(), 2); // one whole inner range per outer chunk
  EXPECT_EQ(inner.load(), 2000);
  EXPECT_FALSE(otherThread.load());
}

TEST(Parallel, OneThreadRunsEverythingOnTheCaller) {
  KernelThreads threads(1);
  EXPECT_EQ(cpu::parallelChunks(int64_t(1) << 40, 1), 1);
  const std::thread::id self = std::this_thread::get_id();
  int calls = 0;
  cpu::parallelFor(100, 1, [&](int64_t chunk, int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(chunk, 0);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    EXPECT_EQ(std::this_thread::get_id(), self);
  });
  EXPECT_EQ(calls, 1);
}

// The default: the CPUs this process may run on, shared among the ranks on its node.
TEST(Parallel, TheDefaultSharesTheCpusAmongTheNodesRanks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int allowed = CPU_COUNT(&set);
  const char *was = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const std::string saved = was ? was : "";
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int alone = cpu::defaultKernelThreads();
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1000", 1);
  const int crowded = cpu::defaultKernelThreads();
  if (was)
    ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", saved.c_str(), 1);
  else
    ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(alone, allowed);
  EXPECT_EQ(crowded, allowed < int(std::thread::hardware_concurrency()) ? allowed : 1);
}

void expectSameBits(const OwnedTensor &split, const OwnedTensor &one, const char *what) {
  ASSERT_EQ(split.bytes.size(), one.bytes.size()) << what;
  EXPECT_EQ(std::memcmp(split.bytes.data(), one.bytes.data(), one.bytes.size()), 0) << what;
}

/// Runs `name` on one thread and on 3, and expects every output to be the same bits, or with
/// `rtol` > 0 to agree within rtol and atol.
void expectSplitIsExact(const std::string &name, const std::vector<OwnedTensor> &inputs,
                        const std::vector<std::pair<DType, std::vector<int64_t>>> &outputs,
                        const Attrs &attrs = Attrs(), double rtol = 0, double atol = 0) {
  SCOPED_TRACE(name);
  KernelResult one;
  {
    KernelThreads single(1); // OpenBLAS on one thread too
    one = runKernel(name, inputs, outputs, attrs);
  }
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  KernelThreads threads(3);
  KernelResult split = runKernel(name, inputs, outputs, attrs);
  ASSERT_TRUE(split.status.ok()) << split.status.message();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (rtol == 0) {
      expectSameBits(split.out(i), one.out(i), "output");
      continue;
    }
    std::vector<float> a = split.out(i).floats(), b = one.out(i).floats();
    std::vector<double> expected(b.begin(), b.end());
    EXPECT_TRUE(allClose(a, expected, rtol, atol));
  }
}

TEST(Parallel, SplitKernelsComputeWhatOneThreadComputes) {
  // GEMMs split by rows (tall) and by columns (wide), both over k = 300. Each element is
  // still one OpenBLAS dot product over the whole of k, but OpenBLAS does not promise the
  // same order of its terms in a call over part of the rows (its blocking follows m and n):
  // within float rounding of a 300-term sum of products up to 9 (measured: 3e-5 absolute).
  expectSplitIsExact("matmul", {randomFloats({700, 300}, 1), randomFloats({300, 200}, 2)},
                     {{DType::F32, {700, 200}}}, Attrs(), 1e-5, 2e-4);
  expectSplitIsExact("matmul", {randomFloats({20, 300}, 3), randomFloats({300, 2000}, 4)},
                     {{DType::F32, {20, 2000}}}, Attrs(), 1e-5, 2e-4);
  const std::vector<int64_t> p = {300, 700};
  expectSplitIsExact("adamw_update",
                     {randomFloats(p, 5), randomFloats(p, 6), randomFloats(p, 7),
                      randomFloats(p, 8, 0, 1), makeFloat(DType::F32, {}, {1e-3}),
                      makeFloat(DType::F32, {}, {3})},
                     {{DType::F32, p}, {DType::F32, p}, {DType::F32, p}});
  expectSplitIsExact("gelu", {randomFloats({400, 500}, 9)}, {{DType::F32, {400, 500}}});
  // Binary kernels: one row split (same shapes, a scalar), rows split (a broadcast row and a
  // broadcast column), and a comparison's bool result.
  expectSplitIsExact("add", {randomFloats({400, 500}, 15), randomFloats({400, 500}, 16)},
                     {{DType::F32, {400, 500}}});
  expectSplitIsExact("mul", {randomFloats({400, 500}, 17), makeFloat(DType::F32, {}, {0.5})},
                     {{DType::F32, {400, 500}}});
  expectSplitIsExact("sub", {randomFloats({3, 700, 93}, 18), randomFloats({93}, 19)},
                     {{DType::F32, {3, 700, 93}}});
  expectSplitIsExact("div", {randomFloats({3, 700, 93}, 20), randomFloats({3, 700, 1}, 21, 1, 2)},
                     {{DType::F32, {3, 700, 93}}});
  expectSplitIsExact("less", {randomFloats({700, 300}, 22), randomFloats({1, 300}, 23)},
                     {{DType::I1, {700, 300}}});
  expectSplitIsExact("layer_norm",
                     {randomFloats({600, 256}, 10), randomFloats({256}, 11),
                      randomFloats({256}, 12)},
                     {{DType::F32, {600, 256}}}, AttrsBuilder().i("axis", -1).build());
  expectSplitIsExact("rms_norm", {randomFloats({600, 256}, 24), randomFloats({256}, 25)},
                     {{DType::F32, {600, 256}}}, AttrsBuilder().i("axis", -1).build());
  expectSplitIsExact("add_layer_norm",
                     {randomFloats({600, 256}, 32), randomFloats({600, 256}, 33),
                      randomFloats({256}, 34), randomFloats({256}, 35)},
                     {{DType::F32, {600, 256}}, {DType::F32, {600, 256}}},
                     AttrsBuilder().i("axis", -1).build());
  // The norms' gradients: fixed chunks of rows, their parameter sums added in chunk order.
  expectSplitIsExact("layer_norm_grad",
                     {randomFloats({600, 256}, 26), randomFloats({256}, 27),
                      randomFloats({600, 256}, 28)},
                     {{DType::F32, {600, 256}}, {DType::F32, {256}}, {DType::F32, {256}}},
                     AttrsBuilder().i("axis", -1).build());
  expectSplitIsExact("rms_norm_grad",
                     {randomFloats({600, 256}, 29), randomFloats({256}, 30),
                      randomFloats({600, 256}, 31)},
                     {{DType::F32, {600, 256}}, {DType::F32, {256}}},
                     AttrsBuilder().i("axis", -1).build());
  expectSplitIsExact("softmax", {randomFloats({600, 256}, 13)}, {{DType::F32, {600, 256}}},
                     AttrsBuilder().i("axis", -1).build());
  std::vector<int64_t> targets(600);
  for (size_t i = 0; i < targets.size(); ++i)
    targets[i] = int64_t(i * 7 % 512);
  expectSplitIsExact("softmax_cross_entropy_grad",
                     {randomFloats({600, 512}, 14), make<int64_t>({600}, targets),
                      makeFloat(DType::F32, {}, {1.0})},
                     {{DType::F32, {600, 512}}});
}

TEST(Parallel, LossesSplitTheirPositionsAndSumThemInOrder) {
  // Each position's loss is computed by one thread; the mean and the sum add them in
  // position order afterwards, so every reduction gives the same bits on 3 threads as on 1.
  std::vector<int64_t> targets(600);
  for (size_t i = 0; i < targets.size(); ++i)
    targets[i] = i % 11 == 0 ? -100 : int64_t(i * 7 % 512); // PyTorch's ignore_index
  OwnedTensor target = make<int64_t>({600}, targets), logits = randomFloats({600, 512}, 80, -8, 8);
  for (const char *reduction : {"mean", "sum", "none"}) {
    Attrs attrs = AttrsBuilder().s("reduction", reduction).i("ignore_index", -100).build();
    std::vector<int64_t> shape = std::string(reduction) == "none" ? std::vector<int64_t>{600}
                                                                   : std::vector<int64_t>{};
    expectSplitIsExact("softmax_cross_entropy", {logits, target}, {{DType::F32, shape}}, attrs);
    expectSplitIsExact("softmax_cross_entropy", {logits, target, randomFloats({512}, 81, 0, 2)},
                       {{DType::F32, shape}}, attrs);
  }
  // Class scores along a non-innermost axis ([N, C, D]: strided, in double) and f64 logits.
  std::vector<int64_t> spatial(16 * 64);
  for (size_t i = 0; i < spatial.size(); ++i)
    spatial[i] = int64_t(i * 5 % 300);
  OwnedTensor spatialTarget = make<int64_t>({16, 64}, spatial);
  expectSplitIsExact("softmax_cross_entropy", {randomFloats({16, 300, 64}, 82), spatialTarget},
                     {{DType::F32, {}}});
  expectSplitIsExact("softmax_cross_entropy_grad",
                     {randomFloats({16, 300, 64}, 83), spatialTarget,
                      makeFloat(DType::F32, {}, {1.0})},
                     {{DType::F32, {16, 300, 64}}});
  std::vector<double> wide(600 * 512);
  for (size_t i = 0; i < wide.size(); ++i)
    wide[i] = double(int64_t(i * 7919 % 1001) - 500) / 64;
  OwnedTensor logits64 = makeFloat(DType::F64, {600, 512}, wide);
  expectSplitIsExact("softmax_cross_entropy", {logits64, target}, {{DType::F64, {}}},
                     AttrsBuilder().i("ignore_index", -100).build());
  // nll_loss reads one score per position: split from 2 x 16,384 positions.
  std::vector<int64_t> many(40000);
  for (size_t i = 0; i < many.size(); ++i)
    many[i] = int64_t(i % 10);
  expectSplitIsExact("nll_loss", {randomFloats({40000, 10}, 84, -5, 0), make<int64_t>({40000}, many)},
                     {{DType::F32, {}}});
}

/// Runs movement kernel `name` on 3 threads and on one, and expects both to be `expected`.
void expectMoveSplits(const std::string &name, const std::vector<OwnedTensor> &inputs,
                      const std::vector<std::vector<int64_t>> &shapes,
                      const std::vector<std::vector<int64_t>> &expected,
                      const Attrs &attrs = Attrs()) {
  std::vector<std::pair<DType, std::vector<int64_t>>> outputs;
  for (const std::vector<int64_t> &shape : shapes)
    outputs.push_back({DType::I64, shape});
  expectSplitIsExact(name, inputs, outputs, attrs);
  KernelThreads threads(3);
  KernelResult r = runKernel(name, inputs, outputs, attrs);
  ASSERT_TRUE(r.status.ok()) << name << ": " << r.status.message();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(r.out(i).values<int64_t>(), expected[i]) << name << " output " << i;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = i;
  return v;
}

TEST(Parallel, MovementKernelsSplitTheirRows) {
  // Each element holds its own index, so the expected outputs are computed here directly.
  // A batched transpose: bands of 32 rows of tiles, 7 to a matrix, chunks starting mid-matrix.
  const int64_t b = 4, m = 300, n = 200;
  std::vector<int64_t> t(size_t(b * m * n));
  for (int64_t k = 0; k < b; ++k)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i)
        t[size_t((k * n + j) * m + i)] = (k * m + i) * n + j;
  expectMoveSplits("transpose", {make<int64_t>({b, m, n}, iota(b * m * n))}, {{b, n, m}}, {t},
                   AttrsBuilder().ints("perm", {0, 2, 1}).build());
  // One strided row of 33,334 walked backwards: pieces of 16,384 elements.
  std::vector<int64_t> back;
  for (int64_t i = 99999; i >= 0; i -= 3)
    back.push_back(i);
  expectMoveSplits("slice", {make<int64_t>({100000}, iota(100000))},
                   {{int64_t(back.size())}}, {back},
                   AttrsBuilder().ints("starts", {99999}).ints("ends", {-1}).ints("steps", {-3}).build());
  // A scalar repeated 50,000 times (stride 0), and a column across 200 columns.
  expectMoveSplits("broadcast_to", {make<int64_t>({1}, {42})}, {{50000}},
                   {std::vector<int64_t>(50000, 42)});
  std::vector<int64_t> cols(300 * 200);
  for (size_t i = 0; i < cols.size(); ++i)
    cols[i] = int64_t(i / 200);
  expectMoveSplits("broadcast_to", {make<int64_t>({300, 1}, iota(300))}, {{300, 200}}, {cols});
  // pad [70, 300] by 3 rows before, 2 after, 5 columns after, with 7.
  std::vector<int64_t> padded(75 * 305, 7);
  for (int64_t r = 0; r < 70; ++r)
    for (int64_t c = 0; c < 300; ++c)
      padded[size_t((r + 3) * 305 + c)] = r * 300 + c;
  expectMoveSplits("pad", {make<int64_t>({70, 300}, iota(70 * 300))}, {{75, 305}}, {padded},
                   AttrsBuilder().ints("pads", {3, 0, 2, 5}).f("value", 7).build());
  // concat of [600, 30] and [600, 50] along columns, and its split back.
  std::vector<int64_t> joined(600 * 80), left(600 * 30), right(600 * 50);
  for (int64_t r = 0; r < 600; ++r)
    for (int64_t c = 0; c < 80; ++c) {
      int64_t v = c < 30 ? r * 30 + c : 100000 + r * 50 + (c - 30);
      joined[size_t(r * 80 + c)] = v;
      (c < 30 ? left[size_t(r * 30 + c)] : right[size_t(r * 50 + c - 30)]) = v;
    }
  std::vector<int64_t> rightValues = iota(600 * 50);
  for (int64_t &v : rightValues)
    v += 100000;
  expectMoveSplits("concat",
                   {make<int64_t>({600, 30}, iota(600 * 30)), make<int64_t>({600, 50}, rightValues)},
                   {{600, 80}}, {joined}, AttrsBuilder().i("axis", 1).build());
  expectMoveSplits("split", {make<int64_t>({600, 80}, joined)}, {{600, 30}, {600, 50}},
                   {left, right}, AttrsBuilder().i("axis", 1).ints("sizes", {30, 50}).build());
}

TEST(Parallel, GathersPowersAndTrianglesSplit) {
  // An embedding's gradient: 1,000 token rows, many repeated, into 500 rows of 256; and a
  // gather_grad along axis 1, whose columns' chunks span its outer index. Each column sums
  // its terms in index order on one thread: the same bits as one thread.
  std::vector<int64_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int64_t(i * i % 37); // 37 distinct rows, each repeated
  OwnedTensor index = make<int64_t>({1000}, tokens);
  expectSplitIsExact("gather_grad", {randomFloats({1000, 256}, 90), index},
                     {{DType::F32, {500, 256}}});
  expectSplitIsExact("gather_grad", {randomFloats({6, 1000, 40}, 91), index},
                     {{DType::F32, {6, 50, 40}}}, AttrsBuilder().i("axis", 1).build());
  expectSplitIsExact("gather", {randomFloats({500, 256}, 92), index}, {{DType::F32, {1000, 256}}});
  // pow by a scalar 2 (products), and by 0.5 (std::pow through the broadcast rows).
  expectSplitIsExact("pow", {randomFloats({400, 500}, 93), makeFloat(DType::F32, {}, {2})},
                     {{DType::F32, {400, 500}}});
  expectSplitIsExact("pow", {randomFloats({400, 500}, 94, 0, 4), makeFloat(DType::F32, {}, {0.5})},
                     {{DType::F32, {400, 500}}});
  expectSplitIsExact("trilu", {randomFloats({8, 300, 300}, 95)}, {{DType::F32, {8, 300, 300}}},
                     AttrsBuilder().i("upper", 0).i("k", -3).build());
  expectSplitIsExact("cast", {randomFloats({400, 500}, 96)}, {{DType::BF16, {400, 500}}});
}

TEST(Parallel, WhereSplitsItsRowOrItsRows) {
  // A ReLU's gradient (one row of 210,000: split by elements), a masked fill with a scalar,
  // and a condition broadcast along rows (700 rows of 300: split by rows).
  std::vector<uint8_t> mask(700 * 300);
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = uint8_t(i * 7919 % 3 == 0);
  OwnedTensor cond = make<uint8_t>({700, 300}, mask);
  OwnedTensor x = randomFloats({700, 300}, 70), y = randomFloats({700, 300}, 71);
  expectSplitIsExact("where", {cond, x, y}, {{DType::F32, {700, 300}}});
  expectSplitIsExact("where", {cond, x, makeFloat(DType::F32, {}, {0.0})},
                     {{DType::F32, {700, 300}}});
  std::vector<uint8_t> row(mask.begin(), mask.begin() + 300);
  expectSplitIsExact("where", {make<uint8_t>({1, 300}, row), x, y}, {{DType::F32, {700, 300}}});
}

TEST(Parallel, ReductionsSplitTheirOuterRowsExactly) {
  // A reduction splits its outermost merged dimensions (ReductionSplit.h): kept, into chunks
  // owning whole accumulators; reduced, into 4 fixed blocks of rows with a copy of the
  // accumulators each, combined in block order. Either way every output is the same bits on
  // 3 threads as on one.
  auto axes = [](std::vector<int64_t> a, bool keepdims = true) {
    return AttrsBuilder().ints("axes", std::move(a)).i("keepdims", keepdims).build();
  };
  // Rows into one sum each: 64 rows of 1,024, 16 rows a grain.
  expectSplitIsExact("reduce_sum", {randomFloats({64, 1024}, 60)}, {{DType::F32, {64, 1}}},
                     axes({1}));
  expectSplitIsExact("reduce_min", {randomFloats({256, 300}, 64)}, {{DType::F32, {256}}},
                     axes({-1}, false));
  // Kept, reduced, kept: 4 outer blocks of 3 x 8,192, each its 8,192 accumulators.
  expectSplitIsExact("reduce_max", {randomFloats({4, 3, 2, 4096}, 63)},
                     {{DType::F32, {4, 1, 2, 4096}}}, axes({1}));
  // Blocks of rows (2^20 input elements or more): a bias gradient's column sums, batch-norm
  // statistics, a whole sum.
  expectSplitIsExact("reduce_sum", {randomFloats({16384, 96}, 61)}, {{DType::F32, {96}}},
                     axes({0}, false));
  expectSplitIsExact("reduce_mean", {randomFloats({64, 64, 256}, 62)}, {{DType::F32, {64}}},
                     axes({0, 2}, false));
  expectSplitIsExact("reduce_sum", {randomFloats({1024, 1024}, 65)}, {{DType::F32, {}}},
                     AttrsBuilder().i("keepdims", 0).build());
  std::vector<int64_t> ints(16384 * 64);
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = int64_t(i % 7) - 3;
  expectSplitIsExact("reduce_prod", {make<int64_t>({16384, 64}, ints)}, {{DType::I64, {16384}}},
                     axes({1}, false));
  expectSplitIsExact("reduce_max", {make<int64_t>({16384, 64}, ints)}, {{DType::I64, {64}}},
                     axes({0}, false));
  // bf16 is staged through f32 and split the same way.
  std::vector<double> values(128 * 512);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = double(int64_t(i * 37 % 101) - 50) / 8;
  expectSplitIsExact("reduce_sum", {makeFloat(DType::BF16, {128, 512}, values)},
                     {{DType::BF16, {128}}}, axes({1}, false));
}

// The blocks of rows compute what one walk computes: exact sums of small integers, a max
// that keeps a NaN and the first of equal extremes (-0 before +0), an integer product that
// wraps as one walk's does.
TEST(Parallel, ReductionBlocksCombineToTheWholeResult) {
  const int64_t rows = 16384, cols = 96;
  std::vector<double> values(size_t(rows * cols));
  std::vector<double> sums(size_t(cols), 0), maxima(size_t(cols), -100);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = double((i * j) % 13 - 6);
      values[size_t(i * cols + j)] = v;
      sums[size_t(j)] += v;
      maxima[size_t(j)] = std::max(maxima[size_t(j)], v);
    }
  values[size_t(700 * cols + 5)] = std::nan("");
  sums[5] = std::nan("");
  for (int64_t i = 0; i < rows; ++i) // column 7: -0 in row 0, +0 everywhere else
    values[size_t(i * cols + 7)] = i == 0 ? -0.0 : 0.0;
  sums[7] = 0;
  maxima[7] = 0;
  Attrs columns = AttrsBuilder().ints("axes", {0}).i("keepdims", 0).build();
  OwnedTensor x = makeFloat(DType::F32, {rows, cols}, values);
  KernelThreads threads(2);
  KernelResult sum = runKernel("reduce_sum", {x}, {{DType::F32, {cols}}}, columns);
  KernelResult max = runKernel("reduce_max", {x}, {{DType::F32, {cols}}}, columns);
  ASSERT_TRUE(sum.status.ok() && max.status.ok());
  std::vector<float> s = sum.out(0).floats(), m = max.out(0).floats();
  for (int64_t j = 0; j < cols; ++j) {
    if (j == 5) {
      EXPECT_TRUE(std::isnan(s[5]) && std::isnan(m[5]));
      continue;
    }
    EXPECT_EQ(s[size_t(j)], float(sums[size_t(j)])) << j;
    EXPECT_EQ(m[size_t(j)], float(maxima[size_t(j)])) << j;
  }
  EXPECT_TRUE(std::signbit(m[7])); // the first of the equal maxima, as one walk keeps
  std::vector<int64_t> ints(size_t(rows * 64));
  uint64_t product = 1;
  for (size_t i = 0; i < ints.size(); ++i) {
    ints[i] = int64_t(i % 5) + 2;
    product *= uint64_t(ints[i]);
  }
  KernelResult prod = runKernel("reduce_prod", {make<int64_t>({rows * 64}, ints)},
                                {{DType::I64, {}}}, AttrsBuilder().i("keepdims", 0).build());
  ASSERT_TRUE(prod.status.ok());
  EXPECT_EQ(prod.out(0).values<int64_t>()[0], int64_t(product));
}

TEST(Parallel, ConvolutionAndPoolingLoopsSplitExactly) {
  // With fewer images than threads, im2col and col2im split by channel (9 kernel positions x
  // 1,024 columns a channel); the GEMMs (295K multiply-adds a call) stay under their grain,
  // one OpenBLAS call each, so every output is the same bits on 3 threads as on one.
  auto convAttrs = [](int64_t pad, int64_t group) {
    return AttrsBuilder()
        .ints("strides", {1, 1})
        .ints("pads", {pad, pad, pad, pad})
        .ints("dilations", {1, 1})
        .i("group", group)
        .build();
  };
  Attrs conv = convAttrs(1, 1);
  expectSplitIsExact("conv2d", {randomFloats({2, 8, 32, 32}, 30), randomFloats({4, 8, 3, 3}, 31)},
                     {{DType::F32, {2, 4, 32, 32}}}, conv);
  expectSplitIsExact("conv2d_grad_input",
                     {randomFloats({2, 4, 32, 32}, 32), randomFloats({4, 8, 3, 3}, 33)},
                     {{DType::F32, {2, 8, 32, 32}}}, conv);
  expectSplitIsExact("conv2d_grad_weight",
                     {randomFloats({2, 8, 32, 32}, 34), randomFloats({2, 4, 32, 32}, 35)},
                     {{DType::F32, {4, 8, 3, 3}}}, conv);
  // With at least as many (image, group) units as threads, the units split instead, each
  // chunk building its own columns (Workspace.h convColumnSlots) and calling its GEMMs whole:
  // 6 images of 2.4M multiply-adds, and 3 images of 2 groups.
  expectSplitIsExact("conv2d",
                     {randomFloats({6, 16, 32, 32}, 41), randomFloats({16, 16, 3, 3}, 42)},
                     {{DType::F32, {6, 16, 32, 32}}}, conv);
  expectSplitIsExact("conv2d_grad_input",
                     {randomFloats({6, 16, 32, 32}, 43), randomFloats({16, 16, 3, 3}, 44)},
                     {{DType::F32, {6, 16, 32, 32}}}, conv);
  // conv2d_grad_weight sums its images in convColumnSlots(6, 2.4M) = 4 fixed runs, a dw
  // each, added in run order: the same bits on any number of threads.
  expectSplitIsExact("conv2d_grad_weight",
                     {randomFloats({6, 16, 32, 32}, 49), randomFloats({6, 16, 32, 32}, 50)},
                     {{DType::F32, {16, 16, 3, 3}}}, conv);
  Attrs grouped = convAttrs(1, 2);
  expectSplitIsExact("conv2d", {randomFloats({3, 16, 32, 32}, 45), randomFloats({32, 8, 3, 3}, 46)},
                     {{DType::F32, {3, 32, 32, 32}}}, grouped);
  expectSplitIsExact("conv2d_grad_input",
                     {randomFloats({3, 32, 32, 32}, 47), randomFloats({32, 8, 3, 3}, 48)},
                     {{DType::F32, {3, 16, 32, 32}}}, grouped);
  expectSplitIsExact("conv2d_grad_weight",
                     {randomFloats({3, 16, 32, 32}, 51), randomFloats({3, 32, 32, 32}, 52)},
                     {{DType::F32, {32, 8, 3, 3}}}, grouped);
  // The bias add splits by output plane (32 planes of 16,384); a pointwise convolution
  // builds no columns.
  Attrs pointwise = convAttrs(0, 1);
  expectSplitIsExact("conv2d",
                     {randomFloats({4, 2, 128, 128}, 36), randomFloats({8, 2, 1, 1}, 37),
                      randomFloats({8}, 38)},
                     {{DType::F32, {4, 8, 128, 128}}}, pointwise);
  // Pools and their adjoints split by plane: 32 planes of 32 x 32, 3 x 3 windows, stride 2.
  // max_pool2d_grad keeps an argmax plane per chunk (4 slots: Workspace.h maxPoolGradSlots).
  Attrs pool = AttrsBuilder()
                   .ints("kernel", {3, 3})
                   .ints("strides", {2, 2})
                   .ints("pads", {1, 1, 1, 1})
                   .build();
  OwnedTensor x = randomFloats({4, 8, 32, 32}, 39), dy = randomFloats({4, 8, 16, 16}, 40);
  expectSplitIsExact("max_pool2d", {x}, {{DType::F32, {4, 8, 16, 16}}}, pool);
  expectSplitIsExact("avg_pool2d", {x}, {{DType::F32, {4, 8, 16, 16}}}, pool);
  expectSplitIsExact("max_pool2d_grad", {x, dy}, {{DType::F32, {4, 8, 32, 32}}}, pool);
  expectSplitIsExact("avg_pool2d_grad", {dy}, {{DType::F32, {4, 8, 32, 32}}}, pool);
}

} // namespace
} // namespace plait::rt::test
