// matmul (1-D promotion, broadcast batches, every numeric dtype) and gemm.
#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<double> ramp(int64_t n, double scale, double offset) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i * scale + offset;
  return v;
}

TEST(LinalgKernels, MatmulFoldsBatchIntoRows) {
  // [2,3,4] x [4,5]: the linear-layer case (reference from PyTorch).
  auto a = makeFloat(DType::F32, {2, 3, 4}, ramp(24, 0.25, -1));
  auto b = makeFloat(DType::F32, {4, 5}, ramp(20, 0.2, -2));
  auto out = runOk("matmul", {a, b}, DType::F32, {2, 3, 5});
  EXPECT_TRUE(allClose(out.floats(),
                       {2.5, 2.0, 1.5, 1.0, 0.5, 0.5, 0.8, 1.1, 1.4, 1.7, -1.5, -0.4, 0.7, 1.8, 2.9,
                        -3.5, -1.6, 0.3, 2.2, 4.1, -5.5, -2.8, -0.1, 2.6, 5.3, -7.5, -4.0, -0.5,
                        3.0, 6.5}));
}

TEST(LinalgKernels, MatmulBroadcastsBatchDims) {
  // [1,2,3] x [4,3,2] -> [4,2,2]
  auto a = makeFloat(DType::F64, {1, 2, 3}, ramp(6, 1, 0));
  auto b = makeFloat(DType::F64, {4, 3, 2}, ramp(24, 1, 0));
  auto out = runOk("matmul", {a, b}, DType::F64, {4, 2, 2});
  EXPECT_TRUE(allClose(out.values<double>(), {10, 13, 28, 40, 28, 31, 100, 112, 46, 49, 172, 184,
                                              64, 67, 244, 256}));
  // [2,1,1,2] x [3,2,1] -> [2,3,1,1]
  auto c = makeFloat(DType::F32, {2, 1, 1, 2}, {1, 2, 3, 4});
  auto d = makeFloat(DType::F32, {3, 2, 1}, {1, 1, 0, 1, 2, 0});
  auto out2 = runOk("matmul", {c, d}, DType::F32, {2, 3, 1, 1});
  EXPECT_TRUE(allClose(out2.floats(), {3, 2, 2, 7, 4, 6}));
}

TEST(LinalgKernels, MatmulPromotesVectors) {
  auto v = makeFloat(DType::F32, {3}, {1, 2, 3});
  auto b = makeFloat(DType::F32, {4, 3, 2}, ramp(24, 1, 0));
  EXPECT_TRUE(allClose(runOk("matmul", {v, b}, DType::F32, {4, 2}).floats(),
                       {16, 22, 52, 58, 88, 94, 124, 130}));
  auto a = makeFloat(DType::F32, {1, 2, 3}, ramp(6, 1, 0));
  EXPECT_TRUE(allClose(runOk("matmul", {a, v}, DType::F32, {1, 2}).floats(), {8, 26}));
  EXPECT_TRUE(allClose(runOk("matmul", {v, v}, DType::F32, {}).floats(), {14}));
}

