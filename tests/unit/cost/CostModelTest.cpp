// The cost model: collective times equal the alpha-beta formulas on the right link level, the
// roofline of hand-made ops, and the two-stream simulation of a tiny schedule.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "codegen/schema/FusedElementwise.h"
#include "passes/analysis/CostModel.h"
#include "runtime/cluster/RingModel.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/ReductionSplit.h"
#include "runtime/cpu/Workspace.h"

namespace plait::cost {
namespace {

using cluster::ClusterSpec;

/// 2 nodes x 4 GPUs: intra 100 GB/s, 2 us; inter 10 GB/s, 10 us; 100 TFLOP/s fp32.
ClusterSpec twoNodes() {
  ClusterSpec spec;
  spec.name = "test";
  spec.nodes = 2;
  spec.devicesPerNode = 4;
  spec.device.kind = cluster::DeviceKind::Gpu;
  spec.device.memoryBandwidth = 1e12;
  spec.device.peakFlops[size_t(cluster::Dtype::Fp32)] = 100e12;
  spec.device.gemmEfficiency = 0.5;
  spec.device.memoryEfficiency = 0.5;
  spec.device.launchOverhead = 1e-6;
  spec.intraNode = cluster::Link{100e9, 2e-6};
  spec.interNode = cluster::Link{10e9, 10e-6};
  return spec;
}

Placement placed(const ClusterSpec &spec, uint32_t ranks) {
  Placement p;
  EXPECT_TRUE(placeRanks(spec, ranks, p).ok());
  return p;
}

TEST(CollectiveTime, RingFormulasWithinANode) {
  ClusterSpec spec = twoNodes();
  Placement p = placed(spec, 8);
  const double S = 64e6, a = 2e-6, b = 100e9;
  const double n = 4;
  std::vector<int64_t> group{0, 1, 2, 3};
  // Large buffer: the ring beats the tree (2(n-1)/n < 2).
  EXPECT_DOUBLE_EQ(collectiveSeconds(spec, p, "all_reduce", group, S),
                   2 * (n - 1) * a + 2 * (n - 1) / n * S / b);
  EXPECT_DOUBLE_EQ(collectiveSeconds(spec, p, "reduce_scatter", group, S),
                   (n - 1) * a + (n - 1) / n * S / b);
  EXPECT_DOUBLE_EQ(collectiveSeconds(spec, p, "all_gather", group, S),
                   (n - 1) * a + (n - 1) / n * S / b);
  EXPECT_EQ(collectiveSeconds(spec, p, "all_reduce", {0}, S), 0);
}

TEST(CollectiveTime, TreeFormForSmallAllReduce) {
  ClusterSpec spec = twoNodes();
  Placement p = placed(spec, 8);
  std::vector<int64_t> group{0, 1, 2, 3};
  const double S = 8, a = 2e-6, b = 100e9;
  // 4 ranks: the tree has 2·log2(4) = 4 latency steps, the ring 2·3 = 6.
  EXPECT_DOUBLE_EQ(cluster::treeAllReduceTime(*spec.intraNode, 4, S), 4 * a + 2 * S / b);
  EXPECT_DOUBLE_EQ(collectiveSeconds(spec, p, "all_reduce", group, S), 4 * a + 2 * S / b);
  // A non-power of two rounds the depth up: 5 ranks -> 3 levels.
  EXPECT_DOUBLE_EQ(cluster::treeAllReduceTime(*spec.intraNode, 5, S), 6 * a + 2 * S / b);
}

TEST(CollectiveTime, GroupsSpanningNodesUseTheInterNodeLink) {
  ClusterSpec spec = twoNodes();
  Placement p = placed(spec, 8);
  const double S = 64e6, n = 2;
  // Ranks 3 and 4 are on nodes 0 and 1 (rank r on node r / 4).
  double inter = collectiveSeconds(spec, p, "reduce_scatter", {3, 4}, S);
  EXPECT_DOUBLE_EQ(inter, (n - 1) * 10e-6 + (n - 1) / n * S / 10e9);
  double intra = collectiveSeconds(spec, p, "reduce_scatter", {2, 3}, S);
  EXPECT_DOUBLE_EQ(intra, (n - 1) * 2e-6 + (n - 1) / n * S / 100e9);
  // All 8 ranks span both nodes.
  EXPECT_DOUBLE_EQ(collectiveSeconds(spec, p, "all_gather", {0, 1, 2, 3, 4, 5, 6, 7}, S),
                   7 * 10e-6 + 7.0 / 8 * S / 10e9);
}

TEST(Placement, GpuClusterTooSmallIsAnErrorCpuOversubscribes) {
  ClusterSpec gpu = twoNodes();
  Placement p;
  rt::Status s = placeRanks(gpu, 16, p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("16 ranks"), std::string::npos) << s.message();

  ClusterSpec cpu = twoNodes();
  cpu.nodes = 1;
  cpu.devicesPerNode = 2;
  cpu.device.kind = cluster::DeviceKind::Cpu;
  ASSERT_TRUE(placeRanks(cpu, 4, p).ok());
  EXPECT_EQ(p.ranksPerNode, 4u);
  EXPECT_DOUBLE_EQ(p.computeShare, 0.5); // 2 cores, 4 ranks
  ASSERT_TRUE(placeRanks(cpu, 2, p).ok());
  EXPECT_DOUBLE_EQ(p.computeShare, 1.0);
  // Oversubscribed ranks: a collective's latency doubles and its bandwidth halves.
  Placement over;
  ASSERT_TRUE(placeRanks(cpu, 4, over).ok());
  double full = collectiveSeconds(cpu, p, "all_gather", {0, 1}, 1e6);
  double shared = collectiveSeconds(cpu, over, "all_gather", {0, 1}, 1e6);
  EXPECT_DOUBLE_EQ(shared, 2 * full);
}

/// A plan with tensors of the given shapes (f32) and no instructions.
plan::PlanDesc tensors(std::vector<std::vector<int64_t>> shapes) {
  plan::PlanDesc plan;
  for (auto &shape : shapes) {
    plan::TensorDesc t;
    t.shape = shape;
    plan.tensors.push_back(t);
  }
  return plan;
}

TEST(OpCost, ContractionsAreExact) {
  plan::PlanDesc plan = tensors({{8, 16, 32}, {8, 32, 64}, {8, 16, 64}, {64, 32}, {16, 64}});
  plan::InstrDesc matmul{"matmul", {0, 1}, {2}};
  OpCost c = opCost(plan, matmul);
  EXPECT_TRUE(c.contraction);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 8 * 16 * 64 * 32);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (8 * 16 * 32 + 8 * 32 * 64 + 8 * 16 * 64));
  // gemm with trans_a: a is [K, M] = [64, 32]... here a = [64, 32] transposed gives M = 32.
  plan::PlanDesc g = tensors({{32, 16}, {32, 64}, {16, 64}});
  plan::InstrDesc gemm{"gemm", {0, 1}, {2}, {{"trans_a", {1}}}};
  EXPECT_DOUBLE_EQ(opCost(g, gemm).flops, 2.0 * 16 * 64 * 32);

