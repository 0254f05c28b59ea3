// Kernel workspaces and memory high water: kernelWorkspaceBytes and the plan fields that
// declare it (workspace per instruction and per rank, peak_bytes), the loader's checks, the
// kernels' behaviour when given too little, and what the executor measures per step.
#include <cstring>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "codegen/PlanBuilder.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/cpu/Workspace.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using fb::TensorKind;

uint64_t need(std::string_view kernel, std::vector<std::pair<rt::DType, std::vector<int64_t>>> in,
              std::vector<std::pair<rt::DType, std::vector<int64_t>>> out,
              const rt::Attrs &attrs = rt::Attrs()) {
  std::vector<rt::OperandType> inputs, outputs;
  for (const auto &[dtype, shape] : in)
    inputs.push_back({dtype, &shape});
  for (const auto &[dtype, shape] : out)
    outputs.push_back({dtype, &shape});
  return rt::kernelWorkspaceBytes(kernel, inputs, outputs, attrs);
}

rt::Attrs convAttrs(std::vector<int64_t> strides, std::vector<int64_t> pads) {
  rt::Attrs attrs;
  attrs.set("strides", {std::move(strides), {}, ""});
  attrs.set("pads", {std::move(pads), {}, ""});
  return attrs;
}

TEST(KernelWorkspaceBytes, ChunksOfWhatEachKernelKeeps) {
  using rt::DType;
  // conv2d: the im2col columns, patch (C/g * kH * kW = 3 * 3 * 3) x outPlane (4 * 4) floats,
  // rounded up to 64 bytes; none for a pointwise convolution.
  EXPECT_EQ(need("conv2d", {{DType::F32, {2, 3, 6, 6}}, {DType::F32, {8, 3, 3, 3}}},
                 {{DType::F32, {2, 8, 4, 4}}}, convAttrs({1, 1}, {0, 0, 0, 0})),
            27u * 16 * 4);
  EXPECT_EQ(need("conv2d", {{DType::F32, {2, 3, 6, 6}}, {DType::F32, {8, 3, 1, 1}}},
                 {{DType::F32, {2, 8, 6, 6}}}, convAttrs({1, 1}, {0, 0, 0, 0})),
            0u);
  // A strided 1x1 convolution is not pointwise: 3 x 9 doubles, 216 bytes in a 256-byte chunk.
  EXPECT_EQ(need("conv2d", {{DType::F64, {1, 3, 6, 6}}, {DType::F64, {8, 3, 1, 1}}},
                 {{DType::F64, {1, 8, 3, 3}}}, convAttrs({2, 2}, {0, 0, 0, 0})),
            256u);
  // Elementwise kernels keep nothing; in half precision, a binary op keeps two f32 buffers
  // of a piece of its result (Workspace.h halfMapPiece), whatever its operands' shapes.
  EXPECT_EQ(need("add", {{DType::F32, {5}}, {DType::F32, {5}}}, {{DType::F32, {5}}}), 0u);
  EXPECT_EQ(need("add", {{DType::BF16, {5}}, {DType::BF16, {1}}}, {{DType::BF16, {5}}}),
            2u * 64);
  // 100 floats take 448 bytes; an empty result's buffers still hold one element each.
  EXPECT_EQ(need("mul", {{DType::F16, {100}}, {DType::F16, {1}}}, {{DType::F16, {100}}}),
            2u * 448);
  EXPECT_EQ(need("add", {{DType::F16, {0}}, {DType::F16, {1}}}, {{DType::F16, {0}}}), 2u * 64);
  // A LLaMA's SwiGLU product, [8, 512, 1536] in bf16: two pieces of 2^20 floats (8 MiB), not
  // f32 copies of both operands and the result (75 MB); a comparison's result is bytes.
  const std::vector<int64_t> ffn{8, 512, 1536};
  EXPECT_EQ(need("mul", {{DType::BF16, ffn}, {DType::BF16, ffn}}, {{DType::BF16, ffn}}),
            2u * (4 << 20));
  EXPECT_EQ(need("less", {{DType::BF16, ffn}, {DType::BF16, {1}}}, {{DType::I1, ffn}}),
            2u * (4 << 20));
  // Logical ops never stage (half inputs are an error), so they need nothing.
  EXPECT_EQ(need("and", {{DType::BF16, {5}}, {DType::BF16, {5}}}, {{DType::I1, {5}}}), 0u);
  // Softmax along a non-innermost axis keeps a max (float) and a sum (double) per column.
  rt::Attrs axis0;
  axis0.set("axis", {{0}, {}, ""});
  EXPECT_EQ(need("softmax", {{DType::F32, {7, 20}}}, {{DType::F32, {7, 20}}}, axis0),
            128u + 192);
  EXPECT_EQ(need("softmax", {{DType::F32, {7, 20}}}, {{DType::F32, {7, 20}}}), 0u);
  // Reductions keep an accumulator per result (double for sums, the element for max/min),
  // and a copy per block of rows when their outer dimensions are reduced over at least 2^20
  // input elements with few results (ReductionSplit.h reductionSlots: 4 blocks).
  rt::Attrs rows, columns;
  rows.set("axes", {{1}, {}, ""});
  columns.set("axes", {{0}, {}, ""});
  EXPECT_EQ(need("reduce_sum", {{DType::F32, {16384, 96}}}, {{DType::F32, {16384}}}, rows),
            16384u * 8);
  EXPECT_EQ(need("reduce_sum", {{DType::F32, {16384, 96}}}, {{DType::F32, {96}}}, columns),
            4u * 96 * 8);
  EXPECT_EQ(need("reduce_max", {{DType::F32, {16384, 96}}}, {{DType::F32, {96}}}, columns),
            4u * 96 * 4);
  EXPECT_EQ(need("reduce_mean", {{DType::F32, {8192, 96}}}, {{DType::F32, {96}}}, columns),
            768u); // under 2^20 elements: one walk
  EXPECT_EQ(need("reduce_sum", {{DType::F32, {16, 65536}}}, {{DType::F32, {65536}}}, columns),
            65536u * 8); // copies as large as a quarter of the input: one walk
  EXPECT_EQ(need("reduce_sum", {{DType::F32, {1024, 1024}}}, {{DType::F32, {}}}),
            64u); // a whole sum: 4 blocks' doubles in one chunk
  // A bf16/f16 GEMM keeps f32 tiles (Workspace.h halfGemmTile), not copies of its operands:
  // a GPT's bf16 logits, [8, 512, 512] x [512, 32000] (the batch folded into 4096 rows), take
  // tiles of 512 x 512 of A, 512 x 1024 of B and 512 x 1024 of C: 5 MiB instead of the 598 MB
  // of f32 copies. Small products take their whole size; f32 ones take nothing.
  EXPECT_EQ(need("matmul", {{DType::BF16, {8, 512, 512}}, {DType::BF16, {512, 32000}}},
                 {{DType::BF16, {8, 512, 32000}}}),
            (512u * 512 + 512 * 1024 + 512 * 1024) * 4);
  EXPECT_EQ(need("matmul", {{DType::F32, {8, 512, 512}}, {DType::F32, {512, 32000}}},
                 {{DType::F32, {8, 512, 32000}}}),
            0u);
  // [2, 3, 4] x [2, 4, 5]: per batch entry, 3 x 4 + 4 x 5 + 3 x 5 floats, each block rounded
  // up to 16 floats.
  EXPECT_EQ(need("matmul", {{DType::F16, {2, 3, 4}}, {DType::F16, {2, 4, 5}}},
                 {{DType::F16, {2, 3, 5}}}),
            (16u + 32 + 16) * 4);
  // gemm reads its transposes (k = 2000: panels of 1024); a transposed lhs is one GEMM per batch entry, an empty batch
  // none.
  rt::Attrs transA, transLhs;
  transA.set("trans_a", {{1}, {}, ""});
  transLhs.set("transpose_lhs", {{1}, {}, ""});
  EXPECT_EQ(need("gemm", {{DType::BF16, {2000, 3}}, {DType::BF16, {2000, 16}}},
                 {{DType::BF16, {3, 16}}}, transA),
            (3u * 1024 + 1024 * 16 + 48) * 4);
  EXPECT_EQ(need("matmul", {{DType::BF16, {4, 8, 3}}, {DType::BF16, {8, 5}}},
                 {{DType::BF16, {4, 3, 5}}}, transLhs),
            (32u + 48 + 16) * 4);
  EXPECT_EQ(need("matmul", {{DType::BF16, {0, 3, 8}}, {DType::BF16, {0, 8, 5}}},
                 {{DType::BF16, {0, 3, 5}}}),
            0u);
  // bf16 attention stages 4 of the 8 batch entries at a time (2^20 floats per copy): q, k, v
  // and out, 4 MiB each, then the f32 kernel's block of 256 query rows' scores over 512 keys.
  const std::vector<int64_t> heads{8, 512, 8, 64};
  EXPECT_EQ(need("attention", {{DType::BF16, heads}, {DType::BF16, heads}, {DType::BF16, heads}},
                 {{DType::BF16, heads}, {DType::F32, {8, 8, 512}}}),
            4u * (4 << 20) + 256 * 512 * 4);
  // A bf16 embedding gradient, [32000, 512] from 4096 tokens: the normalised indices, then a
  // tile of 512 rows of f32, not f32 copies of the [32000, 512] result and of the grad.
  EXPECT_EQ(need("gather_grad", {{DType::BF16, {8, 512, 512}}, {DType::I64, {8, 512}}},
                 {{DType::BF16, {32000, 512}}}),
            4096u * 8 + 512 * 512 * 4);
  // A bf16 map (a GPT's GELU) computes in one piece of 2^20 floats; a small one in its size.
  EXPECT_EQ(need("gelu", {{DType::BF16, {8, 512, 2048}}}, {{DType::BF16, {8, 512, 2048}}}),
            4u << 20);
  EXPECT_EQ(need("exp", {{DType::F16, {100}}}, {{DType::F16, {100}}}), 448u);
  // Movement kernels, collectives and unknown kernels need nothing.
  EXPECT_EQ(need("transpose", {{DType::F32, {7, 20}}}, {{DType::F32, {20, 7}}}), 0u);
  EXPECT_EQ(need("all_reduce", {{DType::F32, {7}}}, {{DType::F32, {7}}}), 0u);
  EXPECT_EQ(need("no_such_kernel", {{DType::BF16, {7}}}, {{DType::BF16, {7}}}), 0u);
}

