// The executor: params and constants in the arena, input binding, instruction order,
// memory reuse, error reporting; and a round trip over the real CPU kernels when present.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;

class ExecutorTest : public ::testing::Test {
protected:
  void SetUp() override { registerTestKernels(); }

  void load(const RawPlan &raw) {
    rt::Status s = rt::loadPlanFromBytes(serializeRaw(raw), "model.plan", plan_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::unique_ptr<rt::Executor> create(uint64_t seed = 0) {
    std::unique_ptr<rt::Executor> exec;
    rt::ExecutorOptions options;
    options.seed = seed;
    rt::Status s = rt::Executor::create(plan_, options, exec);
    EXPECT_TRUE(s.ok()) << s.message();
    return exec;
  }
  static std::vector<float> floats(const rt::TensorView &v) {
    return std::vector<float>(v.as<float>(), v.as<float>() + v.numel());
  }

  rt::Plan plan_;
};

TEST_F(ExecutorTest, RunsInstructionsInOrderWithMemoryReuse) {
  ASSERT_NO_FATAL_FAILURE(load(validRawPlan()));
  auto exec = create();
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->arenaBytes(), 128u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(exec->view(0).data) % rt::Arena::kAlignment, 0u);

  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {2, 3}}).ok());
  rt::Status s = exec->run();
  ASSERT_TRUE(s.ok()) << s.message();
  // y = (x + 0.5) * 2, written over x's memory.
  EXPECT_EQ(floats(exec->output(0)), (std::vector<float>{3, 5, 7, 9, 11, 13}));
  EXPECT_EQ(exec->output(0).data, exec->view(0).data);
  EXPECT_EQ(floats(exec->output(1)), std::vector<float>(6, 1.0f)) << "param w = ones";
  EXPECT_EQ(exec->instructionsRun(), 2u);

  // A second step with a new input.
  std::vector<float> x2 = {0, 0, 0, 0, 0, 1};
  ASSERT_TRUE(exec->setInput(0, {x2.data(), rt::DType::F32, {2, 3}}).ok());
  ASSERT_TRUE(exec->run().ok());
  EXPECT_EQ(floats(exec->output(0)), (std::vector<float>{1, 1, 1, 1, 1, 3}));
}

TEST_F(ExecutorTest, RequiresInputsBeforeEveryRun) {
  ASSERT_NO_FATAL_FAILURE(load(validRawPlan()));
  auto exec = create();
  EXPECT_EQ(exec->run().message(), "model.plan: input 'x' was not set before the run");
  std::vector<float> x(6, 1.0f);
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {2, 3}}).ok());
  ASSERT_TRUE(exec->run().ok());
  EXPECT_EQ(exec->run().message(), "model.plan: input 'x' was not set before the run");
}

TEST_F(ExecutorTest, RejectsInputOfWrongShapeOrDtype) {
  ASSERT_NO_FATAL_FAILURE(load(validRawPlan()));
  auto exec = create();
  std::vector<float> x(6, 1.0f);
  EXPECT_EQ(exec->setInput(0, {x.data(), rt::DType::F32, {3, 2}}).message(),
            "model.plan: input 'x': expected f32 [2, 3], got f32 [3, 2]");
  EXPECT_EQ(exec->setInput(0, {x.data(), rt::DType::I32, {2, 3}}).message(),
            "model.plan: input 'x': expected f32 [2, 3], got i32 [2, 3]");
  EXPECT_EQ(exec->setInput(1, {x.data(), rt::DType::F32, {2, 3}}).message(),
            "model.plan: input index 1 out of range (1 inputs)");
}

TEST_F(ExecutorTest, ReportsKernelErrorsWithInstruction) {
  RawPlan raw = validRawPlan();
  raw.kernels.push_back("test_fail");
  RawInstr fail;
  fail.kernel = 2;
  fail.name = "/broken";
  raw.instrs.push_back(fail);
  ASSERT_NO_FATAL_FAILURE(load(raw));
  auto exec = create();
  std::vector<float> x(6, 1.0f);
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {2, 3}}).ok());
  rt::Status s = exec->run();
  EXPECT_EQ(s.message(), "model.plan: instruction 2 ('/broken', kernel test_fail): boom");
  EXPECT_FALSE(s.isInternal());
}