TEST(LinalgKernels, MatmulIntegersAndHalves) {
  auto a = make<int64_t>({2, 2}, {1, 2, 3, 4});
  auto b = make<int64_t>({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(runOk("matmul", {a, b}, DType::I64, {2, 2}).values<int64_t>(),
            (std::vector<int64_t>{19, 22, 43, 50}));
  auto ai = make<int32_t>({2, 2}, {1, -2, 3, 4});
  auto bi = make<int32_t>({2}, {5, 6});
  EXPECT_EQ(runOk("matmul", {ai, bi}, DType::I32, {2}).values<int32_t>(),
            (std::vector<int32_t>{-7, 39}));
  auto ah = makeFloat(DType::BF16, {2, 2}, {1, 2, 3, 4});
  auto bh = makeFloat(DType::BF16, {2, 2}, {5, 6, 7, 8});
  auto out = runOk("matmul", {ah, bh}, DType::BF16, {2, 2});
  EXPECT_TRUE(allClose(out.floats(), {19, 22, 43, 50}));
}

TEST(LinalgKernels, MatmulWithEmptyContraction) {
  auto a = make<float>({2, 0}, {});
  auto b = make<float>({0, 3}, {});
  EXPECT_TRUE(allClose(runOk("matmul", {a, b}, DType::F32, {2, 3}).floats(), {0, 0, 0, 0, 0, 0}));
}

/// `x` [..., r, c] with its last two dimensions swapped, as a new tensor of the same dtype.
template <typename T> OwnedTensor transposeLast2(const OwnedTensor &x) {
  std::vector<int64_t> shape = x.view.shape;
  size_t n = shape.size();
  int64_t r = shape[n - 2], c = shape[n - 1];
  std::swap(shape[n - 2], shape[n - 1]);
  std::vector<T> in = x.values<T>(), out(in.size());
  for (size_t m = 0; m < in.size() / size_t(r * c); ++m)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        out[m * r * c + j * r + i] = in[m * r * c + i * c + j];
  return make<T>(shape, out);
}

TEST(LinalgKernels, MatmulReadsTransposedOperands) {
  // Each case: lhs and rhs as the product sees them; the kernel gets the stored (transposed)
  // forms with the flags and must give exactly the plain product.
  struct Case {
    std::vector<int64_t> a, b, out;
    bool ta, tb;
  };
  for (const Case &c : std::vector<Case>{{{3, 4}, {4, 2}, {3, 2}, true, false},
                                         {{3, 4}, {4, 2}, {3, 2}, false, true},
                                         {{3, 4}, {4, 2}, {3, 2}, true, true},
                                         {{2, 3, 4}, {4, 5}, {2, 3, 5}, false, true}, // rows fold
                                         {{2, 3, 4}, {4, 5}, {2, 3, 5}, true, false},
                                         {{2, 1, 3, 4}, {3, 4, 2}, {2, 3, 3, 2}, true, true}}) {
    int64_t na = elements(c.a), nb = elements(c.b);
    auto a = makeFloat(DType::F32, c.a, ramp(na, 0.25, -1));
    auto b = makeFloat(DType::F32, c.b, ramp(nb, 0.5, -3));
    std::vector<float> expected = runOk("matmul", {a, b}, DType::F32, c.out).floats();
    auto as = c.ta ? transposeLast2<float>(a) : a;
    auto bs = c.tb ? transposeLast2<float>(b) : b;
    auto out = runOk("matmul", {as, bs}, DType::F32, c.out,
                     AttrsBuilder().i("transpose_lhs", c.ta).i("transpose_rhs", c.tb).build());
    EXPECT_EQ(out.floats(), expected) << "ta=" << c.ta << " tb=" << c.tb;
  }
  // Integers take the same flags.
  auto ia = make<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto ib = make<int64_t>({2, 3}, {1, 0, 2, 0, 1, 1});
  auto iout = runOk("matmul", {ia, ib}, DType::I64, {2, 2},
                    AttrsBuilder().i("transpose_rhs", 1).build());
  EXPECT_EQ(iout.values<int64_t>(), (std::vector<int64_t>{7, 5, 16, 11}));
  // A vector cannot be transposed.
  auto v = make<float>({3}, {1, 2, 3});
  auto m = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  KernelResult bad = runKernel("matmul", {v, m}, {{DType::F32, {2}}},
                               AttrsBuilder().i("transpose_lhs", 1).build());
  EXPECT_FALSE(bad.status.ok());
}

/// `x` (f32) transposed by `perm`, as the transpose kernel computes it.
OwnedTensor permute(const OwnedTensor &x, std::vector<int64_t> perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(x.view.shape[size_t(p)]);
  return runOk("transpose", {x}, DType::F32, shape, AttrsBuilder().ints("perm", perm).build());
}

// lhs_perm / rhs_perm / result_perm: the product of the permuted operands, stored permuted,
// exactly as transposes around a plain matmul give it (an attention head's layouts, a
// broadcast batch, and a permutation combined with a transpose flag).
TEST(LinalgKernels, MatmulReadsAndWritesPermutedLayouts) {
  struct Case {
    std::vector<int64_t> a, b, pa, pb, pr, product; // product: the logical result's shape
    bool tb;
  };
  for (const Case &c : std::vector<Case>{
           {{2, 3, 4, 8}, {2, 5, 4, 8}, {0, 2, 1, 3}, {0, 2, 3, 1}, {}, {2, 4, 3, 5}, false},
           {{2, 4, 3, 5}, {2, 5, 4, 8}, {}, {0, 2, 1, 3}, {0, 2, 1, 3}, {2, 4, 3, 8}, false},
           {{2, 3, 4, 8}, {2, 5, 4, 8}, {0, 2, 1, 3}, {0, 2, 1, 3}, {}, {2, 4, 3, 5}, true},
           {{3, 4, 8}, {1, 8, 6}, {1, 0, 2}, {}, {1, 0, 2}, {4, 3, 6}, false},
           {{2, 8, 3}, {8, 5}, {0, 2, 1}, {}, {}, {2, 3, 5}, false}}) {
    int64_t na = elements(c.a), nb = elements(c.b);
    auto a = makeFloat(DType::F32, c.a, ramp(na, 0.125, -2));
    auto b = makeFloat(DType::F32, c.b, ramp(nb, 0.25, -3));
    // The operands as the product reads them: permuted, then (rhs) the flag's swap.
    OwnedTensor la = c.pa.empty() ? a : permute(a, c.pa);
    OwnedTensor lb = c.pb.empty() ? b : permute(b, c.pb);
    if (c.tb)
      lb = permute(lb, {0, 1, 3, 2});
    OwnedTensor product = runOk("matmul", {la, lb}, DType::F32, c.product);
    OwnedTensor expected = c.pr.empty() ? product : permute(product, c.pr);
    AttrsBuilder attrs;
    if (!c.pa.empty())
      attrs.ints("lhs_perm", c.pa);
    if (!c.pb.empty())
      attrs.ints("rhs_perm", c.pb);
    if (!c.pr.empty())
      attrs.ints("result_perm", c.pr);
    if (c.tb)
      attrs.i("transpose_rhs", 1);
    std::vector<int64_t> stored(expected.view.shape.begin(), expected.view.shape.end());
    auto out = runOk("matmul", {a, b}, DType::F32, stored, attrs.build());
    EXPECT_EQ(out.floats(), expected.floats()) << "lhs " << c.a.size() << "-D, tb " << c.tb;
  }
  // A permutation BLAS cannot read through strides is an error, not a wrong product.
  auto a = makeFloat(DType::F32, {2, 3, 4}, ramp(24, 1, 0));
  KernelResult bad = runKernel("matmul", {a, a}, {{DType::F32, {4, 2, 4}}},
                               AttrsBuilder().ints("lhs_perm", {2, 0, 1}).build());
  ASSERT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("lhs_perm must keep the innermost dimension"),
            std::string::npos)
      << bad.status.message();
}

// fold_rows (plait-fold-matmul-rows): a permuted matmul of one shared rhs matrix computed
// as GEMMs over chunks of the result's stored rows, their lhs rows gathered first. Each case
// against the same call without the attribute (a GEMM per batch entry): f64 within 1e-12,
// f32 within 1e-5 and 1e-7 x K, bf16 within its rounding of the f32 product; on 1 and 2
// threads; each taking exactly its declared workspace (the harness checks). Cases: the
// in-projection of nn.MultiheadAttention ([B, T, D] read as [T, B, D], with a bias), its
// input gradient (the product stored [B, T, D]), both permutations at once in 4-D, an lhs
// read transposed (K strided) against a transposed rhs, a broadcast lhs batch against a rhs batch
// of ones, and 300 rows of K = 4096 in two chunks (256 rows and 44).
TEST(LinalgKernels, MatmulFoldsPermutedRowsIntoChunks) {
  struct Case {
    std::vector<int64_t> a, b, out;
    int64_t k;
    bool bias;
    AttrsBuilder attrs;
  };
  // The lhs_perm, rhs_perm and result_perm given (not empty).
  auto perms = [](std::vector<int64_t> lhs, std::vector<int64_t> rhs, std::vector<int64_t> out) {
    AttrsBuilder attrs;
    const char *names[3] = {"lhs_perm", "rhs_perm", "result_perm"};
    std::vector<int64_t> *values[3] = {&lhs, &rhs, &out};
    for (int i = 0; i < 3; ++i)
      if (!values[i]->empty())
        attrs.ints(names[i], *values[i]);
    return attrs;
  };
  std::vector<Case> cases = {
      {{8, 37, 64}, {64, 48}, {37, 8, 48}, 64, true, perms({1, 0, 2}, {}, {})},
      {{37, 8, 40}, {40, 24}, {8, 37, 24}, 40, false, perms({}, {}, {1, 0, 2})},
      {{5, 6, 7, 16}, {16, 9}, {5, 6, 7, 9}, 16, false, perms({2, 0, 1, 3}, {}, {1, 2, 0, 3})},
      {{2, 16, 30}, {9, 16}, {2, 30, 9}, 16, true, perms({0, 2, 1}, {}, {}).i("transpose_rhs", 1)},
      {{1, 6, 3, 8}, {1, 5, 8}, {1, 3, 6, 5}, 8, false, perms({0, 2, 1, 3}, {0, 2, 1}, {})},
      {{3, 100, 4096}, {4096, 5}, {100, 3, 5}, 4096, true, perms({1, 0, 2}, {}, {})}};
  for (const Case &c : cases) {
    std::string what = "lhs " + std::to_string(c.a.size()) + "-D [" + std::to_string(c.a[0]) +
                       ", ...] out " + std::to_string(c.out.back());
    std::vector<std::vector<int64_t>> shapes = {c.a, c.b};
    if (c.bias)
      shapes.push_back({c.out.back()});
    for (DType dtype : {DType::F64, DType::F32, DType::BF16}) {
      std::vector<OwnedTensor> in;
      for (size_t i = 0; i < shapes.size(); ++i) {
        std::vector<float> r = randomFloats(shapes[i], uint32_t(11 + i), -1, 1).floats();
        in.push_back(makeFloat(dtype, shapes[i], std::vector<double>(r.begin(), r.end())));
      }
      Attrs folded = AttrsBuilder(c.attrs).i("fold_rows", 1).build(), plain = c.attrs.build();
      // Folded, it gathers (a workspace); not, an f32/f64 matmul takes none.
      std::vector<OperandType> operands;
      for (size_t i = 0; i < shapes.size(); ++i)
        operands.push_back({dtype, &shapes[i]});
      std::vector<OperandType> result = {{dtype, &c.out}};
      EXPECT_GT(kernelWorkspaceBytes("matmul", operands, result, folded), 0u) << what;
      if (dtype != DType::BF16)
        EXPECT_EQ(kernelWorkspaceBytes("matmul", operands, result, plain), 0u) << what;
      std::vector<double> want = runOk("matmul", in, dtype, c.out, plain).doubles();
      for (int threads : {1, 2}) {
        KernelThreads scope(threads);
        std::vector<double> got = runOk("matmul", in, dtype, c.out, folded).doubles();
        // f32: BLAS blocks the two calls' sums of K products differently.
        double rtol = dtype == DType::F64 ? 1e-12 : dtype == DType::F32 ? 1e-5 : 1.0 / 128;
        double atol = dtype == DType::F32 ? 1e-7 * double(c.k) : rtol;
        EXPECT_TRUE(allClose(got, want, rtol, atol))
            << what << " " << dtypeName(dtype) << " threads " << threads;
      }
    }
  }
}

// matmul's bias (plait-fuse-gemm-epilogue): the product plus the bias on every row, for
// each of the kernel's GEMM paths (the batch folded into rows, one GEMM per batch entry of a
// broadcast or transposed lhs, a permuted lhs) and bf16 through f32; exactly the product then
// plait.add, as the GEMM accumulates onto the bias rows once over K.
TEST(LinalgKernels, MatmulAddsItsBias) {
  struct Case {
    std::vector<int64_t> a, b, out;
    Attrs attrs;
  };
  for (const Case &c : std::vector<Case>{
           {{2, 3, 4}, {5, 4}, {2, 3, 5}, AttrsBuilder().i("transpose_rhs", 1).build()},
           {{2, 4, 3}, {4, 5}, {2, 3, 5}, AttrsBuilder().i("transpose_lhs", 1).build()},
           {{6, 4}, {4, 5}, {6, 5}, {}},
           {{3, 2, 4}, {4, 5}, {2, 3, 5}, AttrsBuilder().ints("lhs_perm", {1, 0, 2}).build()}}) {
    int64_t n = c.out.back();
    auto a = makeFloat(DType::F32, c.a, ramp(elements(c.a), 0.125, -1));
    auto b = makeFloat(DType::F32, c.b, ramp(elements(c.b), 0.25, -2));
    auto bias = makeFloat(DType::F32, {n}, ramp(n, 0.5, -1));
    OwnedTensor product = runOk("matmul", {a, b}, DType::F32, c.out, c.attrs);
    OwnedTensor expected = runOk("add", {product, bias}, DType::F32, c.out);
    auto out = runOk("matmul", {a, b, bias}, DType::F32, c.out, c.attrs);
    EXPECT_EQ(out.floats(), expected.floats()) << "lhs " << c.a.size() << "-D";
    auto ah = makeFloat(DType::BF16, c.a, ramp(elements(c.a), 0.125, -1));
    auto bh = makeFloat(DType::BF16, c.b, ramp(elements(c.b), 0.25, -2));
    auto biash = makeFloat(DType::BF16, {n}, ramp(n, 0.5, -1));
    auto outh = runOk("matmul", {ah, bh, biash}, DType::BF16, c.out, c.attrs);
    std::vector<float> want = expected.floats();
    EXPECT_TRUE(allClose(outh.floats(), std::vector<double>(want.begin(), want.end()), 2e-2, 2e-2));
  }
  // A bias that is not the result's last dimension, of another dtype, or with result_perm.
  auto a = makeFloat(DType::F32, {2, 3}, ramp(6, 1, 0));
  auto b = makeFloat(DType::F32, {3, 4}, ramp(12, 1, 0));
  KernelResult bad = runKernel("matmul", {a, b, makeFloat(DType::F32, {2}, {1, 2})},
                               {{DType::F32, {2, 4}}});
  EXPECT_EQ(bad.status.message(),
            "matmul: bias [2] is not a vector of the result [2, 4]'s last dimension");
  bad = runKernel("matmul", {a, b, makeFloat(DType::F64, {4}, {1, 2, 3, 4})},
                  {{DType::F32, {2, 4}}});
  EXPECT_FALSE(bad.status.ok());
  auto a3 = makeFloat(DType::F32, {2, 3, 4}, ramp(24, 1, 0));
  auto b3 = makeFloat(DType::F32, {2, 4, 5}, ramp(40, 1, 0));
  bad = runKernel("matmul", {a3, b3, makeFloat(DType::F32, {5}, ramp(5, 1, 0))},
                  {{DType::F32, {3, 2, 5}}}, AttrsBuilder().ints("result_perm", {1, 0, 2}).build());
  EXPECT_EQ(bad.status.message(), "matmul: a bias needs a product without result_perm");
}

// bf16/f16 GEMMs run in f32 tiles of at most 512 x 1024 of C, summed over panels of at most
// 1024 of K (Workspace.h halfGemmTile). Shapes past each bound, every operand layout, a bias,
// gemm's alpha, beta and c, and an empty K: each gives the f32 product of its widened
// operands rounded once to its dtype, within that rounding's ulp (panels of K may add in
// another order than one f32 GEMM), and takes exactly its declared tiles (the harness checks).
TEST(LinalgKernels, HalfGemmsRunInF32Tiles) {
  struct Case {
    const char *kernel;
    std::vector<int64_t> a, b, out;
    Attrs attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {"matmul", {520, 30}, {30, 40}, {520, 40}, {}, true},        // two row tiles
      {"matmul", {3, 20}, {20, 1030}, {3, 1030}, {}, false},       // two column tiles
      {"matmul", {5, 2100}, {2100, 7}, {5, 7}, {}, true},          // three panels of K
      {"matmul", {1100, 530}, {1100, 3}, {530, 3}, AttrsBuilder().i("transpose_lhs", 1).build(),
       false},                                                     // A stored [K, M]
      {"matmul", {2, 1030}, {1030, 1030}, {2, 1030}, AttrsBuilder().i("transpose_rhs", 1).build(),
       true},                                                      // B stored [N, K]
      {"matmul", {2, 300, 16}, {16, 8}, {2, 300, 8}, {}, true},    // batch folded: 600 rows
      {"matmul", {2, 520, 6}, {2, 6, 3}, {2, 520, 3}, {}, false},  // a GEMM per batch entry
      {"matmul", {600, 2, 4}, {4, 5}, {2, 600, 5}, AttrsBuilder().ints("lhs_perm", {1, 0, 2}).build(),
       true},                                                      // strided lhs
      {"matmul", {4, 0}, {0, 3}, {4, 3}, {}, true},                // K empty: the bias rows
      {"gemm", {1030, 520}, {6, 1030}, {520, 6},
       AttrsBuilder().i("trans_a", 1).i("trans_b", 1).f("alpha", 0.5).f("beta", 2).build(),
       true}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : cases) {
      std::string what = std::string(c.kernel) + " " + dtypeName(dtype) + " lhs " +
                         std::to_string(c.a[0]) + " out " + std::to_string(c.out.back());
      // The half operands, and f32 ones of exactly their values.
      std::vector<OwnedTensor> half, wide;
      std::vector<std::vector<int64_t>> shapes = {c.a, c.b};
      if (c.bias)
        shapes.push_back({c.out.back()});
      for (size_t i = 0; i < shapes.size(); ++i) {
        std::vector<float> r = randomFloats(shapes[i], uint32_t(7 + i), -1, 1).floats();
        half.push_back(makeFloat(dtype, shapes[i], std::vector<double>(r.begin(), r.end())));
        std::vector<float> v = half.back().floats();
        wide.push_back(makeFloat(DType::F32, shapes[i], std::vector<double>(v.begin(), v.end())));
      }
      std::vector<float> f32 = runOk(c.kernel, wide, DType::F32, c.out, c.attrs).floats();
      OwnedTensor rounded = makeFloat(dtype, c.out, std::vector<double>(f32.begin(), f32.end()));
      std::vector<float> want = rounded.floats();
      std::vector<float> got = runOk(c.kernel, half, dtype, c.out, c.attrs).floats();
      double ulp = dtype == DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
      EXPECT_TRUE(allClose(got, std::vector<double>(want.begin(), want.end()), ulp, 1e-3))
          << what;
    }
}

TEST(LinalgKernels, GemmTransposesAndBias) {
  // a: [2,3], b^T with b: [4,3], c: [4] -> [2,4]
  auto a = makeFloat(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = makeFloat(DType::F32, {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  auto c = makeFloat(DType::F32, {4}, {0.5, 0, 0, -1});
  auto out = runOk("gemm", {a, b, c}, DType::F32, {2, 4}, AttrsBuilder().i("trans_b", 1).build());
  EXPECT_TRUE(allClose(out.floats(), {1.5, 2, 3, 5, 4.5, 5, 6, 14}));
  // alpha, beta and a column bias [2,1]; a^T with a stored [3,2].
  auto at = makeFloat(DType::F64, {3, 2}, {1, 4, 2, 5, 3, 6});
  auto bb = makeFloat(DType::F64, {3, 1}, {1, 1, 1});
  auto cc = makeFloat(DType::F64, {2, 1}, {10, 20});
  auto out2 = runOk("gemm", {at, bb, cc}, DType::F64, {2, 1},
                    AttrsBuilder().i("trans_a", 1).f("alpha", 2).f("beta", 0.5).build());
  EXPECT_TRUE(allClose(out2.values<double>(), {2 * 6 + 5, 2 * 15 + 10}));
  // No c: just the product; scalar c broadcasts.
  auto out3 = runOk("gemm", {a, b}, DType::F32, {2, 4}, AttrsBuilder().i("trans_b", 1).build());
  EXPECT_TRUE(allClose(out3.floats(), {1, 2, 3, 6, 4, 5, 6, 15}));
  auto out4 = runOk("gemm", {a, b, makeFloat(DType::F32, {}, {1})}, DType::F32, {2, 4},
                    AttrsBuilder().i("trans_b", 1).build());
  EXPECT_TRUE(allClose(out4.floats(), {2, 3, 4, 7, 5, 6, 7, 16}));
}

TEST(LinalgKernels, GemmIntegers) {
  auto a = make<int64_t>({2, 2}, {1, 2, 3, 4});
  auto b = make<int64_t>({2, 2}, {1, 0, 0, 1});
  auto c = make<int64_t>({1, 2}, {10, 20});
  EXPECT_EQ(runOk("gemm", {a, b, c}, DType::I64, {2, 2}, AttrsBuilder().i("trans_a", 1).build())
                .values<int64_t>(),
            (std::vector<int64_t>{11, 23, 12, 24}));
}

TEST(LinalgKernels, GemmIntegersScaledSaturate) {
  // alpha and beta other than 1 go through double: truncated toward zero, and saturated where
  // the product leaves the type (a plain conversion would be undefined there).
  auto a = make<int32_t>({1, 2}, {INT32_MAX, 3});
  auto b = make<int32_t>({2, 2}, {1, 0, 0, 1});
  auto c = make<int32_t>({1, 2}, {-7, 5});
  auto attrs = AttrsBuilder().f("alpha", 2.5).f("beta", 0.5).build();
  EXPECT_EQ(runOk("gemm", {a, b, c}, DType::I32, {1, 2}, attrs).values<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, 10})); // 7.5 + 2.5 = 10
  auto neg = AttrsBuilder().f("alpha", -3).f("beta", 0.5).build();
  EXPECT_EQ(runOk("gemm", {a, b, c}, DType::I32, {1, 2}, neg).values<int32_t>(),
            (std::vector<int32_t>{INT32_MIN, -6})); // -9 + 2.5 = -6.5 -> -6
  auto u = makeAs<uint8_t>(DType::U8, {1, 1}, {200});
  auto one = makeAs<uint8_t>(DType::U8, {1, 1}, {1});
  EXPECT_EQ(runOk("gemm", {u, one}, DType::U8, {1, 1}, AttrsBuilder().f("alpha", -1).build())
                .values<uint8_t>(),
            (std::vector<uint8_t>{0}));
  // alpha 1 and beta 1 wrap modulo 2^32, as the integer product does.
  auto wrap = make<int32_t>({1, 2}, {1, 0});
  EXPECT_EQ(runOk("gemm", {a, b, wrap}, DType::I32, {1, 2}).values<int32_t>(),
            (std::vector<int32_t>{INT32_MIN, 3}));
}

TEST(LinalgKernels, Errors) {
  auto a = make<float>({2, 3}, std::vector<float>(6, 1));
  auto b = make<float>({2, 3}, std::vector<float>(6, 1));
  auto r = runKernel("matmul", {a, b}, {{DType::F32, {2, 3}}});
  EXPECT_EQ(r.status.message(), "matmul: contracting dimensions differ: [2, 3] times [2, 3]");
  r = runKernel("matmul", {a, make<int64_t>({3}, {1, 2, 3})}, {{DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "matmul: unsupported dtype f32 x i64");
  r = runKernel("matmul", {make<uint8_t>({1, 1}, {1}), make<uint8_t>({1, 1}, {1})},
                {{DType::I1, {1, 1}}});
  EXPECT_EQ(r.status.message(), "matmul: unsupported dtype i1");
  r = runKernel("gemm", {a, b, make<float>({3}, {1, 2, 3})}, {{DType::F32, {2, 2}}},
                AttrsBuilder().i("trans_b", 1).build());
  EXPECT_EQ(r.status.message(), "gemm: c of shape [3] does not broadcast to [2, 2]");
}

} // namespace
} // namespace plait::rt::test

namespace plait::rt::test {
namespace {

/// The determinant of the n x n row-major `a` by cofactor expansion along the first row (the
/// definition; exponential, for the small test matrices).
double expansion(const std::vector<double> &a, int64_t n) {
  if (n == 1)
    return a[0];
  double det = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t c = 0; c < n; ++c)
        if (c != j)
          minor.push_back(a[r * n + c]);
    det += (j % 2 == 0 ? 1 : -1) * a[j] * expansion(minor, n - 1);
  }
  return det;
}

/// The cofactor matrix by the definition.
std::vector<double> cofactorsByMinors(const std::vector<double> &a, int64_t n) {
  std::vector<double> c(n * n, 1.0);
  for (int64_t i = 0; n > 1 && i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> minor;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t s = 0; s < n && r != i; ++s)
          if (s != j)
            minor.push_back(a[r * n + s]);
      c[i * n + j] = ((i + j) % 2 == 0 ? 1 : -1) * expansion(minor, n - 1);
    }
  return c;
}

TEST(LinalgKernels, DetOfEachMatrix) {
  // [[1, 2], [3, 4]] -> -2; [[2, 0], [0, 3]] -> 6; a row swap on the way (the first pivot 0).
  auto x = makeFloat(DType::F64, {3, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3, 0, 1, 1, 0});
  EXPECT_EQ(runOk("det", {x}, DType::F64, {3}).values<double>(), (std::vector<double>{-2, 6, -1}));
  // Random 1..5 x 5 matrices against the expansion, f32 and f64.
  for (int64_t n = 1; n <= 5; ++n) {
    auto a = randomFloats({2, n, n}, uint32_t(n));
    std::vector<double> values(a.doubles());
    std::vector<double> want;
    for (int64_t b = 0; b < 2; ++b)
      want.push_back(expansion({values.begin() + b * n * n, values.begin() + (b + 1) * n * n}, n));
    EXPECT_TRUE(allClose(runOk("det", {a}, DType::F32, {2}).doubles(), want)) << n;
    auto a64 = convertedTo(DType::F64, a);
    auto got = runOk("det", {a64}, DType::F64, {2}).values<double>();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i]))) << n;
  }
  // A singular matrix (a row twice): exactly 0. A scalar batch of one matrix: shape [].
  auto s = makeFloat(DType::F32, {3, 3}, {1, 2, 3, 1, 2, 3, 4, 5, 6});
  EXPECT_EQ(runOk("det", {s}, DType::F32, {}).floats(), (std::vector<float>{0}));
}

