// Collectives over real MPI ranks (run by ctest under mpirun -np 2 and -np 4): every kind,
// reductions, dtypes, several groups in one plan, waits, sharded params and byte counters.
// Each rank builds the same plan, as plait-run's ranks load the same file.
#include <cstring>

#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "PlanMaker.h"
#include "codegen/schema/CommModel.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/comm/Mpi.h"

namespace plait::testing {
namespace {

using fb::DType;
using fb::TensorKind;

class MpiCollectivesTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    rt::Status s = rt::mpi::makeWorldComm(comm_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  static void TearDownTestSuite() { comm_.reset(); }

  uint32_t rank() const { return comm_->rank(); }
  uint32_t world() const { return comm_->size(); }

  // Loads `desc` and creates this rank's executor over the MPI communicator.
  void start(const plan::PlanDesc &desc, uint64_t seed = 0) {
    rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(desc), "mpi.plan", plan_);
    ASSERT_TRUE(s.ok()) << s.message();
    rt::ExecutorOptions options;
    options.rank = rank();
    options.seed = seed;
    options.comm = comm_.get();
    s = rt::Executor::create(plan_, options, exec_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  template <typename T> void setInput(size_t index, std::vector<T> values) {
    const rt::PlanTensor &t = plan_.tensors[plan_.inputs[index]];
    ASSERT_EQ(values.size() * sizeof(T), t.bytes);
    ASSERT_TRUE(exec_->setInput(index, {values.data(), t.dtype, t.shape}).ok());
  }
  void run() {
    rt::Status s = exec_->run();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  template <typename T> std::vector<T> value(uint32_t tensor) const {
    rt::TensorView v = exec_->view(tensor);
    return std::vector<T>(v.as<T>(), v.as<T>() + v.numel());
  }

  static std::unique_ptr<rt::Communicator> comm_;
  rt::Plan plan_;
  std::unique_ptr<rt::Executor> exec_;
};

std::unique_ptr<rt::Communicator> MpiCollectivesTest::comm_;

uint64_t sent(const char *kind, uint64_t bytes, uint64_t groupSize) {
  return collectiveBytesSent(kind, bytes, groupSize);
}

TEST_F(MpiCollectivesTest, AllReduceSumMeanInPlaceDtypesAndBroadcast) {
  const uint32_t w = world();
  PlanMaker m(w);
  uint32_t x = m.add("x", TensorKind::Input, {3});
  uint32_t xi = m.add("xi", TensorKind::Input, {3});
  uint32_t h = m.add("h", TensorKind::Input, {2}, DType::BF16);
  uint32_t d = m.add("d", TensorKind::Input, {2}, DType::F64);
  uint32_t i = m.add("i", TensorKind::Input, {2}, DType::I64);
  uint32_t s = m.add("s", TensorKind::Activation, {3});
  uint32_t mean = m.add("mean", TensorKind::Activation, {3});
  uint32_t b = m.add("b", TensorKind::Activation, {3});
  uint32_t xiSum = m.alias("xi_sum", xi);
  uint32_t hs = m.add("hs", TensorKind::Activation, {2}, DType::BF16);
  uint32_t dm = m.add("dm", TensorKind::Activation, {2}, DType::F64);
  uint32_t is = m.add("is", TensorKind::Activation, {2}, DType::I64);
  auto all = wholeWorld(w);
  m.instr("all_reduce", {x}, {s}, groupAttrs(all, {strAttr("reduce", "sum")}));
  m.instr("all_reduce", {x}, {mean}, groupAttrs(all, {strAttr("reduce", "mean")}));
  m.instr("broadcast", {x}, {b}, groupAttrs(all, {intsAttr("root", {int64_t(w) - 1})}));
  m.instr("all_reduce", {xi}, {xiSum}, groupAttrs(all));
  m.instr("all_reduce", {h}, {hs}, groupAttrs(all));
  m.instr("all_reduce", {d}, {dm}, groupAttrs(all, {strAttr("reduce", "mean")}));
  m.instr("all_reduce", {i}, {is}, groupAttrs(all));
  m.desc().outputs = {s};
  start(m.finish());

  float r = float(rank());
  setInput<float>(0, {r + 1, 10 * (r + 1), 0.5f});
  setInput<float>(1, {r, 1, -r});
  setInput<uint16_t>(2, {rt::floatToBf16(r + 1), rt::floatToBf16(0.5f)});
  setInput<double>(3, {double(r), 2});
  setInput<int64_t>(4, {int64_t(rank()), 1});
  run();

  float n = float(w), tri = n * (n + 1) / 2, lower = n * (n - 1) / 2;
  EXPECT_EQ(value<float>(s), (std::vector<float>{tri, 10 * tri, 0.5f * n}));
  EXPECT_EQ(value<float>(mean), (std::vector<float>{tri / n, 10 * tri / n, 0.5f}));
  EXPECT_EQ(value<float>(b), (std::vector<float>{n, 10 * n, 0.5f})); // from rank w - 1
  EXPECT_EQ(value<float>(xiSum), (std::vector<float>{lower, n, -lower}));
  std::vector<uint16_t> half = value<uint16_t>(hs);
  EXPECT_EQ(rt::bf16ToFloat(half[0]), tri);
  EXPECT_EQ(rt::bf16ToFloat(half[1]), 0.5f * n);
  EXPECT_EQ(value<double>(dm), (std::vector<double>{(n - 1) / 2.0, 2.0}));
  EXPECT_EQ(value<int64_t>(is), (std::vector<int64_t>{int64_t(lower), int64_t(w)}));

  const rt::CommBytes &bytes = exec_->stepCommBytes();
  uint64_t allReduce = 3 * sent("all_reduce", 12, w) + sent("all_reduce", 4, w) +
                       2 * sent("all_reduce", 16, w);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::AllReduce), allReduce);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::Broadcast), sent("broadcast", 12, w));
  EXPECT_EQ(bytes.total(), allReduce + sent("broadcast", 12, w));

