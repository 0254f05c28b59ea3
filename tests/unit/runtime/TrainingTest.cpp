// Training-plan pieces of the runtime: LR schedules, loader checks of updates and hyper
// tensors, end-of-step updates, the data loader and the safetensors writer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codegen/PlanBuilder.h"
#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/Executor.h"
#include "runtime/HostTensors.h"
#include "runtime/LrController.h"
#include "runtime/PlanLoader.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"

namespace plait::rt {
namespace {

TEST(LrSchedule, ConstantWarmupAndCosine) {
  LrSchedule constant{"constant", 0.1, 0, 0, 0};
  EXPECT_DOUBLE_EQ(constant.at(1), 0.1);
  EXPECT_DOUBLE_EQ(constant.at(1000), 0.1);

  LrSchedule warmup{"linear-warmup", 0.1, 4, 0, 0};
  EXPECT_DOUBLE_EQ(warmup.at(1), 0.025);
  EXPECT_DOUBLE_EQ(warmup.at(4), 0.1);
  EXPECT_DOUBLE_EQ(warmup.at(9), 0.1);

  LrSchedule cosine{"cosine", 1.0, 2, 12, 0.1};
  EXPECT_DOUBLE_EQ(cosine.at(1), 0.5);            // warming up
  EXPECT_DOUBLE_EQ(cosine.at(2), 1.0);            // peak
  EXPECT_NEAR(cosine.at(7), 0.1 + 0.9 * 0.5, 1e-12); // half way down
  EXPECT_NEAR(cosine.at(12), 0.1, 1e-12);         // floor
  EXPECT_NEAR(cosine.at(50), 0.1, 1e-12);         // stays at the floor
}

// onecycle and cyclic give the lr of torch's OneCycleLR and CyclicLR bit for bit (PyTorch
// 1.13's group['lr'] before each step, printed with repr).
// The lr of each step, and after the last, as LrController gives them for `losses`.
std::vector<double> plateauLrs(const LrSchedule &s, const std::vector<double> &losses) {
  EXPECT_EQ(s.invalid(), "");
  LrController lrs(s);
  std::vector<double> out;
  for (size_t i = 0; i < losses.size(); ++i) {
    out.push_back(lrs.lr(int64_t(i) + 1));
    EXPECT_EQ(lrs.prevLr(int64_t(i) + 1), i == 0 ? s.lr : out[i - 1]) << "step " << i + 1;
    lrs.observe(losses[i]);
  }
  out.push_back(lrs.lr(int64_t(losses.size()) + 1));
  return out;
}

TEST(LrController, PlateauAsTorch) {
  // torch 1.13's ReduceLROnPlateau on SGD(lr=0.1), stepped with these losses (the mean of
  // each window of 2 in the last case), each group lr printed with repr(): a NaN loss is a
  // bad epoch, cooldown ignores the bad ones, min_lr clamps, eps skips a small reduction.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> losses = {5.0, 4.0, 4.0, 3.99, 3.999, 4.1, 3.0, nan, 3.0, 2.9999,
                                      2.5, 2.6, 2.7, 2.8,  2.9,   3.0, 3.1, 1.0, 1.0, 1.0};
  LrSchedule s{"plateau", 0.1};
  s.gamma = 0.1;
  s.patience = 1;
  EXPECT_THAT(
      plateauLrs(s, losses),
      ::testing::ElementsAre(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.010000000000000002,
                             0.010000000000000002, 0.010000000000000002, 0.0010000000000000002,
                             0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002,
                             0.00010000000000000003, 0.00010000000000000003, 1.0000000000000004e-05,
                             1.0000000000000004e-05, 1.0000000000000004e-06, 1.0000000000000004e-06,
                             1.0000000000000004e-06, 1.0000000000000005e-07));
  // patience=0, threshold=0.05, threshold_mode='abs', cooldown=2, factor=0.5
  LrSchedule abs = s;
  abs.patience = 0;
  abs.threshold = 0.05;
  abs.thresholdAbs = true;
  abs.cooldown = 2;
  abs.gamma = 0.5;
  EXPECT_THAT(plateauLrs(abs, losses),
              ::testing::ElementsAre(0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125,
                                     0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.003125, 0.003125,
                                     0.003125, 0.003125, 0.0015625, 0.0015625));
  // patience=0, factor=0.5, min_lr=0.02
  LrSchedule floor = s;
  floor.patience = 0;
  floor.gamma = 0.5;
  floor.minLr = 0.02;
  EXPECT_THAT(plateauLrs(floor, losses),
              ::testing::ElementsAre(0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.02, 0.02, 0.02, 0.02, 0.02,
                                     0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02));
  // patience=0, factor=0.9999999: each reduction is below eps 1e-8, so none applies.
  LrSchedule tiny = floor;
  tiny.minLr = 0;
  tiny.gamma = 0.9999999;
  EXPECT_THAT(plateauLrs(tiny, losses), ::testing::Each(0.1));
  // patience=0, factor=0.5, stepped with the mean of each 2 losses.
  LrSchedule window = floor;
  window.minLr = 0;
  window.plateauSteps = 2;
  EXPECT_THAT(plateauLrs(window, losses),
              ::testing::ElementsAre(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025,
                                     0.025, 0.025, 0.025, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625,
                                     0.00625, 0.00625));
  // Restored mid-window, it goes on as if never stopped.
  LrController whole(window), first(window);
  for (int i = 0; i < 9; ++i)
    first.observe(losses[i]);
  LrController resumed(window);
  resumed.restore(first.plateau());
  for (int i = 0; i < 20; ++i)
    whole.observe(losses[i]);
  for (int i = 9; i < 20; ++i)
    resumed.observe(losses[i]);
  EXPECT_EQ(resumed.lr(21), whole.lr(21));
  EXPECT_EQ(resumed.plateau().reductions, whole.plateau().reductions);
  // The other kinds follow the step and read no loss.
  LrSchedule step{"step", 1.0};
  step.gamma = 0.5;
  step.stepSize = 2;
  LrController stepped(step);
  EXPECT_FALSE(stepped.readsLoss());
  EXPECT_FALSE(stepped.observe(1.0));
  EXPECT_EQ(stepped.lr(3), 0.5);
  EXPECT_EQ(stepped.prevLr(3), 1.0);
}

TEST(LrSchedule, CyclicalKindsAsTorch) {
  // OneCycleLR(max_lr=1, total_steps=10, three_phase=True, anneal_strategy='linear',
  // pct_start=0.25, div_factor=10, final_div_factor=100).
  LrSchedule one{"onecycle", 1.0, 0, 10, 0};
  one.threePhase = true;
  one.annealLinear = true;
  one.pctStart = 0.25;
  one.divFactor = 10;
  one.finalDivFactor = 100;
  EXPECT_EQ(one.invalid(), "");
  const double torchOne[] = {0.1,    0.7,   0.7,    0.09999999999999998,  0.0835, 0.067,
                             0.0505, 0.034, 0.0175, 0.0010000000000000009};
  for (int64_t s = 1; s <= 10; ++s)
    EXPECT_EQ(one.at(s), torchOne[s - 1]) << "step " << s;
  EXPECT_EQ(one.lastStep(), 10);
  // CyclicLR(base_lr=0.1, max_lr=1, step_size_up=2, step_size_down=3, mode='exp_range',
  // gamma=0.9), and triangular2 with step_size_up=2.
  LrSchedule exp{"cyclic", 1.0, 0, 0, 0.1, 0.9, 2};
  exp.stepSizeDown = 3;
  exp.cyclicMode = "exp_range";
  EXPECT_EQ(exp.invalid(), "");
  const double torchExp[] = {0.1,
                             0.5049999999999999,
                             0.8289999999999998,
                             0.5374,
                             0.2968299999999999,
                             0.1,
                             0.33914845000000027,
                             0.53046721,
                             0.35828032600000004};
  for (int64_t s = 1; s <= 9; ++s)
    EXPECT_EQ(exp.at(s), torchExp[s - 1]) << "step " << s;
  LrSchedule tri2{"cyclic", 1.0, 0, 0, 0.1, 0, 2};
  tri2.cyclicMode = "triangular2";
  const double torchTri2[] = {0.1, 0.55, 1.0, 0.55, 0.1, 0.325, 0.55, 0.325, 0.1};
  for (int64_t s = 1; s <= 9; ++s)
    EXPECT_EQ(tri2.at(s), torchTri2[s - 1]) << "step " << s;
  EXPECT_EQ(tri2.lastStep(), std::numeric_limits<int64_t>::max());

  // Their rules: no warm-up, onecycle's total steps, pct_start, factors and phases; cyclic's
  // step sizes, mode and exp_range's gamma.
  LrSchedule bad = one;
  bad.warmupSteps = 2;
  EXPECT_EQ(bad.invalid(),
            "the onecycle schedule warms up as it cycles: it takes no warm-up steps");
  bad = one;
  bad.threePhase = false;
  bad.pctStart = 0.1; // phase 1 ends at step index 0
  EXPECT_EQ(bad.invalid(),
            "the onecycle schedule's phase 1 has no steps (pct_start 0.1 of 10 total steps)");
  bad = one;
  bad.finalDivFactor = 0;
  EXPECT_NE(bad.invalid().find("final div factors > 0"), std::string::npos);
  bad = exp;
  bad.gamma = 0;
  EXPECT_EQ(bad.invalid(), "the cyclic schedule's exp_range mode needs a gamma > 0, got 0");
  bad = tri2;
  bad.cyclicMode = "sawtooth";
  EXPECT_NE(bad.invalid().find("unknown cyclic mode 'sawtooth'"), std::string::npos);
}

// The later kinds count the steps since the warm-up as torch's schedulers count epochs: the
// first step after it runs at lr.
TEST(LrSchedule, TorchStyleKinds) {
  LrSchedule step{"step", 1.0, 2, 0, 0, 0.5, 3};
  EXPECT_DOUBLE_EQ(step.at(1), 0.5); // warming up
  EXPECT_DOUBLE_EQ(step.at(2), 1.0);
  for (int64_t s : {3, 4, 5})
    EXPECT_DOUBLE_EQ(step.at(s), 1.0) << s; // StepLR's epochs 0..2
  EXPECT_DOUBLE_EQ(step.at(6), 0.5);
  EXPECT_DOUBLE_EQ(step.at(9), 0.25);

  // MultiStepLR([2, 5], 0.1) after 1 warm-up step: epochs 0, 1 at lr, 2..4 x0.1, then x0.01.
  LrSchedule multistep{"multistep", 1.0, 1, 0, 0, 0.1, 0, 1, 0, {2, 5}};
  EXPECT_DOUBLE_EQ(multistep.at(1), 1.0);
  EXPECT_DOUBLE_EQ(multistep.at(3), 1.0);
  EXPECT_NEAR(multistep.at(4), 0.1, 1e-15);
  EXPECT_NEAR(multistep.at(6), 0.1, 1e-15);
  EXPECT_NEAR(multistep.at(7), 0.01, 1e-15);
  EXPECT_NEAR(multistep.at(70), 0.01, 1e-15);

  // CosineAnnealingWarmRestarts(T_0 = 2, T_mult = 2, eta_min = 0.2): cycles of 2, 4, 8 steps.
  LrSchedule restarts{"cosine-restarts", 1.0, 0, 0, 0.2};
  restarts.cycleSteps = 2;
  restarts.cycleMult = 2;
  const double half = 0.2 + 0.8 * 0.5;
  for (auto [s, want] : {std::pair<int64_t, double>{1, 1.0}, {2, half}, {3, 1.0}, {5, half},
                         {7, 1.0}, {11, half}, {15, 1.0}})
    EXPECT_NEAR(restarts.at(s), want, 1e-12) << s;
  restarts.cycleMult = int64_t(1) << 62; // the second cycle would overflow: it never ends
  EXPECT_NEAR(restarts.at(3), 1.0, 1e-12);
  EXPECT_NEAR(restarts.at(int64_t(1) << 40), 1.0, 1e-6);
  restarts.cycleMult = 1; // a cycle of 2 steps, again and again
  EXPECT_NEAR(restarts.at(9), 1.0, 1e-12);
  EXPECT_NEAR(restarts.at(10), half, 1e-12);

  LrSchedule exponential{"exponential", 2.0, 0, 0, 0, 0.9};
  EXPECT_DOUBLE_EQ(exponential.at(1), 2.0);
  EXPECT_NEAR(exponential.at(3), 2.0 * 0.81, 1e-15);

  // PolynomialLR(total_iters = 4, power = 2) after 1 warm-up step, floored at min_lr 0.1.
  LrSchedule poly{"polynomial", 1.0, 1, 5, 0.1, 0, 0, 2.0};
  EXPECT_DOUBLE_EQ(poly.at(1), 1.0);
  EXPECT_DOUBLE_EQ(poly.at(2), 1.0);
  EXPECT_NEAR(poly.at(3), 0.1 + 0.9 * 0.75 * 0.75, 1e-15);
  EXPECT_NEAR(poly.at(6), 0.1, 1e-15);
  EXPECT_NEAR(poly.at(60), 0.1, 1e-15);
  LrSchedule linear{"linear", 1.0, 0, 4, 0, 0, 0, 7.0}; // linear ignores power
  EXPECT_DOUBLE_EQ(linear.at(1), 1.0);
  EXPECT_DOUBLE_EQ(linear.at(2), 0.75);
  EXPECT_DOUBLE_EQ(linear.at(4), 0.25);
  EXPECT_DOUBLE_EQ(linear.at(5), 0.0);

  LrSchedule inverse{"inverse-sqrt", 1.0, 4, 0, 0};
  EXPECT_DOUBLE_EQ(inverse.at(2), 0.5);
  EXPECT_DOUBLE_EQ(inverse.at(4), 1.0);
  EXPECT_DOUBLE_EQ(inverse.at(16), 0.5);

  // Warm-up, stable, decay: 2 + 4 + 4 steps.
  LrSchedule wsd{"wsd", 1.0, 2, 10, 0.2, 0, 0, 1, 4};
  EXPECT_DOUBLE_EQ(wsd.at(1), 0.5);
  EXPECT_DOUBLE_EQ(wsd.at(6), 1.0);
  EXPECT_DOUBLE_EQ(wsd.at(7), 0.8);
  EXPECT_DOUBLE_EQ(wsd.at(10), 0.2);
  EXPECT_DOUBLE_EQ(wsd.at(11), 0.2);
}

TEST(LrSchedule, InvalidSchedulesSayWhy) {
  EXPECT_EQ(LrSchedule({"step", 1.0, 0, 0, 0, 0.5, 0}).invalid(),
            "the step schedule needs a step size >= 1, got 0");
  EXPECT_EQ(LrSchedule({"exponential", 1.0, 0, 0, 0, 0}).invalid(),
            "the exponential schedule needs a gamma > 0, got 0");
  EXPECT_EQ(LrSchedule({"linear", 1.0, 5, 5, 0}).invalid(),
            "the linear schedule needs total steps (5) above the warm-up steps (5)");
  EXPECT_EQ(LrSchedule({"polynomial", 1.0, 0, 5, 0, 0, 0, -1}).invalid(),
            "the polynomial schedule needs a power > 0, got -1");
  EXPECT_EQ(LrSchedule({"inverse-sqrt", 1.0, 0, 0, 0}).invalid(),
            "the inverse-sqrt schedule needs warm-up steps >= 1 (after them the rate is lr * "
            "sqrt(warmup / step))");
  EXPECT_EQ(LrSchedule({"wsd", 1.0, 2, 10, 0, 0, 0, 1, 9}).invalid(),
            "the wsd schedule needs decay steps in [1, 8] (total 10 - warm-up 2), got 9");
  for (std::vector<int64_t> bad : {std::vector<int64_t>{}, {0, 3}, {4, 4}, {5, 2}})
    EXPECT_EQ(LrSchedule({"multistep", 1.0, 0, 0, 0, 0.5, 0, 1, 0, bad}).invalid(),
              "the multistep schedule needs milestones >= 1 in increasing order");
  EXPECT_EQ(LrSchedule({"cosine-restarts", 1.0, 0, 0, 0}).invalid(),
            "the cosine-restarts schedule needs cycle steps >= 1 and a cycle multiplier >= 1, "
            "got 0 and 1");
  EXPECT_EQ(LrSchedule({"sawtooth", 1.0, 0, 0, 0}).invalid(),
            "unknown learning-rate schedule 'sawtooth'");
  EXPECT_EQ(LrSchedule({"cyclic", 1.0, 0, 0, 0}).invalid(),
            "the cyclic schedule needs a step size >= 1 (and a step size down >= 1 where given), "
            "got 0 and 0");
  EXPECT_EQ(LrSchedule({"wsd", 1.0, 2, 10, 0, 0, 0, 1, 8}).invalid(), "");
}

/// A one-param training plan: w -= lr * x, where the "update" is computed by `add` of a
/// negated input (enough to test the executor's update and hyper-parameter plumbing).
plan::PlanDesc tinyTrainingPlan() {
  using plan::TensorDesc;
  plan::PlanDesc p;
  auto f32 = [](std::string name, fb::TensorKind kind, uint64_t offset, std::vector<int64_t> shape) {
    TensorDesc t;
    t.name = std::move(name);
    t.kind = kind;
    t.offset = offset;
    t.shape = std::move(shape);
    return t;
  };
  p.tensors.push_back(f32("x", fb::TensorKind::Input, 0, {2}));        // 0
  p.tensors.push_back(f32("w", fb::TensorKind::Param, 64, {2}));       // 1
  p.tensors.back().init = "ones";
  p.tensors.push_back(f32("w_new", fb::TensorKind::Activation, 128, {2})); // 2
  p.tensors.push_back(f32("lr", fb::TensorKind::Hyper, 192, {}));      // 3
  p.tensors.push_back(f32("loss", fb::TensorKind::Activation, 256, {})); // 4
  p.tensors.push_back(f32("m", fb::TensorKind::State, 320, {2}));      // 5
  p.instrs.push_back({"add", {1, 0}, {2}, {}, "step"});
  p.instrs.push_back({"reduce_sum", {2}, {4}, {{"keepdims", {0}, {}, ""}}, "loss"});
  p.inputs = {0};
  p.outputs = {4};
  p.arenaBytes = {384};
  p.training = true;
  p.updates = {{2, 1}, {2, 5}};
  p.schedule = {"linear-warmup", 0.5, 2, 0, 0};
  plan::declareWorkspace(p); // reduce_sum keeps its accumulator in the workspace
  return p;
}

TEST(TrainingPlan, UpdatesPersistAcrossStepsAndStateStartsAtZero) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  ASSERT_TRUE(plan.training);
  ASSERT_EQ(plan.updates.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.schedule.at(1), 0.25);
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(Executor::create(plan, {}, exec).ok());
  EXPECT_EQ(exec->view(5).as<float>()[0], 0.0f); // state starts as zeros
  float x[2] = {1.0f, 2.0f};
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(exec->setInput(0, TensorView{x, DType::F32, {2}}).ok());
    exec->setHyperParameters(step, plan.schedule.at(step), plan.schedule.before(step));
    ASSERT_TRUE(exec->run().ok());
    EXPECT_FLOAT_EQ(*exec->output(0).as<float>(), 2.0f + 3.0f * step); // sum(w + x), w grows
  }
  EXPECT_FLOAT_EQ(exec->view(1).as<float>()[1], 1.0f + 3 * 2.0f);
  EXPECT_FLOAT_EQ(exec->view(5).as<float>()[1], 1.0f + 3 * 2.0f);
  EXPECT_FLOAT_EQ(*exec->view(3).as<float>(), 0.5f); // lr of step 3 after warm-up
}