TEST(KernelWorkspaceBytes, SaturatesInsteadOfWrapping) {
  int64_t huge = int64_t(1) << 40;
  EXPECT_EQ(need("conv2d", {{rt::DType::F32, {1, 1, 4, 4}}, {rt::DType::F32, {1, huge, huge, 2}}},
                 {{rt::DType::F32, {1, 1, huge, huge}}}, convAttrs({1, 1}, {0, 0, 0, 0})),
            std::numeric_limits<uint64_t>::max());
}

/// x [4, 5] at 0 (80 bytes), y = reduce_sum(x, axes 1) [4] at 128 (ends at 144), and an
/// unused param at 192 (ends at 224). reduce_sum keeps 4 double accumulators: one 64-byte
/// chunk of workspace.
plan::PlanDesc sumPlan() {
  plan::PlanDesc d;
  d.arenaBytes = {256};
  d.tensors = {
      {"x", fb::DType::F32, {4, 5}, TensorKind::Input, 0, {}, ""},
      {"y", fb::DType::F32, {4}, TensorKind::Activation, 128, {}, ""},
      {"spare", fb::DType::F32, {8}, TensorKind::Param, 192, {}, "zeros"},
  };
  d.instrs = {{"reduce_sum", {0}, {1}, {{"axes", {1}, {}, ""}, {"keepdims", {0}, {}, ""}}, "/sum"}};
  d.inputs = {0};
  d.outputs = {1};
  return d;
}