TEST(LinalgKernels, CofactorsAreTheGradientOfDet) {
  for (int64_t n = 1; n <= 5; ++n) {
    auto a = convertedTo(DType::F64, randomFloats({2, n, n}, uint32_t(10 + n)));
    std::vector<double> values(a.values<double>()), want;
    for (int64_t b = 0; b < 2; ++b) {
      auto c = cofactorsByMinors({values.begin() + b * n * n, values.begin() + (b + 1) * n * n}, n);
      want.insert(want.end(), c.begin(), c.end());
    }
    auto got = runOk("cofactors", {a}, DType::F64, {2, n, n}).values<double>();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-10 * std::max(1.0, std::abs(want[i]))) << n << " " << i;
  }
  // Singular matrices, where det * inverse^T does not exist: of rank n - 1 the cofactors are
  // not zero (each minor's own determinant), of rank n - 2 they are.
  // (Entries whose factorisations are exact, so that det is exactly 0.)
  std::vector<double> rank2 = {1, 2, 3, 2, 4, 6, 1, 0, 1}, rank1 = {1, 2, 4, 2, 4, 8, 4, 8, 16};
  auto s = makeFloat(DType::F64, {2, 3, 3}, [&] {
    std::vector<double> v(rank2);
    v.insert(v.end(), rank1.begin(), rank1.end());
    return v;
  }());
  auto want = cofactorsByMinors(rank2, 3);
  for (int i = 0; i < 9; ++i)
    want.push_back(0.0);
  EXPECT_EQ(runOk("cofactors", {s}, DType::F64, {2, 3, 3}).values<double>(), want);
}