TEST(TrainingPlan, AnF64LrHoldsTheSchedulesDouble) {
  // plait-compile's lr is f64: the schedule's double reaches the kernels unrounded (warm-up
  // step 1 of 3 to 0.1: 0.1 / 3, which f32 would round by 1.2e-8 relative).
  auto p = tinyTrainingPlan();
  p.tensors[3].dtype = fb::DType::F64;
  p.schedule = {"linear-warmup", 0.1, 3, 0, 0};
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(p), "t.plan", plan).ok());
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(Executor::create(plan, {}, exec).ok());
  exec->setHyperParameters(1, plan.schedule.at(1), plan.schedule.before(1));
  EXPECT_EQ(*exec->view(3).as<double>(), plan.schedule.at(1));
  EXPECT_NE(double(float(plan.schedule.at(1))), plan.schedule.at(1));
}

// The CUDA backend checkpoints through host copies of its params and states (HostTensors,
// filled from and written back to the device): what they save is the executor's own file byte
// for byte, and a checkpoint restored into them and pushed back trains on as one restored
// into the arena directly, and as the run that saved it.
TEST(HostTensors, CheckpointAsTheExecutorDoes) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  float x[2] = {1.0f, 2.0f};
  auto step = [&](Executor &e, int s) {
    ASSERT_TRUE(e.setInput(0, TensorView{x, DType::F32, {2}}).ok());
    e.setHyperParameters(s, plan.schedule.at(s), plan.schedule.before(s));
    ASSERT_TRUE(e.run().ok());
  };
  auto readFrom = [](const Executor &e) {
    return [&e](uint32_t t, std::vector<uint8_t> &out) {
      const auto *bytes = static_cast<const uint8_t *>(e.view(t).data);
      out.assign(bytes, bytes + e.plan().tensors[t].bytes);
      return Status();
    };
  };
  std::unique_ptr<Executor> trained, fresh, direct;
  ASSERT_TRUE(Executor::create(plan, {}, trained).ok());
  ASSERT_TRUE(Executor::create(plan, {}, fresh).ok());
  ASSERT_TRUE(Executor::create(plan, {}, direct).ok());
  for (int s = 1; s <= 3; ++s)
    step(*trained, s);

  HostTensors host(plan, 0);
  ASSERT_TRUE(host.pull(readFrom(*trained)).ok());
  EXPECT_EQ(host.view(0).data, nullptr); // the input is not persistent: no copy
  ASSERT_NE(host.view(5).data, nullptr);
  EXPECT_EQ(host.view(5).as<float>()[1], trained->view(5).as<float>()[1]);
  const auto dir = std::filesystem::temp_directory_path() / "plait-host-tensors-test";
  std::filesystem::remove_all(dir);
  CheckpointInfo info;
  info.step = 3;
  info.globalBatch = 1;
  auto comm = makeLocalComm();
  ASSERT_TRUE(saveCheckpoint((dir / "arena").string(), info, *trained, *comm, 1).ok());
  ASSERT_TRUE(saveCheckpoint((dir / "host").string(), info, host, *comm, 1).ok());
  auto bytesOf = [](const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string rankFile = "step-00000003/rank-00000.safetensors";
  EXPECT_FALSE(bytesOf(dir / "arena" / rankFile).empty());
  EXPECT_EQ(bytesOf(dir / "arena" / rankFile), bytesOf(dir / "host" / rankFile));

  CheckpointIndex index;
  ASSERT_TRUE(readCheckpoint((dir / "host" / "step-00000003").string(), index).ok());
  HostTensors copies(plan, 0);
  ASSERT_TRUE(copies.pull(readFrom(*fresh)).ok());
  ASSERT_TRUE(restoreCheckpoint(index, copies).ok());
  ASSERT_TRUE(copies
                  .push([&](uint32_t t, const std::vector<uint8_t> &bytes) {
                    std::memcpy(fresh->view(t).data, bytes.data(), bytes.size());
                    return Status();
                  })
                  .ok());
  ASSERT_TRUE(restoreCheckpoint(index, *direct).ok());
  for (Executor *e : {trained.get(), fresh.get(), direct.get()})
    step(*e, 4);
  for (uint32_t t : {1u, 5u}) // the param and the state
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(fresh->view(t).as<float>()[i], trained->view(t).as<float>()[i]) << t;
      EXPECT_EQ(direct->view(t).as<float>()[i], trained->view(t).as<float>()[i]) << t;
    }
  EXPECT_EQ(*fresh->output(0).as<float>(), *trained->output(0).as<float>());
  std::filesystem::remove_all(dir);
}

