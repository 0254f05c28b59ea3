// A data-parallel step allocates no memory of plait's own: the GPT sample compiled for two
// ranks (ddp, zero1, fsdp) runs steps 2..N on two MPI ranks (mpirun -np 2) under a replaced
// malloc/operator new. Open MPI's non-blocking collectives allocate internally (their
// schedules and requests); those are counted apart, as "MPI", and reported, not held to zero.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "AllocationCounter.h"
#include "StepHarness.h"
#include "runtime/comm/Mpi.h"

namespace plait::alloc_test {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSteps = 5;
constexpr int kWorld = 2;

const std::map<std::string, std::string> kPlans = {
    {"ddp", "--strategy ddp"},
    {"zero1", "--strategy zero1"},
    {"fsdp", "--strategy fsdp --placement 'wte|wpe=ddp'"},
};

// This rank's own directory: plans and data are made by every rank before MPI starts (a
// process that has initialised MPI should not fork a compiler).
std::string rankDir() {
  const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return (fs::path(::testing::TempDir()) / "plait_alloc_mpi_tests" /
          ("rank" + std::string(rank ? rank : "0")))
      .string();
}

std::string preparePlans() {
  std::string dir = rankDir();
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto &[name, strategy] : kPlans) {
    std::string error =
        compileSample("gpt", "--train --optimizer adamw --lr 3e-3 --world-size 2 " + strategy,
                      dir + "/" + name + ".plan");
    if (!error.empty())
      return error;
  }
  // Two global batches of 2 ranks x the plan's batch of 4.
  return writeSampleData("gpt", 4, dir + "/data");
}

class MpiStepAllocation : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiStepAllocation, PlaitAllocatesNothingAfterTheFirstStep) {
  std::unique_ptr<rt::Communicator> comm;
  rt::Status made = rt::mpi::makeWorldComm(comm);
  ASSERT_TRUE(made.ok()) << made.message();
  ASSERT_EQ(comm->size(), uint32_t(kWorld)) << "run under mpirun -np " << kWorld;
  std::string dir = rankDir();
  CountedRun run = runCounted(dir + "/" + GetParam() + ".plan", dir + "/data", kSteps, comm.get());
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  std::cout << "[ counts   ] gpt " << GetParam() << ", rank " << comm->rank() << ": step 1 "
            << run.firstStep.describe() << " | steps 2.." << kSteps << " " << run.report.describe()
            << std::endl;
  if (comm->rank() == 0 && run.report.allocationsBy("MPI") != 0)
    std::cout << "[ counts   ] where MPI allocates first: " << run.report.firstStack.at("MPI")
              << std::endl;
  EXPECT_EQ(run.report.allocationsBy("plait"), 0u) << run.report.describe() << "\nfirst one:\n"
                                                   << run.report.firstPlaitStack;
  EXPECT_EQ(run.report.freesBy("plait"), 0u) << run.report.describe() << "\nfirst one:\n"
                                             << run.report.firstPlaitStack;
  EXPECT_EQ(run.report.unclassified, 0u);
  EXPECT_EQ(run.arenaHighWater, run.plannedPeak);
}

INSTANTIATE_TEST_SUITE_P(Gpt, MpiStepAllocation, ::testing::Values("ddp", "zero1", "fsdp"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace
} // namespace plait::alloc_test

// Like tests/unit/runtime_mpi's main, after each rank has made its plans: every rank runs
// every test, and the exit code is the worst rank's.
int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string error = plait::alloc_test::preparePlans();
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  plait::rt::Status init = plait::rt::mpi::initialize();
  if (!init.ok()) {
    std::fprintf(stderr, "%s\n", init.message().c_str());
    return 2;
  }
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  plait::rt::mpi::finalize();
  return worst;
}
