// Collectives, waits, local_shard and sharded params in one process: what the loader rejects,
// and what a rank computes without communicating (groups of one, its own shard).
// Multi-rank execution is tested under mpirun in tests/unit/runtime_mpi.
#include <cstring>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "PlanMaker.h"
#include "codegen/schema/CommModel.h"
#include "runtime/DataLoader.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/io/Npy.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using fb::DType;
using fb::TensorKind;

std::string loadError(const plan::PlanDesc &desc) {
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(desc), "m.plan", plan);
  return s.ok() ? "" : s.message();
}

rt::Plan load(const plan::PlanDesc &desc) {
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(desc), "m.plan", plan);
  EXPECT_TRUE(s.ok()) << s.message();
  return plan;
}

std::vector<float> floats(const rt::TensorView &v) {
  const float *p = v.as<float>();
  return std::vector<float>(p, p + v.numel());
}

/// World 4, every collective once, over all ranks:
///   0 all_reduce(x) -> s (mean)         2 all_gather(c) -> g, waits 1
///   1 reduce_scatter(x) -> c (sum)      3 broadcast(x) -> b (root 1)
///   4 add(s, b) -> z, waits 0 and 3
struct CollectivePlan {
  PlanMaker m{4};
  uint32_t x, s, c, g, b, z;
  CollectivePlan() {
    x = m.add("x", TensorKind::Input, {8});
    s = m.add("s", TensorKind::Activation, {8});
    c = m.add("c", TensorKind::Activation, {2});
    g = m.add("g", TensorKind::Activation, {8});
    b = m.add("b", TensorKind::Activation, {8});
    z = m.add("z", TensorKind::Activation, {8});
    m.instr("all_reduce", {x}, {s}, groupAttrs(wholeWorld(4), {strAttr("reduce", "mean")}));
    m.instr("reduce_scatter", {x}, {c}, groupAttrs(wholeWorld(4), {strAttr("reduce", "sum")}));
    m.instr("all_gather", {c}, {g}, groupAttrs(wholeWorld(4)), {1});
    m.instr("broadcast", {x}, {b}, groupAttrs(wholeWorld(4), {intsAttr("root", {1})}));
    m.instr("add", {s, b}, {z}, {}, {0, 3});
    m.desc().outputs = {z, g};
  }
  plan::InstrDesc &instr(size_t i) { return m.desc().instrs[i]; }
  plan::AttrDesc &attr(size_t i, const std::string &name) {
    for (plan::AttrDesc &a : instr(i).attrs)
      if (a.name == name)
        return a;
    ADD_FAILURE() << "no attribute " << name;
    return instr(i).attrs[0];
  }
};

TEST(CollectiveLoader, DecodesCollectivesAndWaits) {
  CollectivePlan p;
  rt::Plan plan = load(p.m.finish());
  ASSERT_EQ(plan.instrs.size(), 5u);
  EXPECT_TRUE(plan.instrs[0].isCollective);
  EXPECT_EQ(plan.instrs[0].fn, nullptr);
  EXPECT_EQ(plan.instrs[0].collective.kind, rt::CollectiveKind::AllReduce);
  EXPECT_TRUE(plan.instrs[0].collective.mean);
  EXPECT_EQ(plan.instrs[0].collective.groups.ranks, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.instrs[0].collective.groups.groupSize, 4u);
  EXPECT_FALSE(plan.instrs[1].collective.mean);
  EXPECT_EQ(plan.instrs[2].collective.kind, rt::CollectiveKind::AllGather);
  EXPECT_EQ(plan.instrs[2].waits, std::vector<uint32_t>{1});
  EXPECT_EQ(plan.instrs[3].collective.root, 1u);
  EXPECT_FALSE(plan.instrs[4].isCollective);
  EXPECT_EQ(plan.instrs[4].waits, (std::vector<uint32_t>{0, 3}));
}

TEST(CollectiveLoader, RejectsBadWaits) {
  {
    CollectivePlan p;
    p.instr(0).waits = {2};
    EXPECT_EQ(loadError(p.m.finish()), "m.plan: instruction 0 ('/all_reduce_0'): waits for "
                                       "instruction 2, which is not an earlier instruction");
  }
  {
    CollectivePlan p;
    p.m.instr("add", {p.x, p.x}, {p.s}, {}, {4});
    EXPECT_EQ(loadError(p.m.finish()),
              "m.plan: instruction 5 ('/add_5'): waits for instruction 4 ('/add_4'), which is "
              "not a collective (add)");
  }
  {
    CollectivePlan p;
    p.instr(4).waits = {0, 1, 3};
    EXPECT_EQ(loadError(p.m.finish()),
              "m.plan: instruction 4 ('/add_4'): waits for instruction 1 ('/reduce_scatter_1'), "
              "already waited for by instruction 2");
  }
}