std::string loadError(const plan::PlanDesc &d, rt::Plan *out = nullptr) {
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(d), "model.plan", out ? *out : plan);
  return s.ok() ? "" : s.message();
}

TEST(PlanWorkspace, DeclaredPerInstructionAndPerRankAndLoaded) {
  plan::PlanDesc d = sumPlan();
  plan::declareWorkspace(d);
  EXPECT_EQ(d.instrs[0].workspace, 64u);
  EXPECT_EQ(d.workspaceBytes, std::vector<uint64_t>{64});
  EXPECT_EQ(plan::peakBytesOf(d), 224u);
  d.peakBytes = {plan::peakBytesOf(d)};
  rt::Plan plan;
  ASSERT_EQ(loadError(d, &plan), "");
  EXPECT_EQ(plan.workspaceBytes, std::vector<uint64_t>{64});
  EXPECT_EQ(plan.peakBytes, std::vector<uint64_t>{224});
  EXPECT_EQ(plan.instrs[0].workspace, 64u);
}

TEST(PlanWorkspace, LoaderRejectsTooLittleWorkspace) {
  plan::PlanDesc d = sumPlan();
  // Absent: every rank's workspace is 0, too little for reduce_sum.
  EXPECT_EQ(loadError(d), "model.plan: instruction 0 (reduce_sum '/sum'): needs 64 workspace "
                          "bytes, the plan declares 0");
  d.instrs[0].workspace = 32;
  d.workspaceBytes = {64};
  EXPECT_EQ(loadError(d), "model.plan: instruction 0 (reduce_sum '/sum'): needs 64 workspace "
                          "bytes, the plan declares 32");
  d.instrs[0].workspace = 64;
  d.worldSize = 2;
  d.arenaBytes = {256, 256};
  d.workspaceBytes = {64, 32};
  EXPECT_EQ(loadError(d), "model.plan: instruction 0 (reduce_sum '/sum'): declares 64 "
                          "workspace bytes, more than rank 1's workspace (32 bytes)");
  d.workspaceBytes = {64};
  EXPECT_EQ(loadError(d), "model.plan: workspace_bytes has 1 entries, expected one per rank "
                          "(world size 2)");
  d.workspaceBytes = {64, 64};
  d.peakBytes = {224, 224, 224};
  EXPECT_EQ(loadError(d), "model.plan: peak_bytes has 3 entries, expected one per rank "
                          "(world size 2)");
  d.peakBytes.clear();
  EXPECT_EQ(loadError(d), "");
}

