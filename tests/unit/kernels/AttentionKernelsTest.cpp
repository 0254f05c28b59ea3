// attention and attention_grad against a direct double-precision evaluation of their
// formulas (scores, softmax, weighted sum; and the softmax's chain rule), over shapes that
// cross the kernels' blocks of query rows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"
#include "codegen/schema/DropoutMask.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

struct Case {
  int64_t batch, queries, keys, heads, dim, valueDim;
  bool causal;
};

/// The reference forward and backward of one case, in double, on [B, seq, H, dim] data.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

/// `dropout` > 0: the probabilities dropped by the mask of DropoutMask.h's stream `key` over
/// their [B, H, S, T] indices, kept ones times 1 / (1 - dropout) in f32, before they meet v.
Reference reference(const Case &c, double scale, const std::vector<double> &q,
                    const std::vector<double> &k, const std::vector<double> &v,
                    const std::vector<double> &dout, double dropout = 0, uint64_t key = 0) {
  const int64_t B = c.batch, S = c.queries, T = c.keys, H = c.heads, D = c.dim, E = c.valueDim;
  Reference r;
  r.out.assign(B * S * H * E, 0);
  r.lse.assign(B * H * S, 0);
  r.dq.assign(B * S * H * D, 0);
  r.dk.assign(B * T * H * D, 0);
  r.dv.assign(B * T * H * E, 0);
  auto qi = [&](int64_t b, int64_t i, int64_t h, int64_t d) { return ((b * S + i) * H + h) * D + d; };
  auto ki = [&](int64_t b, int64_t j, int64_t h, int64_t d) { return ((b * T + j) * H + h) * D + d; };
  auto vi = [&](int64_t b, int64_t j, int64_t h, int64_t e) { return ((b * T + j) * H + h) * E + e; };
  auto oi = [&](int64_t b, int64_t i, int64_t h, int64_t e) { return ((b * S + i) * H + h) * E + e; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t n = c.causal ? std::min(T, i + 1) : T;
        std::vector<double> s(n), p(n);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q[qi(b, i, h, d)] * k[ki(b, j, h, d)];
          s[j] = scale * dot;
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          sum += std::exp(s[j] - m);
        const double lse = m + std::log(sum);
        r.lse[(b * H + h) * S + i] = lse;
        std::vector<double> mask(n, 1.0);
        for (int64_t j = 0; j < n; ++j) {
          p[j] = std::exp(s[j] - lse);
          if (dropout > 0)
            mask[j] = dropout::keep(key, uint64_t(((b * H + h) * S + i) * T + j),
                                    dropout::threshold(dropout))
                          ? double(float(1.0 / (1.0 - dropout)))
                          : 0.0;
        }
        for (int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j)
            acc += p[j] * mask[j] * v[vi(b, j, h, e)];
          r.out[oi(b, i, h, e)] = acc;
        }
        // Backward: dP = (dout v^T) M, dS = P (dP - sum_j P dP).
        std::vector<double> dp(n);
        double weighted = 0;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e)
            dot += dout[oi(b, i, h, e)] * v[vi(b, j, h, e)];
          dp[j] = dot * mask[j];
          weighted += p[j] * dp[j];
        }
        for (int64_t j = 0; j < n; ++j) {
          const double ds = p[j] * (dp[j] - weighted);
          for (int64_t d = 0; d < D; ++d) {
            r.dq[qi(b, i, h, d)] += scale * ds * k[ki(b, j, h, d)];
            r.dk[ki(b, j, h, d)] += scale * ds * q[qi(b, i, h, d)];
          }
          for (int64_t e = 0; e < E; ++e)
            r.dv[vi(b, j, h, e)] += p[j] * mask[j] * dout[oi(b, i, h, e)];
        }
      }
  return r;
}

/// A tensor of `dtype` holding `values` (rounded to it); `values` are then what it holds.
OwnedTensor holding(DType dtype, std::vector<int64_t> shape, std::vector<double> &values) {
  OwnedTensor t = makeFloat(dtype, std::move(shape), values);
  values = t.doubles();
  return t;
}