  // A second step counts afresh and gives the same results.
  setInput<float>(0, {r + 1, 10 * (r + 1), 0.5f});
  setInput<float>(1, {r, 1, -r});
  setInput<uint16_t>(2, {rt::floatToBf16(r + 1), rt::floatToBf16(0.5f)});
  setInput<double>(3, {double(r), 2});
  setInput<int64_t>(4, {int64_t(rank()), 1});
  run();
  EXPECT_EQ(value<float>(s), (std::vector<float>{tri, 10 * tri, 0.5f * n}));
  EXPECT_EQ(exec_->stepCommBytes().total(), allReduce + sent("broadcast", 12, w));
}

TEST_F(MpiCollectivesTest, ReduceScatterAllGatherWaitsAndGroupOrder) {
  const uint32_t w = world();
  const int64_t n = 2 * int64_t(w);
  PlanMaker m(w);
  uint32_t x = m.add("x", TensorKind::Input, {n});
  uint32_t x2 = m.add("x2", TensorKind::Input, {2});
  uint32_t two = m.add("two", TensorKind::Constant, {n});
  m.tensor(two).data = f32Bytes(std::vector<float>(size_t(n), 2.0f));
  uint32_t c = m.add("c", TensorKind::Activation, {2});
  uint32_t g = m.add("g", TensorKind::Activation, {n});
  uint32_t cm = m.add("cm", TensorKind::Activation, {2});
  uint32_t gr = m.add("gr", TensorKind::Activation, {n});
  uint32_t local = m.add("local", TensorKind::Activation, {n});
  uint32_t out = m.add("out", TensorKind::Activation, {n});
  auto all = wholeWorld(w);
  std::vector<int64_t> reversed(all[0].rbegin(), all[0].rend());
  uint32_t rs = m.instr("reduce_scatter", {x}, {c}, groupAttrs(all));
  uint32_t ag = m.instr("all_gather", {c}, {g}, groupAttrs(all), {rs});
  m.instr("reduce_scatter", {x}, {cm}, groupAttrs({reversed}, {strAttr("reduce", "mean")}));
  m.instr("all_gather", {x2}, {gr}, groupAttrs({reversed}));
  m.instr("add", {two, two}, {local}); // local work while the collectives are in flight
  m.instr("mul", {g, local}, {out}, {}, {ag});
  m.desc().outputs = {out};
  start(m.finish());

  std::vector<float> xs;
  for (int64_t j = 0; j < n; ++j)
    xs.push_back(100.0f * float(rank()) + float(j));
  setInput<float>(0, xs);
  setInput<float>(1, {float(rank()), float(rank())});
  run();

  // Sum over ranks of element j: 100 * w(w-1)/2 + w * j.
  auto summed = [&](int64_t j) { return 100.0f * float(w * (w - 1) / 2) + float(w) * float(j); };
  int64_t me = rank();
  EXPECT_EQ(value<float>(c), (std::vector<float>{summed(2 * me), summed(2 * me + 1)}));
  std::vector<float> full, doubled;
  for (int64_t j = 0; j < n; ++j) {
    full.push_back(summed(j));
    doubled.push_back(4 * summed(j));
  }
  EXPECT_EQ(value<float>(g), full);
  EXPECT_EQ(value<float>(out), doubled);
  // In the reversed group, rank r is member w-1-r: its chunk, and the gather's chunk order.
  int64_t index = int64_t(w) - 1 - me;
  EXPECT_EQ(value<float>(cm), (std::vector<float>{summed(2 * index) / float(w),
                                                  summed(2 * index + 1) / float(w)}));
  std::vector<float> gathered;
  for (int64_t i = 0; i < int64_t(w); ++i)
    gathered.insert(gathered.end(), 2, float(int64_t(w) - 1 - i));
  EXPECT_EQ(value<float>(gr), gathered);

  const rt::CommBytes &bytes = exec_->stepCommBytes();
  EXPECT_EQ(bytes.of(rt::CollectiveKind::ReduceScatter), 2 * sent("reduce_scatter", 8 * w, w));
  EXPECT_EQ(bytes.of(rt::CollectiveKind::AllGather), 2 * sent("all_gather", 8 * w, w));
}