  // conv2d: x [2,3,8,8], w [4,3,3,3] -> y [2,4,6,6]; its two gradients cost the same.
  plan::PlanDesc conv = tensors({{2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 6, 6}});
  double expect = 2.0 * (2 * 4 * 6 * 6) * (3 * 3 * 3);
  EXPECT_DOUBLE_EQ(opCost(conv, {"conv2d", {0, 1}, {2}}).flops, expect);
  EXPECT_DOUBLE_EQ(opCost(conv, {"conv2d_grad_input", {2, 1}, {0}}).flops, expect);
  EXPECT_DOUBLE_EQ(opCost(conv, {"conv2d_grad_weight", {0, 2}, {1}}).flops, expect);
}

TEST(OpCost, ElementwiseAndMovement) {
  plan::PlanDesc plan = tensors({{1000}, {1000}, {1000}, {10, 100}, {10}});
  EXPECT_DOUBLE_EQ(opCost(plan, {"add", {0, 1}, {2}}).flops, 1000);
  EXPECT_DOUBLE_EQ(opCost(plan, {"exp", {0}, {2}}).flops, 1000 * kTranscendentalFlops);
  EXPECT_DOUBLE_EQ(opCost(plan, {"reduce_sum", {3}, {4}}).flops, 1000); // per input element
  OpCost t = opCost(plan, {"transpose", {0}, {2}});
  EXPECT_FALSE(t.contraction);
  EXPECT_DOUBLE_EQ(t.bytes, 8000);
}

TEST(OpCost, AdamsL2AddsTwoFlopsPerElement) {
  // adamw_update (param, grad, exp_avg, exp_avg_sq, lr, step): AdamW's table entry, plus
  // grad + l2 * param where --optimizer adam sets l2; alone and in a multi-tensor group.
  plan::PlanDesc plan = tensors({{1000}, {}});
  plan::InstrDesc adamw{"adamw_update", {0, 0, 0, 0, 1, 1}, {0, 0, 0}};
  double base = opCost(plan, adamw).flops;
  EXPECT_DOUBLE_EQ(base, 1000 * (kTranscendentalFlops + 12));
  plan::InstrDesc adam = adamw;
  adam.attrs.push_back({"l2", {}, {0.1}, ""});
  EXPECT_DOUBLE_EQ(opCost(plan, adam).flops, base + 2 * 1000);
  adam.attrs.back().floats = {0.0}; // weight decay 0: no L2 term
  EXPECT_DOUBLE_EQ(opCost(plan, adam).flops, base);
  plan::InstrDesc group{"grouped_update", {0, 0, 0, 0, 1, 1}, {0, 0, 0},
                        {{"update", {}, {}, "adamw_update"},
                         {"operands_per_update", {6}},
                         {"l2", {}, {0.1}, ""}}};
  EXPECT_DOUBLE_EQ(opCost(plan, group).flops, base + 2 * 1000);
  // AMSGrad's running maximum: one more per element.
  plan::InstrDesc amsgrad{"adamw_update", {0, 0, 0, 0, 1, 1, 0}, {0, 0, 0, 0}};
  amsgrad.attrs.push_back({"amsgrad", {1}});
  EXPECT_DOUBLE_EQ(opCost(plan, amsgrad).flops, base + 1000);
}

TEST(OpCost, AdagradRMSpropAndLionCountTheirTerms) {
  // adagrad_update and rmsprop_update (param, grad, lr, step, states): their table entries,
  // plus 2 for weight decay, and for RMSprop 5 when centered and 2 with momentum; the same in
  // a multi-tensor group, where the attributes are the group's.
  plan::PlanDesc plan = tensors({{1000}, {}});
  plan::InstrDesc adagrad{"adagrad_update", {0, 0, 1, 1, 0}, {0, 0}};
  EXPECT_DOUBLE_EQ(opCost(plan, adagrad).flops, 1000 * (kTranscendentalFlops + 7));
  adagrad.attrs.push_back({"weight_decay", {}, {0.01}, ""});
  EXPECT_DOUBLE_EQ(opCost(plan, adagrad).flops, 1000 * (kTranscendentalFlops + 9));
  plan::InstrDesc rmsprop{"rmsprop_update", {0, 0, 1, 1, 0}, {0, 0}};
  double base = opCost(plan, rmsprop).flops;
  EXPECT_DOUBLE_EQ(base, 1000 * (kTranscendentalFlops + 8));
  rmsprop.inputs = {0, 0, 1, 1, 0, 0, 0};
  rmsprop.outputs = {0, 0, 0, 0};
  rmsprop.attrs = {{"centered", {1}}, {"momentum", {}, {0.9}, ""}};
  EXPECT_DOUBLE_EQ(opCost(plan, rmsprop).flops, base + 7 * 1000);
  plan::InstrDesc group{"grouped_update", rmsprop.inputs, rmsprop.outputs,
                        {{"update", {}, {}, "rmsprop_update"},
                         {"operands_per_update", {7}},
                         {"centered", {1}},
                         {"momentum", {}, {0.9}, ""},
                         {"weight_decay", {}, {0.01}, ""}}};
  EXPECT_DOUBLE_EQ(opCost(plan, group).flops, base + 9 * 1000);
  // Lion: no square root or divide, nothing added by its attributes.
  plan::InstrDesc lion{"lion_update", {0, 0, 1, 1, 0}, {0, 0}, {{"weight_decay", {}, {0.1}}}};
  EXPECT_DOUBLE_EQ(opCost(plan, lion).flops, 1000 * 10.0);
}

TEST(OpCost, TwoStateUpdatesCountTheirTermsAndL2) {
  // adamax, nadam, radam and adadelta (param, grad, lr, step, two states): their table entries
  // (roots as transcendentals), plus 2 for weight decay, an L2 term in all four; the same as
  // a grouped update's.
  plan::PlanDesc plan = tensors({{1000}, {}});
  const double T = kTranscendentalFlops;
  const std::pair<const char *, double> kinds[] = {
      {"adamax_update", 11}, {"nadam_update", T + 15}, {"radam_update", T + 10},
      {"adadelta_update", 2 * T + 14}};
  for (const auto &[name, perElement] : kinds) {
    SCOPED_TRACE(name);
    plan::InstrDesc update{name, {0, 0, 1, 1, 0, 0}, {0, 0, 0}};
    EXPECT_DOUBLE_EQ(opCost(plan, update).flops, 1000 * perElement);
    update.attrs.push_back({"weight_decay", {}, {0.01}, ""});
    EXPECT_DOUBLE_EQ(opCost(plan, update).flops, 1000 * (perElement + 2));
    plan::InstrDesc group{"grouped_update", update.inputs, update.outputs,
                          {{"update", {}, {}, name},
                           {"operands_per_update", {6}},
                           {"weight_decay", {}, {0.01}, ""}}};
    EXPECT_DOUBLE_EQ(opCost(plan, group).flops, 1000 * (perElement + 2));
  }
}