// A device copy of the wrong size is the backend's bug, said as such, not a short buffer.
TEST(HostTensors, AReadOfTheWrongSizeIsAnInternalError) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  HostTensors host(plan, 0);
  Status s = host.pull([](uint32_t, std::vector<uint8_t> &out) {
    out.assign(3, 0);
    return Status();
  });
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.isInternal());
  EXPECT_NE(s.message().find("t.plan: tensor 1 ('w') read as 3 bytes, planned 8"),
            std::string::npos)
      << s.message();
}

TEST(TrainingPlan, LoaderRejectsBadUpdatesAndHyperParameters) {
  auto rejects = [](plan::PlanDesc p, const std::string &needle) {
    Plan plan;
    Status s = loadPlanFromBytes(plan::serializePlan(p), "t.plan", plan);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  auto p = tinyTrainingPlan();
  p.updates = {{2, 0}};
  rejects(p, "the target must be a param or state, not input");
  p = tinyTrainingPlan();
  p.updates = {{4, 1}};
  rejects(p, "source tensor 4 ('loss') is f32 [], the target f32 [2]");
  p = tinyTrainingPlan();
  p.updates = {{2, 99}};
  rejects(p, "tensor index out of range");
  p = tinyTrainingPlan();
  p.tensors[3].name = "momentum";
  rejects(p, "unknown hyper-parameter (expected lr, step or prev_lr)");
  p = tinyTrainingPlan();
  p.tensors[3].dtype = fb::DType::I32;
  rejects(p, "a hyper-parameter must be a scalar of f32 (or f64, the lr)");
  p = tinyTrainingPlan();
  p.tensors[3].name = "step";
  p.tensors[3].dtype = fb::DType::F64;
  rejects(p, "tensor 3 ('step'): a hyper-parameter must be a scalar of f32 (or f64, the lr)");
  p = tinyTrainingPlan();
  p.schedule.kind = "sawtooth";
  rejects(p, "unknown learning-rate schedule 'sawtooth'");
  p = tinyTrainingPlan();
  p.schedule.kind = "exponential"; // a kind the loader knows, without its gamma
  rejects(p, "the exponential schedule needs a gamma > 0, got 0");
  p = tinyTrainingPlan();
  p.outputs = {2};
  rejects(p, "a training plan's first output must be the scalar loss");
}

// A data directory for tinyTrainingPlan (input x, one f32 scalar per sample) under the temp
// directory: x.npy holding `samples`.
std::filesystem::path writeScalarSamples(const std::string &name, std::vector<float> samples) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::create_directories(dir);
  TensorView view{samples.data(), DType::F32, {int64_t(samples.size())}};
  EXPECT_TRUE(writeNpy((dir / "x.npy").string(), view).ok());
  return dir;
}