TEST(CollectiveLoader, RejectsBadGroups) {
  auto error = [](void (*mutate)(CollectivePlan &)) {
    CollectivePlan p;
    mutate(p);
    return loadError(p.m.finish());
  };
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "groups").ints = {0, 1, 2, 4}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): rank 4 in groups is outside the world "
            "(size 4)");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "groups").ints = {0, 1, 1, 3}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): rank 1 appears twice in groups");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "groups").ints = {0, 1, 2}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): groups holds 3 ranks, not a positive "
            "multiple of group_size 4");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "group_size").ints = {0}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): group_size must be at least 1, got 0");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "group_size").name = "size"; }),
            "m.plan: instruction 0 ('/all_reduce_0'): needs a 'group_size' attribute");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "groups").name = "ranks"; }),
            "m.plan: instruction 0 ('/all_reduce_0'): needs a 'groups' attribute (the "
            "participating ranks, group-major)");
}

TEST(CollectiveLoader, RejectsBadShapesDtypesAndAttributes) {
  auto error = [](void (*mutate)(CollectivePlan &)) {
    CollectivePlan p;
    mutate(p);
    return loadError(p.m.finish());
  };
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(0, "reduce").str = "max"; }),
            "m.plan: instruction 0 ('/all_reduce_0'): reduce is 'max', expected sum or mean");
  EXPECT_EQ(error([](CollectivePlan &p) {
              p.m.tensor(p.x).dtype = DType::I32;
              p.m.tensor(p.s).dtype = DType::I32;
            }),
            "m.plan: instruction 0 ('/all_reduce_0'): a mean needs a float dtype, the tensor "
            "is i32");
  EXPECT_EQ(error([](CollectivePlan &p) {
              p.m.tensor(p.x).dtype = DType::I1;
              p.m.tensor(p.s).dtype = DType::I1;
              p.attr(0, "reduce").str = "sum";
            }),
            "m.plan: instruction 0 ('/all_reduce_0'): all_reduce cannot reduce i1 tensors");
  EXPECT_EQ(error([](CollectivePlan &p) { p.m.tensor(p.s).dtype = DType::F64; }),
            "m.plan: instruction 0 ('/all_reduce_0'): input is f32, output is f64");
  EXPECT_EQ(error([](CollectivePlan &p) { p.m.tensor(p.s).shape = {2, 4}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): all_reduce keeps the shape, but the input "
            "is [8] and the output [2, 4]");
  EXPECT_EQ(error([](CollectivePlan &p) { p.m.tensor(p.c).shape = {3}; }),
            "m.plan: instruction 1 ('/reduce_scatter_1'): reduce_scatter over groups of 4 needs "
            "input elements = output x 4, got input [8] and output [3]");
  EXPECT_EQ(error([](CollectivePlan &p) { p.m.tensor(p.g).shape = {2, 4}; }),
            "m.plan: instruction 2 ('/all_gather_2'): all_gather works on 1-D tensors, got "
            "input [2] and output [2, 4]");
  EXPECT_EQ(error([](CollectivePlan &p) { p.attr(3, "root").ints = {4}; }),
            "m.plan: instruction 3 ('/broadcast_3'): root 4 is not an index within a group of "
            "4");
  EXPECT_EQ(error([](CollectivePlan &p) { p.instr(0).inputs = {p.x, p.x}; }),
            "m.plan: instruction 0 ('/all_reduce_0'): all_reduce takes one input and one output, "
            "got 2 and 1");
  // An output that starts inside the input (neither disjoint nor exactly in place).
  EXPECT_EQ(error([](CollectivePlan &p) { p.m.tensor(p.s).offset = p.m.tensor(p.x).offset + 4; }),
            "m.plan: instruction 0 ('/all_reduce_0'): input and output of all_reduce overlap in "
            "the arena (only an exactly in-place one is allowed)");
}

TEST(CollectiveLoader, InPlaceAllReduceIsAllowed) {
  PlanMaker m(2);
  uint32_t x = m.add("x", TensorKind::Input, {4});
  uint32_t y = m.alias("y", x);
  m.instr("all_reduce", {x}, {y}, groupAttrs(wholeWorld(2)));
  m.desc().outputs = {y};
  EXPECT_EQ(loadError(m.finish()), "");
}