TEST(OpCost, RpropCountsItsSelectsAlone) {
  // Rprop (param, grad, lr, step, prev, step_size): compares and selects, no root, and no
  // weight decay to add; alone and grouped alike.
  plan::PlanDesc plan = tensors({{1000}, {}});
  plan::InstrDesc update{"rprop_update", {0, 0, 1, 1, 0, 0}, {0, 0, 0}};
  EXPECT_DOUBLE_EQ(opCost(plan, update).flops, 1000 * 9.0);
  plan::InstrDesc group{"grouped_update", update.inputs, update.outputs,
                        {{"update", {}, {}, "rprop_update"}, {"operands_per_update", {6}}}};
  EXPECT_DOUBLE_EQ(opCost(plan, group).flops, 1000 * 9.0);
}

TEST(OpCost, WeightEmaCountsEveryAverage) {
  // weight_ema (params, averages, step): two products and a sum per element of each average,
  // one average or many in one call (plait-group-updates).
  plan::PlanDesc plan = tensors({{1000}, {30}, {}});
  plan::InstrDesc one{"weight_ema", {0, 0, 2}, {0}};
  EXPECT_DOUBLE_EQ(opCost(plan, one).flops, 1000 * 3.0);
  plan::InstrDesc many{"weight_ema", {0, 1, 0, 0, 1, 0, 2}, {0, 1, 0}};
  OpCost cost = opCost(plan, many);
  EXPECT_DOUBLE_EQ(cost.elements, 2030);
  EXPECT_DOUBLE_EQ(cost.flops, 2030 * 3.0);
}

TEST(OpCost, AsgdCountsItsAverageAndL2) {
  // ASGD (param, grad, lr, step, ax): decay, step and average; its weight decay an L2 term.
  plan::PlanDesc plan = tensors({{1000}, {}});
  plan::InstrDesc update{"asgd_update", {0, 0, 1, 1, 0}, {0, 0}};
  EXPECT_DOUBLE_EQ(opCost(plan, update).flops, 1000 * 6.0);
  update.attrs.push_back({"weight_decay", {}, {0.01}, ""});
  EXPECT_DOUBLE_EQ(opCost(plan, update).flops, 1000 * 8.0);
}

TEST(Roofline, ComputeOrMemoryBoundPlusLaunch) {
  ClusterSpec spec = twoNodes();
  spec.nodes = 1;
  spec.devicesPerNode = 1;
  // A big GEMM (compute-bound) then a big add (memory-bound), one rank.
  plan::PlanDesc plan =
      tensors({{4096, 4096}, {4096, 4096}, {4096, 4096}, {4096, 4096}});
  plan.instrs.push_back({"matmul", {0, 1}, {2}});
  plan.instrs.push_back({"add", {2, 0}, {3}});
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  double n = 4096.0 * 4096;
  double gemm = 2 * n * 4096 / (100e12 * 0.5) + 1e-6;
  double add = 3 * n * 4 / (1e12 * 0.5) + 1e-6; // 48 MiB moved at half of 1 TB/s
  EXPECT_NEAR(p.step.seconds, gemm + add, 1e-12);
  EXPECT_NEAR(p.byKernel["matmul"].second, gemm, 1e-12);
  EXPECT_NEAR(p.byKernel["add"].second, add, 1e-12);
  EXPECT_DOUBLE_EQ(p.step.exposedCommSeconds, 0);
  EXPECT_NEAR(p.mfu, p.flops / (p.step.seconds * 100e12), 1e-12);
}

TEST(Roofline, CpuOpsInCacheAreComputeBound) {
  ClusterSpec spec = twoNodes();
  spec.nodes = 1;
  spec.devicesPerNode = 1;
  spec.device.kind = cluster::DeviceKind::Cpu;
  spec.device.launchOverhead = 0;
  plan::PlanDesc plan = tensors({{1000}, {1000}, {1000}}); // 12 kB: in cache
  plan.instrs.push_back({"add", {0, 1}, {2}});
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_DOUBLE_EQ(p.step.seconds, 1000 / (100e12 * 0.5));
}

/// twoNodes() as one CPU node of `ranks` ranks.
ClusterSpec oneCpuNode(uint32_t ranks) {
  ClusterSpec spec = twoNodes();
  spec.nodes = 1;
  spec.devicesPerNode = ranks;
  spec.interNode.reset();
  spec.device.kind = cluster::DeviceKind::Cpu;
  return spec;
}

// A measured rate for the op's class replaces the roofline (contractions keep the FLOP rate),
// and oversubscribed ranks divide it by their share of a core.
TEST(CostMeasuredKernels, ClassRateReplacesRoofline) {
  ClusterSpec spec = oneCpuNode(2);
  spec.device.kernels["binary"] = {0.5, 200e-9};
  spec.device.kernels["reduction"] = {0.25, 100e-9};
  plan::PlanDesc plan = tensors({{1000}, {1000}, {1000}, {10, 100}, {10}, {100, 100}});
  plan.instrs.push_back({"mul", {0, 1}, {2}});
  plan.instrs.push_back({"reduce_sum", {3}, {4}});
  plan.instrs.push_back({"exp", {0}, {2}}); // no rate for its class: the roofline
  plan.instrs.push_back({"matmul", {5, 5}, {5}});
  EXPECT_STREQ(opCost(plan, plan.instrs[0]).rateClass, "binary");
  EXPECT_STREQ(opCost(plan, plan.instrs[3]).rateClass, "matmul"); // not measured here
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.byKernel["mul"].second, 200e-9 + 1000 * 0.5e-9, 1e-15);
  EXPECT_NEAR(p.byKernel["reduce_sum"].second, 100e-9 + 1000 * 0.25e-9, 1e-15); // per input
  EXPECT_NEAR(p.byKernel["exp"].second, 1000 * kTranscendentalFlops / (100e12 * 0.5) + 1e-6,
              1e-15);
  EXPECT_NEAR(p.byKernel["matmul"].second, 2e6 / (100e12 * 0.5) + 1e-6, 1e-15);

  plan.worldSize = 4; // 2 ranks per core
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.byKernel["mul"].second, 2 * (200e-9 + 1000 * 0.5e-9), 1e-15);
}