TEST_F(ExecutorTest, ReportsKernelExceptionsAsInternalErrors) {
  RawPlan raw = validRawPlan();
  raw.kernels.push_back("test_throw");
  RawInstr thrower;
  thrower.kernel = 2;
  thrower.name = "/throws";
  raw.instrs.insert(raw.instrs.begin(), thrower);
  ASSERT_NO_FATAL_FAILURE(load(raw));
  auto exec = create();
  std::vector<float> x(6, 1.0f);
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {2, 3}}).ok());
  rt::Status s = exec->run();
  EXPECT_EQ(s.message(),
            "model.plan: instruction 0 ('/throws', kernel test_throw): kernel threw: kaboom");
  EXPECT_TRUE(s.isInternal());
}

TEST_F(ExecutorTest, InitialisesParamsFromSpecDeterministically) {
  RawPlan raw = validRawPlan();
  raw.tensors[2].init = "normal:0.5";
  ASSERT_NO_FATAL_FAILURE(load(raw));
  std::vector<float> a = floats(create(7)->view(2));
  std::vector<float> b = floats(create(7)->view(2));
  std::vector<float> c = floats(create(8)->view(2));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a)
    EXPECT_LT(std::abs(v), 5.0f); // 10 sigma
}

TEST_F(ExecutorTest, HandlesEmptyTensors) {
  RawPlan raw;
  raw.arenaBytes = {0};
  RawTensor x;
  x.name = "x";
  x.kind = 1;
  x.shape = {0, 3};
  RawTensor c = x;
  c.name = "c";
  c.kind = 3;
  c.data = 0;
  raw.tensors = {x, c};
  raw.buffers = {{}};
  raw.inputs = {0};
  raw.outputs = {1, 0};
  ASSERT_NO_FATAL_FAILURE(load(raw));
  auto exec = create();
  ASSERT_TRUE(exec);
  ASSERT_TRUE(exec->setInput(0, {nullptr, rt::DType::F32, {0, 3}}).ok());
  ASSERT_TRUE(exec->run().ok());
  EXPECT_EQ(exec->output(1).numel(), 0);
}

TEST_F(ExecutorTest, RejectsRankOutsideWorld) {
  ASSERT_NO_FATAL_FAILURE(load(validRawPlan()));
  std::unique_ptr<rt::Executor> exec;
  rt::ExecutorOptions options;
  options.rank = 1;
  EXPECT_EQ(rt::Executor::create(plan_, options, exec).message(),
            "model.plan: rank 1 out of range (world size 1)");
}

TEST_F(ExecutorTest, RejectsArenaLargerThanMemory) {
  RawPlan raw;
  raw.arenaBytes = {uint64_t{1} << 62};
  ASSERT_NO_FATAL_FAILURE(load(raw));
  std::unique_ptr<rt::Executor> exec;
  rt::Status s = rt::Executor::create(plan_, {}, exec);
  EXPECT_THAT(s.message(), HasSubstr("model.plan: rank 0: arena needs 4611686018427387904 bytes"));
}

// The same round trip over the real CPU kernels (runtime/cpu/): y = x @ w + b.
TEST_F(ExecutorTest, RoundTripWithCpuKernels) {
  if (!rt::findKernel("add") || !rt::findKernel("matmul"))
    GTEST_SKIP() << "runtime/cpu/ does not provide add and matmul yet";
  plan::PlanDesc desc;
  desc.arenaBytes = {256};
  using fb::DType;
  using fb::TensorKind;
  desc.tensors = {
      {"x", DType::F32, {2, 3}, TensorKind::Input, 0, {}, ""},
      {"w", DType::F32, {3, 2}, TensorKind::Param, 32, f32Bytes({1, 2, 3, 4, 5, 6}), ""},
      {"b", DType::F32, {2, 2}, TensorKind::Constant, 64, f32Bytes({10, 20, 30, 40}), ""},
      {"xw", DType::F32, {2, 2}, TensorKind::Activation, 96, {}, ""},
      {"y", DType::F32, {2, 2}, TensorKind::Activation, 128, {}, ""},
  };
  desc.instrs = {{"matmul", {0, 1}, {3}, {}, "/matmul"}, {"add", {3, 2}, {4}, {}, "/add"}};
  desc.inputs = {0};
  desc.outputs = {4};
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(desc), "cpu.plan", plan_);
  ASSERT_TRUE(s.ok()) << s.message();
  auto exec = create();
  std::vector<float> x = {1, 0, 0, 0, 1, 1};
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {2, 3}}).ok());
  s = exec->run();
  ASSERT_TRUE(s.ok()) << s.message();
  // x @ w = [[1, 2], [8, 10]]
  EXPECT_EQ(floats(exec->output(0)), (std::vector<float>{11, 22, 38, 50}));
}

} // namespace
} // namespace plait::testing