// Groups that split the world two ways in one plan, a group some ranks are not in, and a
// broadcast whose root differs per group. Four ranks.
TEST_F(MpiCollectivesTest, SeveralGroupsInOnePlan) {
  if (world() != 4)
    GTEST_SKIP() << "needs 4 ranks";
  PlanMaker m(4);
  uint32_t x = m.add("x", TensorKind::Input, {2});
  uint32_t p = m.add("p", TensorKind::Activation, {2});
  uint32_t q = m.add("q", TensorKind::Activation, {2});
  uint32_t o = m.add("o", TensorKind::Activation, {2});
  uint32_t b = m.add("b", TensorKind::Activation, {2});
  m.instr("all_reduce", {x}, {p}, groupAttrs({{0, 1}, {2, 3}}));
  m.instr("all_reduce", {x}, {q}, groupAttrs({{0, 2}, {1, 3}}));
  m.instr("all_reduce", {x}, {o}, groupAttrs({{1, 2}}));
  m.instr("broadcast", {x}, {b}, groupAttrs({{3, 0}, {1, 2}}, {intsAttr("root", {1})}));
  m.desc().outputs = {p};
  start(m.finish());
  setInput<float>(0, {float(rank()), 1});
  run();

  std::vector<std::vector<float>> pairSums = {{1, 2}, {1, 2}, {5, 2}, {5, 2}};
  std::vector<std::vector<float>> strideSums = {{2, 2}, {4, 2}, {2, 2}, {4, 2}};
  std::vector<std::vector<float>> partial = {{0, 0}, {3, 2}, {3, 2}, {0, 0}};
  std::vector<std::vector<float>> roots = {{0, 1}, {2, 1}, {2, 1}, {0, 1}};
  EXPECT_EQ(value<float>(p), pairSums[rank()]);
  EXPECT_EQ(value<float>(q), strideSums[rank()]);
  EXPECT_EQ(value<float>(o), partial[rank()]) << "ranks 0 and 3 skip; their output is untouched";
  EXPECT_EQ(value<float>(b), roots[rank()]);

  bool inPartial = rank() == 1 || rank() == 2;
  EXPECT_EQ(exec_->stepCommBytes().of(rt::CollectiveKind::AllReduce),
            2 * sent("all_reduce", 8, 2) + (inPartial ? sent("all_reduce", 8, 2) : 0));
  EXPECT_EQ(exec_->stepCommBytes().of(rt::CollectiveKind::Broadcast), sent("broadcast", 8, 2));
}