/// `dropout` > 0: with dropout on the probabilities, drawn for step 3 of stream 11.
void checkCase(const Case &c, DType dtype, double rtol, double atol, double dropout = 0) {
  SCOPED_TRACE(testing::Message() << "B=" << c.batch << " S=" << c.queries << " T=" << c.keys
                                  << " H=" << c.heads << " D=" << c.dim << " E=" << c.valueDim
                                  << " causal=" << c.causal << " dtype=" << dtypeName(dtype)
                                  << " dropout=" << dropout);
  const std::vector<int64_t> qShape{c.batch, c.queries, c.heads, c.dim},
      kShape{c.batch, c.keys, c.heads, c.dim}, vShape{c.batch, c.keys, c.heads, c.valueDim},
      oShape{c.batch, c.queries, c.heads, c.valueDim}, lseShape{c.batch, c.heads, c.queries};
  std::vector<double> q = randomFloats(qShape, 1, -1, 1).doubles();
  std::vector<double> k = randomFloats(kShape, 2, -1, 1).doubles();
  std::vector<double> v = randomFloats(vShape, 3, -1, 1).doubles();
  std::vector<double> dout = randomFloats(oShape, 4, -1, 1).doubles();
  OwnedTensor qt = holding(dtype, qShape, q), kt = holding(dtype, kShape, k),
              vt = holding(dtype, vShape, v), dot = holding(dtype, oShape, dout);
  const double scale = 1.0 / std::sqrt(double(c.dim));
  AttrsBuilder attrsBuilder;
  attrsBuilder.f("scale", scale).i("causal", c.causal);
  std::vector<OwnedTensor> step; // the step operand, with dropout
  if (dropout > 0) {
    attrsBuilder.f("dropout", dropout).i("seed", 0).i("stream", 11);
    step.push_back(makeFloat(DType::F32, {}, {3.0}));
  }
  const Attrs attrs = attrsBuilder.build();
  Reference ref = reference(c, scale, q, k, v, dout, dropout, dropout::streamKey(0, 11, 3, 0));

  std::vector<OwnedTensor> fwdInputs{qt, kt, vt};
  fwdInputs.insert(fwdInputs.end(), step.begin(), step.end());
  KernelResult fwd =
      runKernel("attention", fwdInputs, {{dtype, oShape}, {DType::F32, lseShape}}, attrs);
  ASSERT_TRUE(fwd.status.ok()) << fwd.status.message();
  EXPECT_TRUE(allClose(fwd.out(0).floats(), ref.out, rtol, atol));
  EXPECT_TRUE(allClose(fwd.out(1).floats(), ref.lse, 1e-5, 1e-5));

  // The gradient reads the kernel's own out and lse, as a training step does.
  std::vector<OwnedTensor> bwdInputs{qt, kt, vt, fwd.out(0), fwd.out(1), dot};
  bwdInputs.insert(bwdInputs.end(), step.begin(), step.end());
  KernelResult bwd = runKernel("attention_grad", bwdInputs,
                               {{dtype, qShape}, {dtype, kShape}, {dtype, vShape}}, attrs);
  ASSERT_TRUE(bwd.status.ok()) << bwd.status.message();
  EXPECT_TRUE(allClose(bwd.out(0).floats(), ref.dq, rtol, atol)) << "dq";
  EXPECT_TRUE(allClose(bwd.out(1).floats(), ref.dk, rtol, atol)) << "dk";
  EXPECT_TRUE(allClose(bwd.out(2).floats(), ref.dv, rtol, atol)) << "dv";
}

TEST(AttentionKernels, CausalMatchesTheFormulas) {
  checkCase({2, 16, 16, 3, 8, 8, true}, DType::F32, 1e-4, 1e-5);
}

TEST(AttentionKernels, UnmaskedWithMoreKeysThanQueriesAndAnotherValueWidth) {
  checkCase({1, 5, 9, 2, 4, 6, false}, DType::F32, 1e-4, 1e-5);
}

TEST(AttentionKernels, RowsBeyondOneBlock) {
  // 600 queries: blocks of 256, 256 and 88 rows; causal blocks see 256, 512 and 600 keys.
  ASSERT_EQ(kAttentionRowBlock, 256);
  checkCase({1, 600, 600, 2, 16, 8, true}, DType::F32, 1e-4, 1e-5);
  checkCase({1, 270, 33, 1, 8, 8, false}, DType::F32, 1e-4, 1e-5);
}