TEST(DataLoader, TakesBatchesInOrderAndWrapsAround) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  // The plan's input x is [2]: a batch of two scalar samples. Five samples make two batches.
  std::filesystem::path dir = writeScalarSamples("plait_dataloader_test", {0, 1, 2, 3, 4});
  DataLoader data;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, data).ok());
  EXPECT_EQ(data.batchesPerEpoch(), 2); // the incomplete last batch is dropped
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(Executor::create(plan, {}, exec).ok());
  for (int64_t step : {0, 1, 2}) {
    ASSERT_TRUE(data.loadBatch(step, *exec).ok());
    float first = exec->view(0).as<float>()[0];
    EXPECT_EQ(first, step % 2 == 0 ? 0.0f : 2.0f);
  }
  std::filesystem::remove_all(dir);
}

// A resumed run continues at its checkpoint's data position, whatever its batch: from there
// each step takes the next batch, and where a whole one no longer fits before the end of the
// data, the next epoch starts at sample 0.
TEST(DataLoader, ContinuesFromTheOriginAndWrapsAtTheEpoch) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  std::filesystem::path dir =
      writeScalarSamples("plait_dataloader_origin", {0, 1, 2, 3, 4, 5, 6});
  DataLoader data;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, data).ok());
  ASSERT_EQ(data.batchesPerEpoch(), 3);
  // From the start: 0, 2, 4, then a new epoch (samples 6.. are not a whole batch).
  EXPECT_EQ(data.position(0), 0);
  EXPECT_EQ(data.position(2), 4);
  EXPECT_EQ(data.position(3), 0);
  // A run of batch 3 stopped after 1 step (position 3); this one of batch 2 goes on from it
  // at step 1: 3, 5, then the epoch ends (7 - 5 < 2): 0, 2, 4, 0.
  data.setOrigin(1, 3, 0);
  std::vector<int64_t> got, epochs;
  for (int64_t step = 1; step <= 6; ++step) {
    got.push_back(data.position(step));
    epochs.push_back(data.epoch(step));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{3, 5, 0, 2, 4, 0}));
  EXPECT_EQ(epochs, (std::vector<int64_t>{0, 0, 1, 1, 1, 2}));
  std::unique_ptr<Executor> exec;
  ASSERT_TRUE(Executor::create(plan, {}, exec).ok());
  ASSERT_TRUE(data.loadBatch(2, *exec).ok());
  EXPECT_EQ(exec->view(0).as<float>()[0], 5.0f);
  EXPECT_EQ(exec->view(0).as<float>()[1], 6.0f);
  // A position at or past the end of the data (a smaller data set): a new epoch.
  data.setOrigin(4, 9, 3);
  EXPECT_EQ(data.position(4), 0);
  EXPECT_EQ(data.epoch(4), 4);
  EXPECT_EQ(data.position(5), 2);
  std::filesystem::remove_all(dir);
}