TEST(CollectiveLoader, RejectsUseOfBuffersInFlight) {
  {
    CollectivePlan p; // reads all_reduce's output without waiting for it
    p.instr(4).waits = {3};
    EXPECT_EQ(loadError(p.m.finish()),
              "m.plan: instruction 4 ('/add_4'): reads tensor 1 ('s') while collective "
              "instruction 0 ('/all_reduce_0') is still writing it (wait for instruction 0 "
              "first)");
  }
  {
    CollectivePlan p; // overwrites all_gather's input while it is in flight (to the end)
    p.m.instr("add", {p.z, p.z}, {p.c});
    EXPECT_EQ(loadError(p.m.finish()),
              "m.plan: instruction 5 ('/add_5'): writes tensor 2 ('c'), a buffer of collective "
              "instruction 2 ('/all_gather_2') which is still in flight (wait for "
              "instruction 2 first)");
  }
}

/// World 4, local_shard of x [8] into y [2] over `groups`.
plan::PlanDesc localShardPlan(const std::vector<std::vector<int64_t>> &groups) {
  PlanMaker m(4);
  uint32_t x = m.add("x", TensorKind::Input, {8});
  uint32_t y = m.add("y", TensorKind::Activation, {8 / int64_t(groups[0].size())});
  m.instr("local_shard", {x}, {y}, groupAttrs(groups));
  m.desc().outputs = {y};
  return m.finish();
}

TEST(LocalShard, TakesTheRanksChunk) {
  rt::Plan plan = load(localShardPlan({{0, 1}, {3, 2}}));
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  // Rank 3 is member 0 of its group, rank 2 member 1.
  std::vector<std::vector<float>> expected = {{0, 1, 2, 3}, {4, 5, 6, 7}, {4, 5, 6, 7},
                                              {0, 1, 2, 3}};
  for (uint32_t rank = 0; rank < 4; ++rank) {
    std::unique_ptr<rt::Executor> exec;
    rt::ExecutorOptions options;
    options.rank = rank;
    ASSERT_TRUE(rt::Executor::create(plan, options, exec).ok());
    ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {8}}).ok());
    ASSERT_TRUE(exec->run().ok());
    EXPECT_EQ(floats(exec->output(0)), expected[rank]) << "rank " << rank;
  }
}

TEST(LocalShard, EveryRankNeedsAPlace) {
  EXPECT_EQ(loadError(localShardPlan({{0, 1}})),
            "m.plan: instruction 0 ('/local_shard_0'): groups must place every rank of the "
            "world (size 4), it holds 2");
  plan::PlanDesc p = localShardPlan({{0, 1}, {2, 3}});
  p.tensors[1].shape = {3};
  EXPECT_EQ(loadError(p), "m.plan: instruction 0 ('/local_shard_0'): local_shard over groups "
                          "of 2 needs input elements = 2 x output, got input [8] and output [3]");
}

TEST(LocalCollectives, GroupsOfOneCopyAndCountNothing) {
  PlanMaker m(1);
  uint32_t x = m.add("x", TensorKind::Input, {4});
  uint32_t s = m.add("s", TensorKind::Activation, {4});
  uint32_t c = m.add("c", TensorKind::Activation, {4});
  uint32_t g = m.add("g", TensorKind::Activation, {4});
  uint32_t b = m.add("b", TensorKind::Activation, {4});
  m.instr("all_reduce", {x}, {s}, groupAttrs({{0}}, {strAttr("reduce", "mean")}));
  m.instr("reduce_scatter", {x}, {c}, groupAttrs({{0}}));
  m.instr("all_gather", {c}, {g}, groupAttrs({{0}}), {1});
  m.instr("broadcast", {x}, {b}, groupAttrs({{0}}));
  m.desc().outputs = {s, g, b};
  rt::Plan plan = load(m.finish());
  std::unique_ptr<rt::Executor> exec;
  ASSERT_TRUE(rt::Executor::create(plan, {}, exec).ok());
  std::vector<float> values = {1.5f, -2, 3, 0.25f};
  ASSERT_TRUE(exec->setInput(0, {values.data(), rt::DType::F32, {4}}).ok());
  ASSERT_TRUE(exec->run().ok());
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(floats(exec->output(i)), values) << "output " << i;
  EXPECT_EQ(exec->stepCommBytes().total(), 0u);
}

TEST(LocalCollectives, GroupsOfManyNeedMpi) {
  CollectivePlan p;
  rt::Plan plan = load(p.m.finish());
  std::unique_ptr<rt::Executor> exec;
  rt::ExecutorOptions options;
  options.rank = 2;
  ASSERT_TRUE(rt::Executor::create(plan, options, exec).ok());
  std::vector<float> x(8, 1.0f);
  ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {8}}).ok());
  rt::Status s = exec->run();
  EXPECT_EQ(s.message(), "m.plan: instruction 0 ('/all_reduce_0', kernel all_reduce): "
                         "all_reduce over a group of 4 ranks needs MPI, but this process runs "
                         "alone (rank 2 of 4, not launched by mpirun)");
}