// A unit of params a [3] (data) and b [2, 2] (normal:1), 7 elements padded to a multiple of
// the group size. Shards over all ranks, or over pairs with 4 ranks (HSDP).
TEST_F(MpiCollectivesTest, ShardedParamsGatherToTheUnshardedValues) {
  const uint32_t w = world();
  const uint32_t groupSize = w == 4 ? 2 : w;
  const int64_t padded = (7 + groupSize - 1) / groupSize * groupSize, shard = padded / groupSize;
  std::vector<uint32_t> groups;
  for (uint32_t r = 0; r < w; ++r)
    groups.push_back(r);

  PlanMaker m(w);
  uint32_t unit = m.add("block0.flat", TensorKind::Param, {shard});
  plan::ShardDesc &s = m.tensor(unit).shard;
  s.unit = "block0";
  s.groups = groups;
  s.groupSize = groupSize;
  s.paddedNumel = uint64_t(padded);
  plan::ShardPieceDesc a{"a", {3}, 0, 3, f32Bytes({1, 2, 3}), ""};
  plan::ShardPieceDesc b{"b", {2, 2}, 3, 4, {}, "normal:1"};
  s.pieces = {a, b};
  uint32_t full = m.add("full", TensorKind::Activation, {padded});
  uint32_t back = m.add("back", TensorKind::Activation, {shard});
  std::vector<std::vector<int64_t>> groupList;
  for (uint32_t g = 0; g < w / groupSize; ++g)
    groupList.emplace_back(groups.begin() + g * groupSize, groups.begin() + (g + 1) * groupSize);
  uint32_t ag = m.instr("all_gather", {unit}, {full}, groupAttrs(groupList));
  m.instr("local_shard", {full}, {back}, groupAttrs(groupList), {ag});
  m.desc().outputs = {full};
  start(m.finish(), /*seed=*/11);
  run();

  // The same params unsharded, initialised in this process alone.
  PlanMaker ref(1);
  uint32_t ra = ref.add("a", TensorKind::Param, {3});
  ref.tensor(ra).data = f32Bytes({1, 2, 3});
  uint32_t rb = ref.add("b", TensorKind::Param, {2, 2});
  ref.tensor(rb).init = "normal:1";
  ref.desc().outputs = {ra};
  rt::Plan refPlan;
  ASSERT_TRUE(rt::loadPlanFromBytes(plan::serializePlan(ref.finish()), "ref.plan", refPlan).ok());
  rt::ExecutorOptions refOptions;
  refOptions.seed = 11;
  std::unique_ptr<rt::Executor> refExec;
  ASSERT_TRUE(rt::Executor::create(refPlan, refOptions, refExec).ok());
  std::vector<float> expected(refExec->view(ra).as<float>(), refExec->view(ra).as<float>() + 3);
  expected.insert(expected.end(), refExec->view(rb).as<float>(), refExec->view(rb).as<float>() + 4);
  expected.resize(size_t(padded), 0.0f);

  EXPECT_EQ(value<float>(full), expected);
  EXPECT_EQ(value<float>(back), value<float>(unit));
  std::vector<uint8_t> gathered;
  ASSERT_TRUE(exec_->gatherParam(unit, gathered).ok());
  std::vector<float> asFloats(gathered.size() / 4);
  std::memcpy(asFloats.data(), gathered.data(), gathered.size());
  EXPECT_EQ(asFloats, expected);
}

} // namespace
} // namespace plait::testing