TEST(AttentionKernels, HeadsSplitAcrossThreadsMatchTheFormulas) {
  // Heads of 128 queries and keys of width 64 are worth splitting: 3 threads take 4 heads,
  // each scoring blocks of 256 / 3 = 85 rows of the workspace's 256. The kernels must not
  // allocate in their region (checked by runKernel where the counter is linked).
  KernelThreads threads(3);
  checkCase({2, 128, 128, 2, 64, 64, true}, DType::F32, 1e-4, 1e-5);
  checkCase({1, 100, 130, 3, 64, 32, false}, DType::F32, 1e-4, 1e-5);
}

TEST(AttentionKernels, ShortHeadsLeaveRoomForFourWholeHeads) {
  EXPECT_EQ(attentionWorkspaceRows(16), 64);
  EXPECT_EQ(attentionWorkspaceRows(5), 20);
  EXPECT_EQ(attentionWorkspaceRows(37), 148); // a ViT's 36 patches and its class token
  EXPECT_EQ(attentionWorkspaceRows(64), kAttentionRowBlock);
  EXPECT_EQ(attentionWorkspaceRows(1000), kAttentionRowBlock);
}

TEST(AttentionKernels, DropoutDrawsThePlainMasksOverTheProbabilities) {
  // The mask plait.dropout_mask would draw over [B, H, S, T]: causal heads across blocks and
  // threads, keys past the queries, and bf16 staged an entry or two at a time (the entries
  // before a staged slice counted in the mask's indices).
  checkCase({2, 300, 300, 2, 8, 8, true}, DType::F32, 1e-4, 1e-5, 0.1);
  checkCase({1, 5, 9, 3, 4, 6, false}, DType::F32, 1e-4, 1e-5, 0.5);
  {
    KernelThreads threads(3);
    checkCase({2, 128, 128, 2, 64, 64, true}, DType::F32, 1e-4, 1e-5, 0.25);
  }
  checkCase({3, 12, 12, 2, 8, 8, true}, DType::BF16, 3e-2, 3e-2, 0.1);
  // Entries 0-1, then entry 2 alone: its mask rows start past the first slice's.
  ASSERT_EQ(batchStageEntries(3, 64 * 4 * 2048), 2);
  checkCase({3, 64, 64, 4, 2048, 16, true}, DType::BF16, 3e-2, 3e-2, 0.1);
}

TEST(AttentionKernels, DropoutNeedsItsStepAndARatioBelowOne) {
  const OwnedTensor q = randomFloats({1, 2, 1, 4}, 1), step = makeFloat(DType::F32, {}, {1.0});
  const std::vector<std::pair<DType, std::vector<int64_t>>> outs{{DType::F32, {1, 2, 1, 4}},
                                                                 {DType::F32, {1, 1, 2}}};
  KernelResult r = runKernel("attention", {q, q, q}, outs,
                             AttrsBuilder().f("scale", 0.5).f("dropout", 0.1).build());
  EXPECT_EQ(r.status.message(), "attention: dropout needs the step operand");
  r = runKernel("attention", {q, q, q, step}, outs, AttrsBuilder().f("scale", 0.5).build());
  EXPECT_EQ(r.status.message(), "attention: a step operand needs dropout > 0");
  r = runKernel("attention", {q, q, q, step}, outs,
                AttrsBuilder().f("scale", 0.5).f("dropout", 1.0).build());
  EXPECT_EQ(r.status.message(), "attention: dropout must be in [0, 1), got 1");
}

TEST(AttentionKernels, Bf16ComputesInF32) {
  checkCase({1, 12, 12, 2, 8, 8, true}, DType::BF16, 2e-2, 2e-2);
}

