// main() of the multi-rank GoogleTest suite: every rank runs every test; rank 0 prints the
// usual report, the other ranks only their failures; the exit code is the worst rank's.
#include <mpi.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "runtime/comm/Mpi.h"

namespace {

/// Failures of a rank other than 0, each line prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.summary());
  }

private:
  int rank_;
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  plait::rt::Status init = plait::rt::mpi::initialize();
  if (!init.ok()) {
    std::fprintf(stderr, "%s\n", init.message().c_str());
    return 2;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    ::testing::TestEventListeners &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  plait::rt::mpi::finalize();
  return worst;
}