// Row-wise kernels count their rows: softmax along its axis, layer_norm over every axis from
// its axis, a loss's targets, a reduction's results; matmul counts the GEMMs the runtime
// calls; a fused kernel the rows its reduced results sum.
TEST(OpCost, RowsOfRowWiseKernels) {
  plan::PlanDesc plan = tensors({{2, 4, 16, 16}, {32, 64}, {32}, {}, {2, 16, 32}, {2, 16, 1}});
  EXPECT_DOUBLE_EQ(opCost(plan, {"softmax", {0}, {0}}).rows, 128);
  EXPECT_DOUBLE_EQ(opCost(plan, {"softmax", {0}, {0}, {{"axis", {1}}}}).rows, 512);
  EXPECT_DOUBLE_EQ(opCost(plan, {"layer_norm", {0}, {0}, {{"axis", {2}}}}).rows, 8);
  EXPECT_DOUBLE_EQ(opCost(plan, {"softmax_cross_entropy", {1, 2}, {3}}).rows, 32);
  EXPECT_DOUBLE_EQ(opCost(plan, {"reduce_sum", {1}, {2}}).rows, 32);
  EXPECT_DOUBLE_EQ(opCost(plan, {"mul", {1, 1}, {1}}).rows, 0);
  // A training-mode BatchNorm's rows are its channels; they split across threads in chunks
  // of kElementGrain values read (its gradient reads x and dy in its sums and again for dx: 3
  // a value), so a deep layer's few values a channel make few chunks.
  plan::PlanDesc bn = tensors({{8, 512, 3, 3}, {512}, {512}, {8, 512, 3, 3}});
  OpCost y = opCost(bn, {"batch_norm", {0, 1, 2}, {3, 1, 2}});
  EXPECT_STREQ(y.rateClass, "norm");
  EXPECT_DOUBLE_EQ(y.rows, 512);
  const double perChannel = 8 * 9;
  EXPECT_DOUBLE_EQ(y.splitGrains,
                   512.0 / double(rt::cpu::grainFor(rt::cpu::kElementGrain, 2 * perChannel)));
  OpCost bnGrad = opCost(bn, {"batch_norm_grad", {0, 1, 1, 2, 3}, {3, 1, 2}});
  EXPECT_DOUBLE_EQ(bnGrad.splitGrains,
                   512.0 / double(rt::cpu::grainFor(rt::cpu::kElementGrain, 3 * perChannel)));
  EXPECT_LT(bnGrad.splitGrains, 512.0);
  plan::InstrDesc fused{"fused_elementwise", {4}, {4, 5},
                        {{"program", {fused::Mul, 0, 0, -1}}, {"outputs", {1, 1}},
                         {"reductions", {fused::Store, fused::Sum}}}};
  OpCost f = opCost(plan, fused);
  EXPECT_STREQ(f.rateClass, "fused");
  // Its ops by class: the multiply, and the sum of the reduced result.
  ASSERT_EQ(f.parts.size(), 2u);
  EXPECT_STREQ(f.parts[0].first, "reduction");
  EXPECT_STREQ(f.parts[1].first, "binary");
  // A bf16 program's rounding costs as a unary op.
  plan::InstrDesc rounded{"fused_elementwise", {4}, {4},
                          {{"program", {fused::Mul, 0, 0, -1, fused::RoundBf16, 1, 1, -1}},
                           {"outputs", {2}}}};
  OpCost r = opCost(plan, rounded);
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_STREQ(r.parts[1].first, "unary");
  EXPECT_DOUBLE_EQ(r.parts[1].second, 1024);
  EXPECT_DOUBLE_EQ(f.rows, 32);     // [2, 16, 1]: a row of 32 each
  EXPECT_DOUBLE_EQ(f.elements, 1024);

  plan::PlanDesc mm = tensors({{4, 8, 16}, {16, 32}, {4, 8, 32}, {4, 16, 32}, {8, 4, 16}});
  EXPECT_DOUBLE_EQ(opCost(mm, {"matmul", {0, 1}, {2}}).rows, 1); // the batch folds into M
  EXPECT_DOUBLE_EQ(opCost(mm, {"matmul", {0, 3}, {2}}).rows, 4); // one GEMM per entry
  // A permuted lhs ([8, 4, 16] read as [4, 8, 16]) folds only with fold_rows
  // (plait-fold-matmul-rows): its 32 rows gathered (a copy of 32 x 16 elements) into one GEMM.
  OpCost perm = opCost(mm, {"matmul", {4, 1}, {2}, {{"lhs_perm", {1, 0, 2}}}});
  EXPECT_DOUBLE_EQ(perm.rows, 4);
  EXPECT_DOUBLE_EQ(perm.flops, 2.0 * 4 * 8 * 32 * 16);
  EXPECT_TRUE(perm.side.empty());
  OpCost folded =
      opCost(mm, {"matmul", {4, 1}, {2}, {{"lhs_perm", {1, 0, 2}}, {"fold_rows", {1}}}});
  EXPECT_DOUBLE_EQ(folded.rows, 1);
  EXPECT_DOUBLE_EQ(folded.flops, perm.flops);
  ASSERT_EQ(folded.side.size(), 1u);
  EXPECT_STREQ(folded.side[0].rateClass, "copy");
  EXPECT_DOUBLE_EQ(folded.side[0].elements, 32 * 16);
  // A batched rhs never folds: each entry has its own matrix.
  EXPECT_DOUBLE_EQ(
      opCost(mm, {"matmul", {4, 3}, {2}, {{"lhs_perm", {1, 0, 2}}, {"fold_rows", {1}}}}).rows, 4);
  // gemm moves its bias into the result: columns at the movement rate.
  plan::PlanDesc g = tensors({{8, 16}, {16, 32}, {32}, {8, 32}});
  EXPECT_DOUBLE_EQ(opCost(g, {"gemm", {0, 1, 2}, {3}}).columns, 256);
  EXPECT_DOUBLE_EQ(opCost(g, {"gemm", {0, 1}, {3}}).columns, 0);

  // Convolutions: a GEMM per image and group, after an im2col of patch × plane columns (the
  // input gradient: before a col2im of as many), counted as their elements; pools: their
  // first operand's planes.
  plan::PlanDesc conv = tensors({{2, 6, 8, 8}, {4, 3, 3, 3}, {2, 4, 6, 6}});
  for (const char *k : {"conv2d", "conv2d_grad_weight"}) {
    OpCost c = opCost(conv, {k, k == std::string("conv2d") ? std::vector<uint32_t>{0, 1}
                                                           : std::vector<uint32_t>{0, 2},
                             {k == std::string("conv2d") ? 2u : 1u}});
    EXPECT_DOUBLE_EQ(c.rows, 2 * 2) << k; // 2 images x 2 groups
    EXPECT_DOUBLE_EQ(c.elements, 2 * 2 * 27 * 36) << k;
    EXPECT_STREQ(c.rateClass, "conv") << k;
  }
  OpCost dx = opCost(conv, {"conv2d_grad_input", {2, 1}, {0}});
  EXPECT_DOUBLE_EQ(dx.rows, 4);
  EXPECT_DOUBLE_EQ(dx.elements, 2 * 2 * 27 * 36);
  // With image_block (plait-conv-image-blocks) a GEMM per group of each block of images: the
  // same columns, fewer calls; a block larger than the batch is the batch.
  for (int64_t block : {2, 5}) {
    OpCost blocked = opCost(conv, {"conv2d_grad_input", {2, 1}, {0}, {{"image_block", {block}}}});
    EXPECT_DOUBLE_EQ(blocked.rows, 2) << block; // 1 block x 2 groups
    EXPECT_DOUBLE_EQ(blocked.elements, 2 * 2 * 27 * 36) << block;
    EXPECT_DOUBLE_EQ(blocked.flops, dx.flops) << block;
  }
  // With winograd (plait-conv-winograd) on a 3x3 window in one group: 16 GEMMs a chunk of
  // 2x2 output tiles, 16 multiply-adds per input and output channel a tile, and each tile's 16
  // transformed values per input and output channel; conv2d_grad_weight the same over dy's
  // tiles. Ignored on a grouped convolution.
  plan::PlanDesc wino = tensors({{2, 6, 8, 7}, {4, 6, 3, 3}, {2, 4, 8, 7}});
  const double tiles = 2 * 4 * 4; // 2 images of 4 x 4 tiles (the last column overhangs)
  OpCost wy = opCost(wino, {"conv2d", {0, 1}, {2}, {{"winograd", {1}}}});
  EXPECT_DOUBLE_EQ(wy.flops, 2.0 * 16 * tiles * 6 * 4);
  EXPECT_DOUBLE_EQ(wy.rows, 16); // one chunk
  EXPECT_DOUBLE_EQ(wy.elements, 16 * tiles * (6 + 4));
  OpCost wdx = opCost(wino, {"conv2d_grad_input", {2, 1}, {0}, {{"winograd", {1}}}});
  EXPECT_DOUBLE_EQ(wdx.flops, 2.0 * 16 * tiles * 4 * 6);
  OpCost wdw = opCost(wino, {"conv2d_grad_weight", {0, 2}, {1}, {{"winograd", {1}}}});
  EXPECT_DOUBLE_EQ(wdw.flops, 2.0 * 16 * tiles * 6 * 4);
  EXPECT_DOUBLE_EQ(wdw.rows, 16); // one chunk
  EXPECT_DOUBLE_EQ(wdw.elements, 16 * tiles * (6 + 4));
  EXPECT_LT(wdw.flops, opCost(wino, {"conv2d_grad_weight", {0, 2}, {1}}).flops);
  EXPECT_DOUBLE_EQ(opCost(conv, {"conv2d", {0, 1}, {2}, {{"winograd", {1}}}}).flops,
                   opCost(conv, {"conv2d", {0, 1}, {2}}).flops); // 2 groups
  EXPECT_DOUBLE_EQ(opCost(conv, {"max_pool2d", {0}, {2}}).rows, 12);
  EXPECT_DOUBLE_EQ(opCost(conv, {"avg_pool2d_grad", {2}, {0}}).rows, 8);
}