// bf16 attention stages a few batch entries at a time (batchStageEntries: here 2 of the
// 3, each q, k, v of an entry 2^19 elements), not the whole batch: the same bits as the f32
// kernel on the widened operands, rounded; and a workspace of 2 entries per copy (the
// harness checks the kernel used exactly what Workspace.cpp declares).
TEST(AttentionKernels, Bf16StagesAFewBatchEntriesAtATime) {
  const int64_t B = 3, S = 64, H = 4, D = 2048;
  ASSERT_EQ(batchStageEntries(B, S * H * D), 2);
  const std::vector<int64_t> shape{B, S, H, D}, lseShape{B, H, S};
  std::vector<OwnedTensor> half, wide;
  for (uint32_t seed = 1; seed <= 4; ++seed) { // q, k, v, dout
    std::vector<double> values = randomFloats(shape, seed, -1, 1).doubles();
    half.push_back(holding(DType::BF16, shape, values));
    wide.push_back(makeFloat(DType::F32, shape, values));
  }
  const Attrs attrs = AttrsBuilder().f("scale", 0.125).i("causal", 1).build();
  KernelResult fwd = runKernel("attention", {half[0], half[1], half[2]},
                               {{DType::BF16, shape}, {DType::F32, lseShape}}, attrs);
  KernelResult fwd32 = runKernel("attention", {wide[0], wide[1], wide[2]},
                                 {{DType::F32, shape}, {DType::F32, lseShape}}, attrs);
  ASSERT_TRUE(fwd.status.ok() && fwd32.status.ok()) << fwd.status.message();
  std::vector<double> out32 = fwd32.out(0).doubles();
  EXPECT_EQ(fwd.out(0).floats(), holding(DType::BF16, shape, out32).floats());
  EXPECT_EQ(fwd.out(1).floats(), fwd32.out(1).floats());
  std::vector<double> out = fwd.out(0).doubles();
  KernelResult bwd = runKernel("attention_grad",
                               {half[0], half[1], half[2], fwd.out(0), fwd.out(1), half[3]},
                               {{DType::BF16, shape}, {DType::BF16, shape}, {DType::BF16, shape}},
                               attrs);
  KernelResult bwd32 =
      runKernel("attention_grad",
                {wide[0], wide[1], wide[2], makeFloat(DType::F32, shape, out), fwd.out(1), wide[3]},
                {{DType::F32, shape}, {DType::F32, shape}, {DType::F32, shape}}, attrs);
  ASSERT_TRUE(bwd.status.ok() && bwd32.status.ok()) << bwd.status.message();
  for (int i = 0; i < 3; ++i) {
    std::vector<double> grad32 = bwd32.out(i).doubles();
    EXPECT_EQ(bwd.out(i).floats(), holding(DType::BF16, shape, grad32).floats()) << "result " << i;
  }
}

TEST(AttentionKernels, CausalRowZeroSeesOnlyItsOwnKey) {
  // Query 0 sees key 0 alone: its output is v's row 0 and its lse the lone score.
  auto q = make<float>({1, 2, 1, 1}, {2, 1});
  auto k = make<float>({1, 2, 1, 1}, {3, 100});
  auto v = make<float>({1, 2, 1, 1}, {5, 7});
  KernelResult r = runKernel("attention", {q, k, v},
                             {{DType::F32, {1, 2, 1, 1}}, {DType::F32, {1, 1, 2}}},
                             AttrsBuilder().f("scale", 0.5).i("causal", 1).build());
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_FLOAT_EQ(r.out(0).floats()[0], 5.0f);
  EXPECT_FLOAT_EQ(r.out(1).floats()[0], 3.0f); // 0.5 * 2 * 3
  // Query 1 sees both: scores 1.5 and 50, so nearly all weight on key 1.
  EXPECT_NEAR(r.out(0).floats()[1], 7.0, 1e-6);
}

TEST(AttentionKernels, RefusesMismatchedOperands) {
  auto q = randomFloats({1, 4, 2, 8}, 1);
  auto k = randomFloats({1, 4, 2, 4}, 2); // dim 4, q has 8
  auto v = randomFloats({1, 4, 2, 8}, 3);
  KernelResult r = runKernel("attention", {q, k, v},
                             {{DType::F32, {1, 4, 2, 8}}, {DType::F32, {1, 2, 4}}},
                             AttrsBuilder().f("scale", 0.5).build());
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "attention: k has shape [1, 4, 2, 4], expected [1, 4, 2, 8]");
  KernelResult badScale = runKernel("attention", {q, randomFloats({1, 4, 2, 8}, 2), v},
                                    {{DType::F32, {1, 4, 2, 8}}, {DType::F32, {1, 2, 4}}},
                                    AttrsBuilder().f("scale", -1).build());
  ASSERT_FALSE(badScale.status.ok());
  EXPECT_EQ(badScale.status.message(), "attention: scale must be a finite number > 0, got -1");
}

} // namespace
} // namespace plait::rt::test