TEST(CommBytes, FollowsTheRingModel) {
  rt::CommBytes bytes;
  bytes.add(rt::CollectiveKind::AllReduce, 1000, 4);
  bytes.add(rt::CollectiveKind::ReduceScatter, 1000, 4);
  bytes.add(rt::CollectiveKind::AllGather, 1000, 4);
  bytes.add(rt::CollectiveKind::Broadcast, 1000, 1);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::AllReduce), collectiveBytesSent("all_reduce", 1000, 4));
  EXPECT_EQ(bytes.of(rt::CollectiveKind::AllReduce), 1500u);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::ReduceScatter), 750u);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::AllGather), 750u);
  EXPECT_EQ(bytes.of(rt::CollectiveKind::Broadcast), 0u);
  EXPECT_EQ(bytes.total(), 3000u);
}

// A unit of params a [3] (data 1, 2, 3) and b [2, 2] (normal:1), 7 elements padded to 8, in
// shards of 4 (groups of two ranks) or 2 (groups of four).
plan::ShardDesc unitShard(std::vector<uint32_t> groups, uint32_t groupSize) {
  plan::ShardDesc shard;
  shard.unit = "block0";
  shard.groups = std::move(groups);
  shard.groupSize = groupSize;
  shard.paddedNumel = 8;
  plan::ShardPieceDesc a;
  a.name = "a";
  a.shape = {3};
  a.offset = 0;
  a.numel = 3;
  a.data = f32Bytes({1, 2, 3});
  plan::ShardPieceDesc b;
  b.name = "b";
  b.shape = {2, 2};
  b.offset = 3;
  b.numel = 4;
  b.init = "normal:1";
  shard.pieces = {a, b};
  return shard;
}

plan::PlanDesc shardedPlan(std::vector<uint32_t> groups, uint32_t groupSize) {
  PlanMaker m(4);
  uint32_t w = m.add("block0.flat", TensorKind::Param, {8 / int64_t(groupSize)});
  m.tensor(w).shard = unitShard(std::move(groups), groupSize);
  m.desc().outputs = {w};
  return m.finish();
}

TEST(ShardedParams, EachRankHoldsItsSliceOfTheUnsharded) {
  // The same params unsharded, in one process: the reference for every slice.
  PlanMaker ref(1);
  uint32_t a = ref.add("a", TensorKind::Param, {3});
  ref.tensor(a).data = f32Bytes({1, 2, 3});
  uint32_t b = ref.add("b", TensorKind::Param, {2, 2});
  ref.tensor(b).init = "normal:1";
  ref.desc().outputs = {a, b};
  rt::Plan refPlan = load(ref.finish());
  std::unique_ptr<rt::Executor> refExec;
  rt::ExecutorOptions seeded;
  seeded.seed = 7;
  ASSERT_TRUE(rt::Executor::create(refPlan, seeded, refExec).ok());
  std::vector<float> flat = floats(refExec->output(0));
  std::vector<float> bValues = floats(refExec->output(1));
  flat.insert(flat.end(), bValues.begin(), bValues.end());
  flat.push_back(0); // padding

  // HSDP-like: shards of 4 within {0, 1} and within {3, 2}.
  rt::Plan plan = load(shardedPlan({0, 1, 3, 2}, 2));
  ASSERT_TRUE(plan.tensors[0].sharded);
  EXPECT_EQ(plan.tensors[0].shard.pieces.size(), 2u);
  std::vector<size_t> index = {0, 1, 1, 0};
  for (uint32_t rank = 0; rank < 4; ++rank) {
    rt::ExecutorOptions options = seeded;
    options.rank = rank;
    std::unique_ptr<rt::Executor> exec;
    ASSERT_TRUE(rt::Executor::create(plan, options, exec).ok());
    std::vector<float> expected(flat.begin() + 4 * index[rank], flat.begin() + 4 * index[rank] + 4);
    EXPECT_EQ(floats(exec->output(0)), expected) << "rank " << rank;
  }

  // One group of four: shards of 2.
  plan = load(shardedPlan({0, 1, 2, 3}, 4));
  for (uint32_t rank = 0; rank < 4; ++rank) {
    rt::ExecutorOptions options = seeded;
    options.rank = rank;
    std::unique_ptr<rt::Executor> exec;
    ASSERT_TRUE(rt::Executor::create(plan, options, exec).ok());
    EXPECT_EQ(floats(exec->output(0)),
              std::vector<float>(flat.begin() + 2 * rank, flat.begin() + 2 * rank + 2));
  }
}