// Depthwise convolutions, and grouped ones marked `direct`, are timed whole by their classes:
// vector multiply-adds of 16 lanes as elements, vectors laid out in the workspace as rows
// (Workspace.h directConvWork); their FLOPs are still the convolution's.
TEST(OpCost, DirectConvolutionsCountVectorsNotColumns) {
  // Depthwise: 20 channels (2 blocks of 16 lanes) of 8x8, 3x3 taps, stride 2 to 4x4.
  plan::PlanDesc dw = tensors({{2, 20, 8, 8}, {20, 1, 3, 3}, {2, 20, 4, 4}});
  const std::vector<plan::AttrDesc> strided = {{"group", {20}}, {"strides", {2, 2}}};
  const double units = 2 * 2; // images x blocks
  OpCost y = opCost(dw, {"conv2d", {0, 1}, {2}, strided});
  EXPECT_STREQ(y.rateClass, "conv_depthwise");
  EXPECT_FALSE(y.contraction);
  EXPECT_DOUBLE_EQ(y.flops, 2.0 * 2 * 20 * 16 * 9);
  EXPECT_DOUBLE_EQ(y.elements, units * 16 * 9);
  EXPECT_DOUBLE_EQ(y.rows, units * (64 + 16 + 9));
  // The input gradient visits every input pixel's taps (those of other phases too); the
  // weight gradient sums in f64 (twice the vectors).
  EXPECT_DOUBLE_EQ(opCost(dw, {"conv2d_grad_input", {2, 1}, {0}, strided}).elements,
                   units * 64 * 9);
  OpCost dwW = opCost(dw, {"conv2d_grad_weight", {0, 2}, {1}, strided});
  EXPECT_DOUBLE_EQ(dwW.elements, units * 16 * 9 * 2);
  EXPECT_DOUBLE_EQ(dwW.flops, y.flops);
  // A channel multiplier (w [2C, 1, ...]) is not depthwise: the GEMM path.
  plan::PlanDesc mult = tensors({{2, 4, 8, 8}, {8, 1, 3, 3}, {2, 8, 6, 6}});
  EXPECT_STREQ(opCost(mult, {"conv2d", {0, 1}, {2}, {{"group", {4}}}}).rateClass, "conv");

  // Grouped: 4 groups of 8 channels and 8 filters, 6x6 -> 6x6 (padded).
  plan::PlanDesc g = tensors({{2, 32, 6, 6}, {32, 8, 3, 3}, {2, 32, 6, 6}});
  const std::vector<plan::AttrDesc> direct = {
      {"group", {4}}, {"pads", {1, 1, 1, 1}}, {"direct", {1}}};
  const double pairs = 2 * 4; // images x groups
  OpCost gy = opCost(g, {"conv2d", {0, 1}, {2}, direct});
  EXPECT_STREQ(gy.rateClass, "conv_grouped");
  EXPECT_DOUBLE_EQ(gy.elements, pairs * 36 * 9 * 8);
  EXPECT_DOUBLE_EQ(gy.rows, pairs * (36 + 36 + 9 * 16));
  OpCost gw = opCost(g, {"conv2d_grad_weight", {0, 2}, {1}, direct});
  EXPECT_DOUBLE_EQ(gw.rows, pairs * (36 + 36 + 9 * 8)); // its taps' f64 sums, not the taps
  EXPECT_DOUBLE_EQ(gw.flops, gy.flops);
  // Without `direct` (--no-direct-grouped-conv) the same convolution is im2col and GEMMs.
  OpCost gemm = opCost(g, {"conv2d", {0, 1}, {2}, {{"group", {4}}, {"pads", {1, 1, 1, 1}}}});
  EXPECT_STREQ(gemm.rateClass, "conv");
  EXPECT_TRUE(gemm.contraction);
  EXPECT_DOUBLE_EQ(gemm.flops, gy.flops);

  // Timed by the class alone when the spec measured it: overhead + vectors, no GEMM rate.
  ClusterSpec spec = oneCpuNode(1);
  spec.device.kernels["conv_grouped"] = {0.5, 1e-6, 3};
  plan::PlanDesc timed = g;
  timed.instrs.push_back({"conv2d", {0, 1}, {2}, direct});
  Prediction p;
  ASSERT_TRUE(predictStep(timed, spec, p).ok());
  EXPECT_NEAR(p.instrSeconds[0], 1e-6 + (gy.elements * 0.5 + gy.rows * 3) * 1e-9, 1e-15);
}