// --shuffle: every epoch takes each of the samples its whole batches cover once, in an order
// of its own; the same seed gives the same orders (every rank computes them), ranks split
// one global batch, and a loader resumed at an origin continues the same sequence.
TEST(DataLoader, ShuffledEpochsArePermutationsContinuedOnResume) {
  Plan plan;
  ASSERT_TRUE(loadPlanFromBytes(plan::serializePlan(tinyTrainingPlan()), "t.plan", plan).ok());
  std::vector<float> samples(10);
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = float(i);
  std::filesystem::path dir = writeScalarSamples("plait_dataloader_shuffle", samples);
  auto batchesOf = [&](DataLoader &data, int64_t from, int64_t to) {
    std::vector<float> seen;
    for (int64_t step = from; step < to; ++step) {
      const float *batch = reinterpret_cast<const float *>(data.batchData(step, 0));
      seen.insert(seen.end(), batch, batch + data.batchSize());
    }
    return seen;
  };
  DataLoader a, b;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, a).ok());
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, b).ok());
  a.setShuffle(7);
  b.setShuffle(7);
  ASSERT_EQ(a.batchesPerEpoch(), 5);
  std::vector<float> epoch0 = batchesOf(a, 0, 5), epoch1 = batchesOf(a, 5, 10);
  std::vector<float> sorted0 = epoch0, sorted1 = epoch1;
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  EXPECT_EQ(sorted0, samples);
  EXPECT_EQ(sorted1, samples);
  EXPECT_NE(epoch0, samples); // shuffled (for this seed, checked once)
  EXPECT_NE(epoch0, epoch1);  // a new order each epoch
  EXPECT_EQ(batchesOf(b, 0, 10), batchesOf(a, 0, 10)); // the same seed, the same orders
  DataLoader other;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, other).ok());
  other.setShuffle(8);
  EXPECT_NE(batchesOf(other, 0, 5), epoch0);
  // Two ranks of batch 2 take a global batch of 4: rank 0 its first half, rank 1 the
  // second, in the same order as one rank taking batch 2 twice.
  DataLoader r0, r1;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, r0, 2, 0).ok());
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, r1, 2, 1).ok());
  r0.setShuffle(7);
  r1.setShuffle(7);
  std::vector<float> joined;
  for (int64_t step = 0; step < 2; ++step)
    for (DataLoader *r : {&r0, &r1}) {
      const float *batch = reinterpret_cast<const float *>(r->batchData(step, 0));
      joined.insert(joined.end(), batch, batch + 2);
    }
  EXPECT_EQ(joined, std::vector<float>(epoch0.begin(), epoch0.begin() + 8));
  // Resumed after step 7 (epoch 1, position 4): the rest is the uninterrupted sequence.
  DataLoader resumed;
  ASSERT_TRUE(DataLoader::open(dir.string(), plan, resumed).ok());
  resumed.setShuffle(7);
  resumed.setOrigin(7, a.position(7), a.epoch(7));
  EXPECT_EQ(batchesOf(resumed, 7, 13), batchesOf(a, 7, 13));
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, HeaderDescribesEveryTensor) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "plait_weights.safetensors";
  float a[3] = {1, 2, 3};
  int64_t b[2] = {7, 8};
  ASSERT_TRUE(writeSafetensors(path.string(), {{"fc.weight", TensorView{a, DType::F32, {3}}},
                                               {"steps", TensorView{b, DType::I64, {2, 1}}}})
                  .ok());
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char *>(&n), 8);
  ASSERT_EQ(n % 8, 0u);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  auto json = nlohmann::json::parse(header);
  EXPECT_EQ(json["fc.weight"]["dtype"], "F32");
  EXPECT_EQ(json["fc.weight"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(json["steps"]["shape"], nlohmann::json({2, 1}));
  EXPECT_EQ(json["steps"]["data_offsets"], nlohmann::json({12, 28}));
  float back[3];
  in.read(reinterpret_cast<char *>(back), sizeof back);
  EXPECT_EQ(back[2], 3.0f);
  std::filesystem::remove(path);
}

TEST(Safetensors, ReadsBackWhatItWrote) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "plait_roundtrip.safetensors";
  float a[3] = {1, 2, 3};
  int64_t b[2] = {7, 8};
  ASSERT_TRUE(writeSafetensors(path.string(), {{"w", TensorView{a, DType::F32, {3}}},
                                               {"n", TensorView{b, DType::I64, {2}}}})
                  .ok());
  std::vector<std::pair<std::string, HostTensor>> back;
  Status s = readSafetensors(path.string(), back);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].first, "w");
  EXPECT_EQ(back[0].second.shape, std::vector<int64_t>({3}));
  EXPECT_EQ(reinterpret_cast<const float *>(back[0].second.bytes.data())[2], 3.0f);
  EXPECT_EQ(back[1].second.dtype, DType::I64);
  EXPECT_EQ(reinterpret_cast<const int64_t *>(back[1].second.bytes.data())[1], 8);
  std::filesystem::remove(path);
}

