// A step allocates no memory: the compiled samples (training with each optimizer, inference)
// run steps 2..N under a replaced malloc/operator new, and plait's own allocations must be
// zero. Allocations by libraries (OpenBLAS) are reported per library in the test's output.
#include <cstring>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "AllocationCounter.h"
#include "StepHarness.h"

namespace plait::alloc_test {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSteps = 5;

std::string tempDir(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / "plait_alloc_tests" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Keeps the optimizer from dropping an allocation whose result is unused.
__attribute__((noinline)) void consume(void *p) { asm volatile("" : : "r"(p) : "memory"); }

// The counter itself: an allocation in this executable, one made through libstdc++ and one
// made through libc are each charged to "plait"; nothing is counted outside a window.
TEST(AllocationCounter, CountsAndAttributesAllocations) {
  startCounting();
  int *p = new int[4];
  consume(p);
  std::string text(200, 'x'); // built by libstdc++'s out-of-line string code
  consume(text.data());
  char *copy = strdup(text.c_str());
  consume(copy);
  free(copy);
  delete[] p;
  AllocationReport report = stopCounting();
  EXPECT_GE(report.allocationsBy("plait"), 3u) << report.describe();
  EXPECT_GE(report.freesBy("plait"), 2u) << report.describe();
  EXPECT_FALSE(report.firstPlaitStack.empty());

  startCounting();
  AllocationReport empty = stopCounting();
  int *q = new int(1); // after the window: not counted
  consume(q);
  delete q;
  EXPECT_EQ(empty.totalAllocations(), 0u) << empty.describe();
}

struct SamplePlan {
  const char *name;   // test name
  const char *sample; // samples/<sample>
  const char *flags;  // plait-compile flags
};

// Names the case in test listings (gtest would print the struct's bytes).
void PrintTo(const SamplePlan &p, std::ostream *os) { *os << p.name; }

class StepAllocation : public ::testing::TestWithParam<SamplePlan> {};

TEST_P(StepAllocation, StepsAfterTheFirstAllocateNothing) {
  const SamplePlan &p = GetParam();
  std::string dir = tempDir(p.name);
  std::string plan = dir + "/model.plan";
  std::string error = compileSample(p.sample, p.flags, plan);
  ASSERT_EQ(error, "");
  std::string data = dir + "/data";
  ASSERT_EQ(writeSampleData(p.sample, 3, data), "");
  CountedRun run = runCounted(plan, data, kSteps);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  // Reported, whatever the outcome: which library allocated how often in steps 2..N.
  std::cout << "[ counts   ] " << p.name << ": step 1 " << run.firstStep.describe()
            << " | steps 2.." << kSteps << " " << run.report.describe() << "\n";
  EXPECT_EQ(run.report.allocationsBy("plait"), 0u)
      << run.report.describe() << "\nfirst one:\n" << run.report.firstPlaitStack;
  EXPECT_EQ(run.report.freesBy("plait"), 0u)
      << run.report.describe() << "\nfirst one:\n" << run.report.firstPlaitStack;
  EXPECT_EQ(run.report.unclassified, 0u);
  // With one process and OpenBLAS's buffers set up by the first step, nobody else allocates.
  EXPECT_EQ(run.report.totalAllocations(), 0u) << run.report.describe();
  // The step touched exactly the memory the compiler planned.
  EXPECT_EQ(run.arenaHighWater, run.plannedPeak);
  EXPECT_LE(run.workspaceHighWater, run.workspaceBytes);
}

// --shuffle gathers each batch's rows into buffers allocated when the loader is set up, and
// makes each epoch's order in place: 3 batches an epoch, so the counted steps cross epochs.
TEST(StepAllocation, ShuffledBatchesAllocateNothing) {
  std::string dir = tempDir("mlp_shuffled");
  std::string plan = dir + "/model.plan";
  ASSERT_EQ(compileSample("mlp", "--train --optimizer sgd --lr 0.05 --momentum 0.9", plan), "");
  std::string data = dir + "/data";
  ASSERT_EQ(writeSampleData("mlp", 3, data), "");
  CountedRun run = runCounted(plan, data, kSteps, nullptr, /*shuffle=*/true);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  EXPECT_EQ(run.report.allocationsBy("plait"), 0u)
      << run.report.describe() << "\nfirst one:\n" << run.report.firstPlaitStack;
  EXPECT_EQ(run.report.totalAllocations(), 0u) << run.report.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Samples, StepAllocation,
    ::testing::Values(
        SamplePlan{"mlp_sgd", "mlp",
                   "--train --optimizer sgd --lr 0.05 --momentum 0.9 --nesterov "
                   "--weight-decay 1e-4"},
        SamplePlan{"mlp_adamw", "mlp", "--train --optimizer adamw --lr 1e-3"},
        SamplePlan{"mlp_forward", "mlp", ""},
        SamplePlan{"cnn_sgd", "cnn", "--train --optimizer sgd --lr 0.05 --momentum 0.5"},
        SamplePlan{"cnn_adamw", "cnn", "--train --optimizer adamw --lr 1e-3"},
        SamplePlan{"cnn_forward", "cnn", ""},
        SamplePlan{"gpt_adamw_cosine_clip", "gpt",
                   "--train --optimizer adamw --lr 3e-3 --lr-schedule cosine --warmup-steps 2 "
                   "--total-steps 10 --clip-grad-norm 1.0"},
        SamplePlan{"gpt_sgd", "gpt", "--train --optimizer sgd --lr 0.1 --momentum 0.9"},
        SamplePlan{"gpt_forward", "gpt", ""}),
    [](const ::testing::TestParamInfo<SamplePlan> &info) { return info.param.name; });

} // namespace
} // namespace plait::alloc_test