// Measured per-row times, the matmul kernel's per-call and per-GEMM costs and the fused
// kernel's own overhead join the prediction.
TEST(CostMeasuredKernels, RowsGemmsAndFusedCalls) {
  ClusterSpec spec = oneCpuNode(1);
  spec.device.kernels["softmax"] = {2, 100e-9, 30};
  spec.device.kernels["matmul"] = {1e-6, 300e-9, 50};
  spec.device.kernels["binary"] = {0.5, 200e-9};
  spec.device.kernels["reduction"] = {0.25, 150e-9, 4};
  plan::PlanDesc plan = tensors({{2, 4, 16, 16}, {4, 8, 16}, {4, 16, 32}, {4, 8, 32},
                                 {64, 32}, {64, 1}});
  plan.instrs.push_back({"softmax", {0}, {0}});
  plan.instrs.push_back({"matmul", {1, 2}, {3}});
  plan.instrs.push_back({"fused_elementwise", {4}, {4, 5},
                         {{"program", {fused::Mul, 0, 0, -1}}, {"outputs", {1, 1}},
                          {"reductions", {fused::Store, fused::Sum}}}});
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.instrSeconds[0], 100e-9 + 2048 * 2e-9 + 128 * 30e-9, 1e-15);
  EXPECT_NEAR(p.instrSeconds[1], 2.0 * 4 * 8 * 32 * 16 / (100e12 * 0.5) + 300e-9 + 4 * 50e-9,
              1e-15);
  // Without a "fused" class: the slowest part's overhead, no per-row time.
  double parts = 2048 * 0.5e-9 + 2048 * 0.25e-9;
  EXPECT_NEAR(p.instrSeconds[2], 200e-9 + parts, 1e-15);
  spec.device.kernels["fused"] = {0.1, 700e-9, 5};
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.instrSeconds[2], 700e-9 + 64 * 5e-9 + parts, 1e-15);
  EXPECT_EQ(p.instrSeconds.size(), plan.instrs.size());
}