// Each malformed file is refused with a message naming the file and what is wrong.
TEST(Safetensors, RefusesMalformedFiles) {
  auto parse = [](const std::string &header, size_t dataBytes) {
    std::vector<uint8_t> bytes(8);
    for (int i = 0; i < 8; ++i)
      bytes[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + dataBytes);
    std::vector<std::pair<std::string, HostTensor>> out;
    return parseSafetensors(bytes.data(), bytes.size(), "f.safetensors", out).message();
  };
  EXPECT_THAT(parse("[1]", 0), testing::HasSubstr("f.safetensors: the header is not a JSON object"));
  EXPECT_THAT(parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
              testing::HasSubstr("lie outside the 4 data bytes"));
  EXPECT_THAT(parse(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
              testing::HasSubstr("needs 12"));
  EXPECT_THAT(parse(R"({"w":{"dtype":"Q8","shape":[2],"data_offsets":[0,8]}})", 8),
              testing::HasSubstr("unknown dtype 'Q8'"));
  EXPECT_THAT(parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
              testing::HasSubstr("without gaps or overlaps"));
  EXPECT_THAT(parse(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 9),
              testing::HasSubstr("1 bytes follow the last tensor"));
  // Names and dtypes are the file's text: a control character in one is escaped, so the
  // error stays one line (fuzz.safetensors found a name with a newline).
  EXPECT_EQ(parse(R"({"a\nb":{"dtype":"Q\r8","shape":[2],"data_offsets":[0,8]}})", 8),
            "f.safetensors: tensor 'a\\x0ab': unknown dtype 'Q\\x0d8'");
  EXPECT_THAT(parse(R"({"a\u0000":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b\tc":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
              testing::HasSubstr("tensor 'b\\x09c': data_offsets start at 4"));
  std::vector<uint8_t> tiny(5);
  std::vector<std::pair<std::string, HostTensor>> out;
  EXPECT_THAT(parseSafetensors(tiny.data(), tiny.size(), "t", out).message(),
              testing::HasSubstr("not a safetensors file"));
}

} // namespace
} // namespace plait::rt