TEST(ShardedParams, LoaderRejectsBadShards) {
  auto error = [](void (*mutate)(plan::PlanDesc &)) {
    plan::PlanDesc p = shardedPlan({0, 1, 2, 3}, 2);
    mutate(p);
    return loadError(p);
  };
  const std::string t = "m.plan: tensor 0 ('block0.flat'): ";
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].kind = TensorKind::Input; }),
            t + "only a param or optimizer state can be sharded, this is a input tensor");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].kind = TensorKind::State; }),
            t + "piece 0 ('a'): optimizer state starts as zeros; a piece of it takes no data "
                "buffer or initializer");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].init = "zeros"; }),
            t + "a sharded param takes its values from its pieces, not from a data buffer or "
                "initializer");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.groups = {0, 1, 2}; }),
            t + "shard: groups holds 3 ranks, not a positive multiple of group_size 2");
  EXPECT_EQ(error([](plan::PlanDesc &p) {
              p.tensors[0].shard.groups = {0, 1};
            }),
            t + "shard: groups must place every rank of the world (size 4), it holds 2");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.paddedNumel = 10; }),
            t + "shard padded_numel is 10, expected 4 x group_size 2");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[1].offset = 5; }),
            t + "piece 1 ('b'): elements [5, 5+4) lie outside the unit's padded buffer of 8 "
                "elements");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[1].offset = 2; }),
            t + "pieces 'a' and 'b' overlap in the unit's flat buffer");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[0].data = f32Bytes({1, 2}); }),
            t + "piece 0 ('a'): data buffer 0 holds 8 bytes, the piece needs 12");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[1].init.clear(); }),
            t + "piece 1 ('b'): has neither a data buffer nor an initializer");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[1].numel = 3; }),
            t + "piece 1 ('b'): numel is 3, but shape [2, 2] has 4 elements");
  EXPECT_EQ(error([](plan::PlanDesc &p) { p.tensors[0].shard.pieces[1].init = "normal:-1"; }),
            t + "piece 1 ('b'): bad initializer 'normal:-1' (expected zeros, ones, normal:STD "
                "or uniform:BOUND with a non-negative number)");
  EXPECT_EQ(error([](plan::PlanDesc &p) {
              plan::TensorDesc other;
              other.name = "b";
              other.kind = TensorKind::Param;
              other.shape = {1};
              other.offset = 64;
              other.init = "zeros";
              p.tensors.push_back(other);
              p.arenaBytes.assign(4, 128);
            }),
            "m.plan: tensor 1 ('b'): the name 'b' is taken by another param or shard piece "
            "(saved weights hold both under their names)");
}

TEST(DataLoader, EachRankTakesItsSliceOfTheGlobalBatch) {
  PlanMaker m(2);
  uint32_t x = m.add("x", TensorKind::Input, {2});
  m.desc().outputs = {x};
  rt::Plan plan = load(m.finish());
  std::string dir = freshTempDir("data");
  // Nine samples: two global batches of 2 ranks x 2; the last sample is never used.
  std::vector<float> samples = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(rt::writeNpy(dir + "/x.npy", {samples.data(), rt::DType::F32, {9}}).ok());
  for (uint32_t rank = 0; rank < 2; ++rank) {
    rt::DataLoader data;
    ASSERT_TRUE(rt::DataLoader::open(dir, plan, data, 2, rank).ok());
    EXPECT_EQ(data.batchesPerEpoch(), 2);
    rt::ExecutorOptions options;
    options.rank = rank;
    std::unique_ptr<rt::Executor> exec;
    ASSERT_TRUE(rt::Executor::create(plan, options, exec).ok());
    for (int64_t step : {0, 1, 2}) {
      ASSERT_TRUE(data.loadBatch(step, *exec).ok());
      float first = 4.0f * float(step % 2) + 2.0f * float(rank);
      EXPECT_EQ(floats(exec->view(x)), (std::vector<float>{first, first + 1}))
          << "rank " << rank << " step " << step;
    }
  }
  std::vector<float> few = {0, 1, 2};
  ASSERT_TRUE(rt::writeNpy(dir + "/x.npy", {few.data(), rt::DType::F32, {3}}).ok());
  rt::DataLoader data;
  EXPECT_EQ(rt::DataLoader::open(dir, plan, data, 2, 0).message(),
            "--data " + dir + ": 3 samples, fewer than one global batch of 4 (2 ranks x 2)");
}

} // namespace
} // namespace plait::testing