// A CPU spec with thread scaling gives each rank the node's CPUs over its ranks (plait-run's
// default), and ops the runtime splits (above two grains, Parallel.h) have their work terms
// divided by the speedup of their chunks, plus a hand-out per split call; the rest are as on
// one thread.
TEST(CostThreads, SplitKernelsScaleByTheirChunks) {
  ClusterSpec spec = oneCpuNode(4);
  spec.device.kernels["binary"] = {0.5, 200e-9};
  spec.device.kernels["reduction"] = {0.25, 100e-9};
  spec.device.threads = cluster::ThreadScaling{4, 3.4, 2.5, 1e-6};
  Placement p;
  for (auto [ranks, threads] : {std::pair{1u, 4u}, {2u, 2u}, {3u, 1u}, {4u, 1u}, {8u, 1u}}) {
    ASSERT_TRUE(placeRanks(spec, ranks, p).ok());
    EXPECT_EQ(p.threads, threads) << ranks << " ranks";
  }
  ClusterSpec noScaling = spec;
  noScaling.device.threads.reset();
  ASSERT_TRUE(placeRanks(noScaling, 1, p).ok());
  EXPECT_EQ(p.threads, 1u);

  const double big = 4 * double(rt::cpu::kElementGrain);   // 4 grains
  plan::PlanDesc plan = tensors({{1000}, {int64_t(big)}, {1024, 1024}, {1024}});
  plan.instrs.push_back({"mul", {0, 0}, {0}});             // under a grain: one thread
  plan.instrs.push_back({"mul", {1, 1}, {1}});             // 4 grains
  plan.instrs.push_back({"matmul", {2, 2}, {2}});          // 2^30 multiply-adds: 512 grains
  plan.instrs.push_back({"argmax", {2}, {3}});             // never split
  EXPECT_EQ(opCost(plan, plan.instrs[0]).splitShare, 0);
  EXPECT_DOUBLE_EQ(opCost(plan, plan.instrs[1]).splitGrains, 4);
  EXPECT_TRUE(opCost(plan, plan.instrs[2]).splitGemm);
  EXPECT_EQ(opCost(plan, plan.instrs[3]).splitShare, 0);

  Prediction one, many;
  plan.worldSize = 4; // one thread each
  ASSERT_TRUE(predictStep(plan, spec, one).ok());
  plan.worldSize = 2; // two threads each: 2 chunks of 4 CPUs' scaling, a third of the way
  ASSERT_TRUE(predictStep(plan, spec, many).ok());
  EXPECT_EQ(many.placement.threads, 2u);
  EXPECT_DOUBLE_EQ(many.instrSeconds[0], one.instrSeconds[0]);
  EXPECT_DOUBLE_EQ(many.instrSeconds[3], one.instrSeconds[3]);
  const double element = 1 + (2.5 - 1) / 3, gemm = 1 + (3.4 - 1) / 3;
  EXPECT_NEAR(many.instrSeconds[1], 200e-9 + big * 0.5e-9 / element + 1e-6, 1e-12);
  double flops = 2.0 * 1024 * 1024 * 1024;
  EXPECT_NEAR(one.instrSeconds[2], flops / (100e12 * 0.5) + 1e-6, 1e-12);
  EXPECT_NEAR(many.instrSeconds[2], flops / (100e12 * 0.5) / gemm + 1e-6 + 1e-6, 1e-12);
  plan.worldSize = 1; // four threads: the full speedup
  ASSERT_TRUE(predictStep(plan, spec, many).ok());
  EXPECT_NEAR(many.instrSeconds[1], 200e-9 + big * 0.5e-9 / 2.5 + 1e-6, 1e-12);
  // MFU against the four CPUs the rank uses.
  EXPECT_NEAR(many.mfu, many.flops / (many.step.seconds * 100e12 * 4), 1e-12);

  // A fused kernel splits its tiles; with a sum over outer dimensions (a bias gradient) into
  // at most kFusedSumSlots chunks, and not at all when the sums are too many for copies.
  plan::PlanDesc fusedPlan =
      tensors({{1024, 1024}, {1, 1024}, {1024, 1}, {2, 131072}, {1, 131072}});
  auto fusedSum = [&](uint32_t in, uint32_t out) {
    return plan::InstrDesc{"fused_elementwise", {in}, {out},
                           {{"program", {fused::Neg, 0, -1, -1}}, {"outputs", {1}},
                            {"reductions", {fused::Sum}}}};
  };
  fusedPlan.instrs = {fusedSum(0, 1), fusedSum(0, 2), fusedSum(3, 4)};
  const double grains = 1024.0 * 1024 / double(rt::cpu::kElementGrain);
  EXPECT_DOUBLE_EQ(opCost(fusedPlan, fusedPlan.instrs[0]).splitGrains,
                   double(rt::kFusedSumSlots)); // capped at the copies
  EXPECT_DOUBLE_EQ(opCost(fusedPlan, fusedPlan.instrs[1]).splitGrains, grains); // row sums
  EXPECT_EQ(opCost(fusedPlan, fusedPlan.instrs[2]).splitShare, 0); // 131,072 sums: one walk

  // An optimizer group splits the tensors of two grains or more, each on its own.
  plan::PlanDesc group = tensors({{int64_t(big)}, {100}, {}});
  group.instrs.push_back({"grouped_update", {0, 0, 2, 1, 1, 2}, {0, 1},
                          {{"update", {}, {}, "sgd_update"}, {"operands_per_update", {3}}}});
  OpCost update = opCost(group, group.instrs[0]);
  EXPECT_DOUBLE_EQ(update.splitShare, big / (big + 100));
  EXPECT_DOUBLE_EQ(update.splitCalls, 1);
  EXPECT_DOUBLE_EQ(update.splitGrains, 4);
  // A group of casts: every operand's elements, the large one split as its own cast is.
  group.instrs.push_back({"grouped_cast", {0, 1}, {0, 1}, {}});
  OpCost casts = opCost(group, group.instrs[1]);
  EXPECT_DOUBLE_EQ(casts.elements, big + 100);
  EXPECT_DOUBLE_EQ(casts.splitShare, big / (big + 100));
  EXPECT_DOUBLE_EQ(casts.splitGrains, 4);

  // Pools split their N x C planes: a 32 x 32 plane and its 16 x 16 windows of 3 x 3 make a
  // grain of 4 planes (PoolSupport.h poolPlaneGrain); max_pool2d_grad splits into at most its
  // argmax slots (Workspace.h), and one plane does not split.
  plan::PlanDesc pools = tensors({{4, 8, 32, 32}, {4, 8, 16, 16}, {1, 1, 32, 32}, {1, 1, 16, 16}});
  auto pool = [](const char *kernel, std::vector<uint32_t> in, uint32_t out) {
    return plan::InstrDesc{kernel, std::move(in), {out}, {{"kernel", {3, 3}}}};
  };
  pools.instrs = {pool("max_pool2d", {0}, 1), pool("avg_pool2d_grad", {1}, 0),
                  pool("max_pool2d_grad", {0, 1}, 0), pool("avg_pool2d", {2}, 3)};
  EXPECT_DOUBLE_EQ(opCost(pools, pools.instrs[0]).splitGrains, 8);
  EXPECT_DOUBLE_EQ(opCost(pools, pools.instrs[1]).splitGrains, 8);
  EXPECT_DOUBLE_EQ(opCost(pools, pools.instrs[2]).splitGrains, double(rt::kMaxPoolGradSlots));
  EXPECT_EQ(opCost(pools, pools.instrs[3]).splitShare, 0);

  // A reduction splits its outermost merged dimensions (ReductionSplit.h): kept, 64 row sums
  // of 1,024 (16 rows a grain); reduced, 4 fixed blocks of rows (96 column sums over 16,384
  // rows, 64 channels of a [64, 64, 256] input); not with an axis out of range.
  plan::PlanDesc reductions =
      tensors({{64, 1024}, {64, 1}, {16384, 96}, {96}, {64, 64, 256}, {64}});
  auto reduce = [](std::vector<int64_t> axes, uint32_t in, uint32_t out) {
    return plan::InstrDesc{"reduce_sum", {in}, {out}, {{"axes", std::move(axes)}}};
  };
  reductions.instrs = {reduce({1}, 0, 1), reduce({0}, 2, 3), reduce({0, -1}, 4, 5),
                       reduce({7}, 0, 1)};
  EXPECT_DOUBLE_EQ(opCost(reductions, reductions.instrs[0]).splitGrains, 4);
  EXPECT_DOUBLE_EQ(opCost(reductions, reductions.instrs[1]).splitGrains,
                   double(rt::cpu::kReductionSlots));
  EXPECT_DOUBLE_EQ(opCost(reductions, reductions.instrs[2]).splitGrains,
                   double(rt::cpu::kReductionSlots));
  EXPECT_EQ(opCost(reductions, reductions.instrs[3]).splitShare, 0);

  // Losses split their positions (each its classes' scores; nll_loss reads one), movement
  // ops their result's elements, gather its rows; an f32 loss over 1,024 x 4,096 scores is
  // 256 grains, nll_loss's 1,024 positions are under a grain.
  plan::PlanDesc moves = tensors({{1024, 4096}, {1024}, {}, {4096, 1024}, {4096, 256}, {1024, 256}});
  moves.instrs = {{"softmax_cross_entropy", {0, 1}, {2}},
                  {"softmax_cross_entropy_grad", {0, 1, 2}, {0}},
                  {"nll_loss", {0, 1}, {2}},
                  {"transpose", {0}, {3}, {{"perm", {1, 0}}}},
                  {"gather", {4, 1}, {5}}};
  EXPECT_DOUBLE_EQ(opCost(moves, moves.instrs[0]).splitGrains, 256);
  EXPECT_DOUBLE_EQ(opCost(moves, moves.instrs[1]).splitGrains, 256);
  EXPECT_EQ(opCost(moves, moves.instrs[2]).splitShare, 0);
  EXPECT_DOUBLE_EQ(opCost(moves, moves.instrs[3]).splitGrains, 256);
  EXPECT_DOUBLE_EQ(opCost(moves, moves.instrs[4]).splitGrains, 16); // 1,024 rows of 256

  // A convolution splits its images (2.4M multiply-adds each: a grain) into at most
  // kConvColumnSlots chunks, one call; with one image, its GEMM splits instead.
  plan::PlanDesc convs =
      tensors({{6, 16, 32, 32}, {16, 16, 3, 3}, {1, 16, 32, 32}, {1, 64, 32, 32}, {64, 16, 3, 3}});
  convs.instrs = {{"conv2d", {0, 1}, {0}}, {"conv2d_grad_weight", {0, 0}, {1}},
                  {"conv2d", {2, 4}, {3}}};
  for (int i : {0, 1}) {
    OpCost byImage = opCost(convs, convs.instrs[i]);
    EXPECT_DOUBLE_EQ(byImage.splitGrains, double(rt::kConvColumnSlots)) << i;
    EXPECT_DOUBLE_EQ(byImage.splitCalls, 1) << i;
  }
  OpCost oneImage = opCost(convs, convs.instrs[2]);
  EXPECT_DOUBLE_EQ(oneImage.splitGrains, 64.0 * 144 * 1024 / double(rt::cpu::kMultiplyAddGrain));
  EXPECT_TRUE(oneImage.splitGemm);
}