TEST(LinalgKernels, DetAndCofactorsOfHalvesRunInF32) {
  auto a = makeFloat(DType::BF16, {2, 2, 2}, {1, 2, 3, 4, 0.5, 0.25, -1, 2});
  EXPECT_TRUE(allClose(runOk("det", {a}, DType::BF16, {2}).floats(), {-2, 1.25}));
  EXPECT_TRUE(allClose(runOk("cofactors", {a}, DType::BF16, {2, 2, 2}).floats(),
                       {4, -3, -2, 1, 2, 1, -0.25, 0.5}));
}

TEST(LinalgKernels, DetAndCofactorsErrors) {
  auto r = runKernel("det", {make<float>({2, 3}, {1, 2, 3, 4, 5, 6})}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "det: the matrices of x must be square and not empty, got 2 x 3");
  r = runKernel("det", {make<float>({2}, {1, 2})}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "det: x must have rank >= 2 (matrices in its last two axes)");
  r = runKernel("det", {make<float>({1, 1}, {1})}, {{DType::F32, {1}}});
  EXPECT_EQ(r.status.message(), "det: output has shape [1], expected []");
  r = runKernel("cofactors", {make<int64_t>({1, 1}, {1})}, {{DType::I64, {1, 1}}});
  EXPECT_EQ(r.status.message(), "cofactors: unsupported dtype i64");
}

} // namespace
} // namespace plait::rt::test