TEST(PlanWorkspace, LoaderRejectsRanksBeyondTheKernelsLimit) {
  plan::PlanDesc d;
  d.arenaBytes = {64};
  d.tensors = {{"x", fb::DType::F32, std::vector<int64_t>(rt::kMaxRank + 1, 1),
                TensorKind::Input, 0, {}, ""}};
  d.inputs = {0};
  EXPECT_EQ(loadError(d), "model.plan: tensor 0 ('x'): rank 17 is more than the 16 dimensions "
                          "the runtime supports");
}

// The executor measures what a step touches: the unused param at the end of the arena is
// part of the plan's peak but never of the step's high water.
TEST(PlanWorkspace, ExecutorMeasuresArenaAndWorkspaceHighWater) {
  plan::PlanDesc d = sumPlan();
  plan::declareWorkspace(d);
  rt::Plan plan;
  ASSERT_EQ(loadError(d, &plan), "");
  std::unique_ptr<rt::Executor> exec;
  rt::Status s = rt::Executor::create(plan, {}, exec);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(exec->workspaceBytes(), 64u);
  std::vector<float> x(20, 1.0f);
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(exec->setInput(0, rt::DType::F32, {4, 5}, x.data()).ok());
    s = exec->run();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(exec->stepArenaHighWater(), 144u);
    EXPECT_EQ(exec->stepWorkspaceHighWater(), 64u);
  }
  EXPECT_EQ(exec->output(0).as<float>()[3], 5.0f);
}

// A kernel given less workspace than it takes fails with a message naming both sizes; one
// that stages half-precision tensors leaves the caller's views as they were.
TEST(PlanWorkspace, KernelsGivenTooLittleFailCleanly) {
  std::vector<float> x(2 * 3 * 6 * 6, 1.0f), w(8 * 3 * 3 * 3, 1.0f), y(2 * 8 * 4 * 4);
  std::vector<rt::TensorView> in{{x.data(), rt::DType::F32, {2, 3, 6, 6}},
                                 {w.data(), rt::DType::F32, {8, 3, 3, 3}}};
  std::vector<rt::TensorView> out{{y.data(), rt::DType::F32, {2, 8, 4, 4}}};
  rt::Attrs attrs = convAttrs({1, 1}, {0, 0, 0, 0});
  alignas(64) static uint8_t workspace[2048];
  uint64_t used = 0;
  rt::Status s = rt::findKernel("conv2d")(
      rt::KernelCall{in, out, attrs, 0, 1, workspace, 1024, &used});
  EXPECT_EQ(s.message(), "conv2d: needs at least 1728 workspace bytes, the call has 1024");
  s = rt::findKernel("conv2d")(rt::KernelCall{in, out, attrs, 0, 1, workspace, 1728, &used});
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(used, 1728u);
  EXPECT_EQ(y[0], 27.0f);

  // A rank-1 softmax stages f32 copies of x and y (64 bytes each); the second fails.
  std::vector<uint16_t> a(5), b(5), c(5);
  std::vector<rt::TensorView> halfIn{{a.data(), rt::DType::BF16, {5}}};
  std::vector<rt::TensorView> halfOut{{c.data(), rt::DType::BF16, {5}}};
  rt::Attrs none;
  s = rt::findKernel("softmax")(
      rt::KernelCall{halfIn, halfOut, none, 0, 1, workspace, 64, &used});
  EXPECT_THAT(s.message(), HasSubstr("needs at least 128 workspace bytes, the call has 64"));
  EXPECT_EQ(halfIn[0].dtype, rt::DType::BF16);
  EXPECT_EQ(halfIn[0].data, a.data());
  EXPECT_EQ(halfOut[0].dtype, rt::DType::BF16);
  EXPECT_EQ(halfOut[0].data, c.data());
  // A half add keeps two f32 buffers of its result's piece.
  halfIn.push_back({b.data(), rt::DType::BF16, {5}});
  s = rt::findKernel("add")(rt::KernelCall{halfIn, halfOut, none, 0, 1, workspace, 64, &used});
  EXPECT_THAT(s.message(), HasSubstr("needs at least 128 workspace bytes, the call has 64"));
}

} // namespace
} // namespace plait::testing