// With gemm_efficiency_by_size, a contraction's FLOPs go at the efficiency of its GEMM calls'
// size: a matmul's one call, a batched matmul's per batch entry.
TEST(CostMeasuredKernels, GemmEfficiencyBySize) {
  ClusterSpec spec = oneCpuNode(1);
  spec.device.gemmEfficiencyBySize = {{4096, 0.25}, {1 << 24, 1.0}};
  plan::PlanDesc plan = tensors({{256, 256}, {8, 16, 16}, {8, 16, 16}});
  plan.instrs.push_back({"matmul", {0, 0}, {0}}); // one call of 2^24 multiply-adds
  plan.instrs.push_back({"matmul", {1, 2}, {1}}); // 8 calls of 4096
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.instrSeconds[0], 2.0 * (1 << 24) / (100e12 * 1.0) + 1e-6, 1e-15);
  EXPECT_NEAR(p.instrSeconds[1], 2.0 * 8 * 4096 / (100e12 * 0.25) + 1e-6, 1e-15);
  spec.device.gemmEfficiencyBySize.clear(); // efficiency.gemm for both
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  EXPECT_NEAR(p.instrSeconds[1], 2.0 * 8 * 4096 / (100e12 * 0.5) + 1e-6, 1e-15);
}

// A link's per-kind fit is used for that kind only.
TEST(CostCollectiveTime, PerKindLinkFit) {
  ClusterSpec spec = twoNodes();
  spec.intraNode->byKind[size_t(cluster::Collective::ReduceScatter)] =
      cluster::LinkFit{50e9, 4e-6};
  Placement p = placed(spec, 8);
  std::vector<int64_t> group{0, 1, 2, 3};
  double bytes = 1 << 20;
  EXPECT_NEAR(collectiveSeconds(spec, p, "reduce_scatter", group, bytes),
              cluster::ringTime(cluster::Link{50e9, 4e-6}, cluster::Collective::ReduceScatter, 4,
                                bytes),
              1e-15);
  EXPECT_NEAR(collectiveSeconds(spec, p, "all_gather", group, bytes),
              cluster::ringTime(*spec.intraNode, cluster::Collective::AllGather, 4, bytes), 1e-15);
}

// A mean all-reduce divides its result in place after the transfer: one binary op over it.
TEST(CostCollectiveTime, MeanDividesTheResult) {
  ClusterSpec spec = oneCpuNode(2);
  spec.device.launchOverhead = 0;
  plan::PlanDesc plan = tensors({{30000}, {30000}});
  plan.worldSize = 2;
  plan.instrs.push_back({"all_reduce", {0}, {1}, {{"groups", {0, 1}}, {"group_size", {2}}}});
  plan.instrs.push_back(plan.instrs.back());
  plan::AttrDesc mean;
  mean.name = "reduce";
  mean.str = "mean";
  plan.instrs.back().attrs.push_back(mean);
  spec.device.kernels["binary"] = {0.25, 100e-9};
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  double transfer = collectiveSeconds(spec, p.placement, "all_reduce", {0, 1}, 120000);
  EXPECT_NEAR(p.instrSeconds[0], transfer, 1e-15);
  EXPECT_NEAR(p.instrSeconds[1], transfer + 100e-9 + 30000 * 0.25e-9, 1e-15);
}

TEST(Simulation, CollectiveHiddenBehindCompute) {
  // compute 1, all-reduce (2) posted after it, compute 3 independent, compute 1 waits on it.
  std::vector<SimOp> ops{{1, false, {}}, {2, true, {}}, {3, false, {}}, {1, false, {1}}};
  StepTime t = simulateStep(ops, /*overlap=*/true);
  EXPECT_DOUBLE_EQ(t.seconds, 5);           // 1 + 3 + 1: the 2 s hide behind the 3 s
  EXPECT_DOUBLE_EQ(t.computeSeconds, 5);
  EXPECT_DOUBLE_EQ(t.commSeconds, 2);
  EXPECT_DOUBLE_EQ(t.exposedCommSeconds, 0);
}

TEST(Simulation, CollectiveExposedWhenWaitedAtOnce) {
  // The waiter comes right after the post: it waits the whole transfer.
  std::vector<SimOp> ops{{1, false, {}}, {2, true, {}}, {1, false, {1}}, {3, false, {}}};
  StepTime t = simulateStep(ops, true);
  EXPECT_DOUBLE_EQ(t.seconds, 7); // 1 + 2 + 1 + 3
  EXPECT_DOUBLE_EQ(t.exposedCommSeconds, 2);
  // Two collectives queue on the comm stream; nobody waits: the step ends when they do.
  std::vector<SimOp> queued{{1, false, {}}, {2, true, {}}, {2, true, {}}, {1, false, {}}};
  t = simulateStep(queued, true);
  EXPECT_DOUBLE_EQ(t.seconds, 5); // comm 1 -> 3 -> 5, compute ends at 2
  EXPECT_DOUBLE_EQ(t.exposedCommSeconds, 3);
}

TEST(Simulation, NoOverlapAddsCommunication) {
  std::vector<SimOp> ops{{1, false, {}}, {2, true, {}}, {3, false, {}}, {1, false, {1}}};
  StepTime t = simulateStep(ops, /*overlap=*/false, /*tail=*/0.5);
  EXPECT_DOUBLE_EQ(t.seconds, 7.5); // 1 + 2 + 3 + 1 + the tail
  EXPECT_DOUBLE_EQ(t.exposedCommSeconds, 2);
}

TEST(Prediction, DatasheetSpecsParseAndPredict) {
  cluster::ClusterSpec spec;
  ASSERT_TRUE(cluster::parseClusterSpec(PLAIT_CLUSTERS_DIR "/h100-sxm-8.yaml", spec).ok());
  plan::PlanDesc plan = tensors({{1024, 1024}, {1024, 1024}, {1024, 1024}});
  plan.worldSize = 8;
  plan.instrs.push_back({"matmul", {0, 1}, {2}});
  plan::InstrDesc ar{"all_reduce", {2}, {2}, {{"groups", {0, 1, 2, 3, 4, 5, 6, 7}},
                                               {"group_size", {8}}}};
  plan.instrs.push_back(ar);
  Prediction p;
  ASSERT_TRUE(predictStep(plan, spec, p).ok());
  double bytes = 4.0 * 1024 * 1024;
  double comm = std::min(cluster::ringTime(*spec.intraNode, cluster::Collective::AllReduce, 8,
                                           bytes),
                         cluster::treeAllReduceTime(*spec.intraNode, 8, bytes)) +
                spec.device.launchOverhead;
  EXPECT_NEAR(p.step.commSeconds, comm, 1e-12);
  EXPECT_GT(p.step.seconds, p.step.computeSeconds);
}

} // namespace
} // namespace plait::cost
