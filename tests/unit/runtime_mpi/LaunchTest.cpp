// plait-run as a multi-rank job: mpirun and --nproc launches, data parallelism against a
// world-1 run, sharded weights saved under their param names, world-size mismatches, and a
// dying or failing rank ending the job instead of hanging it. Every command runs under
// `timeout 60`, so a hang fails the test (exit 124) rather than the whole suite.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "PlanFixtures.h"
#include "PlanMaker.h"
#include "codegen/schema/CommModel.h"
#include "runtime/io/Npy.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using fb::DType;
using fb::TensorKind;

constexpr int kTimedOut = 124; // timeout(1)'s exit status

/// A data-parallel training step for `world` ranks of `batch` samples each:
///   loss = mean over ranks of mean(x * w);  w -= lr * (mean over ranks of mean_b x).
/// The gradient's all_reduce is waited for by its consumer; the loss's completes at the end
/// of the step. Initial w = (0.5, -0.25), lr 0.125.
plan::PlanDesc ddpPlan(uint32_t world, int64_t batch) {
  PlanMaker m(world);
  uint32_t x = m.add("x", TensorKind::Input, {batch, 2});
  uint32_t w = m.add("w", TensorKind::Param, {2});
  m.tensor(w).data = f32Bytes({0.5f, -0.25f});
  uint32_t lr = m.add("lr", TensorKind::Hyper, {});
  uint32_t xw = m.add("xw", TensorKind::Activation, {batch, 2});
  uint32_t lossLocal = m.add("loss_local", TensorKind::Activation, {});
  uint32_t loss = m.add("loss", TensorKind::Activation, {});
  uint32_t gLocal = m.add("g_local", TensorKind::Activation, {2});
  uint32_t g = m.add("g", TensorKind::Activation, {2});
  uint32_t delta = m.add("delta", TensorKind::Activation, {2});
  uint32_t wNew = m.add("w_new", TensorKind::Activation, {2});
  auto all = wholeWorld(world);
  m.instr("mul", {x, w}, {xw});
  m.instr("reduce_mean", {xw}, {lossLocal}, {intsAttr("keepdims", {0})});
  m.instr("all_reduce", {lossLocal}, {loss}, groupAttrs(all, {strAttr("reduce", "mean")}));
  m.instr("reduce_mean", {x}, {gLocal}, {intsAttr("axes", {0}), intsAttr("keepdims", {0})});
  uint32_t reduceGrad =
      m.instr("all_reduce", {gLocal}, {g}, groupAttrs(all, {strAttr("reduce", "mean")}));
  m.instr("mul", {g, lr}, {delta}, {}, {reduceGrad});
  m.instr("sub", {w, delta}, {wNew});
  plan::PlanDesc &d = m.desc();
  d.outputs = {loss};
  d.outputNames = {"loss"};
  d.training = true;
  d.updates = {{wNew, w}};
  d.schedule.lr = 0.125;
  return m.finish();
}

/// A unit of params a [3] (data 1, 2, 3) and b [2, 2] (normal:1), sharded over all `world`
/// ranks; the plan gathers it and outputs the whole flat buffer.
plan::PlanDesc shardedPlan(uint32_t world) {
  uint64_t padded = (7 + world - 1) / world * world;
  PlanMaker m(world);
  uint32_t unit = m.add("block0.flat", TensorKind::Param, {int64_t(padded / world)});
  plan::ShardDesc &s = m.tensor(unit).shard;
  s.unit = "block0";
  for (uint32_t r = 0; r < world; ++r)
    s.groups.push_back(r);
  s.groupSize = world;
  s.paddedNumel = padded;
  s.pieces = {plan::ShardPieceDesc{"a", {3}, 0, 3, f32Bytes({1, 2, 3}), ""},
              plan::ShardPieceDesc{"b", {2, 2}, 3, 4, {}, "normal:1"}};
  uint32_t full = m.add("full", TensorKind::Activation, {int64_t(padded)});
  m.instr("all_gather", {unit}, {full}, groupAttrs(wholeWorld(world)));
  m.desc().outputs = {full};
  return m.finish();
}

/// The same two params, replicated, in a world-1 plan.
plan::PlanDesc replicatedPlan() {
  PlanMaker m(1);
  uint32_t a = m.add("a", TensorKind::Param, {3});
  m.tensor(a).data = f32Bytes({1, 2, 3});
  uint32_t b = m.add("b", TensorKind::Param, {2, 2});
  m.tensor(b).init = "normal:1";
  m.desc().outputs = {a};
  return m.finish();
}

class LaunchTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = freshTempDir("launch");
    // 16 samples of small integers: every sum and mean in the step is exact, so data
    // parallelism must reproduce the world-1 run bit for bit.
    std::vector<float> x;
    for (int i = 0; i < 32; ++i)
      x.push_back(float((i * 5) % 7 - 2));
    std::filesystem::create_directories(dir_ + "/data");
    ASSERT_TRUE(rt::writeNpy(dir_ + "/data/x.npy", {x.data(), rt::DType::F32, {16, 2}}).ok());
  }

  std::string writePlan(const std::string &name, const plan::PlanDesc &desc) {
    std::string path = dir_ + "/" + name;
    writeFile(path, plan::serializePlan(desc));
    return path;
  }

  /// Runs `command` (a shell command line) under timeout 60; returns its exit status and sets
  /// `output` to its stdout and stderr.
  int run(const std::string &command, std::string &output) {
    std::string cmd = "timeout 60 " + command + " 2>&1";
    FILE *pipe = popen(cmd.c_str(), "r");
    if (!pipe)
      return -1;
    output.clear();
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0)
      output.append(buf, n);
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static std::string mpirun(int ranks) {
    return "mpirun -np " + std::to_string(ranks) + " --oversubscribe" +
           (::geteuid() == 0 ? " --allow-run-as-root" : "") + " ";
  }
  static std::string plaitRun() { return std::string(PLAIT_RUN_PATH) + " "; }

  static std::vector<nlohmann::json> readLog(const std::string &path) {
    std::vector<nlohmann::json> records;
    std::ifstream log(path);
    std::string line;
    while (std::getline(log, line))
      records.push_back(nlohmann::json::parse(line));
    return records;
  }
  static std::string readAll(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  std::string dir_;
};

size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

TEST_F(LaunchTest, DataParallelTrainingMatchesWorldOne) {
  std::string plan1 = writePlan("ddp1.plan", ddpPlan(1, 4));
  std::string plan2 = writePlan("ddp2.plan", ddpPlan(2, 2));
  std::string common = " --data " + dir_ + "/data --steps 6";
  std::string out;
  ASSERT_EQ(run(plaitRun() + plan1 + common + " --log-jsonl " + dir_ + "/log1.jsonl" +
                    " --save-weights " + dir_ + "/w1.safetensors",
                out),
            0)
      << out;
  ASSERT_EQ(run(plaitRun() + "--nproc 2 " + plan2 + common + " --log-jsonl " + dir_ +
                    "/log2.jsonl --save-weights " + dir_ + "/w2.safetensors",
                out),
            0)
      << out;
  EXPECT_EQ(count(out, "trained 6 steps on 2 ranks"), 1u) << "rank 0 alone summarises:\n"
                                                            << out;

  std::vector<nlohmann::json> log1 = readLog(dir_ + "/log1.jsonl");
  std::vector<nlohmann::json> log2 = readLog(dir_ + "/log2.jsonl");
  ASSERT_EQ(log1.size(), 6u);
  ASSERT_EQ(log2.size(), 6u);
  // Two all_reduces per step: the loss (4 bytes) and the gradient (8 bytes), over 2 ranks.
  uint64_t allReduce = collectiveBytesSent("all_reduce", 4, 2) +
                       collectiveBytesSent("all_reduce", 8, 2);
  for (size_t s = 0; s < 6; ++s) {
    EXPECT_EQ(log1[s]["loss"], log2[s]["loss"]) << "step " << s + 1;
    EXPECT_EQ(log1[s]["world_size"], 1);
    EXPECT_EQ(log2[s]["world_size"], 2);
    EXPECT_EQ(log1[s]["comm_bytes"]["total"], 0);
    EXPECT_EQ(log2[s]["comm_bytes"],
              nlohmann::json({{"all_reduce", allReduce},
                              {"reduce_scatter", 0},
                              {"all_gather", 0},
                              {"broadcast", 0},
                              {"total", allReduce}}));
  }
  EXPECT_NE(log1[0]["loss"], log1[5]["loss"]) << "the weights must change";
  EXPECT_EQ(readAll(dir_ + "/w1.safetensors"), readAll(dir_ + "/w2.safetensors"));
}

TEST_F(LaunchTest, ShardedWeightsAreSavedUnderTheirParamNames) {
  std::string sharded = writePlan("sharded.plan", shardedPlan(2));
  std::string replicated = writePlan("replicated.plan", replicatedPlan());
  std::string out;
  ASSERT_EQ(run(mpirun(2) + plaitRun() + sharded + " --seed 5 --save-weights " + dir_ +
                    "/sharded.safetensors --output-dir " + dir_ + "/out",
                out),
            0)
      << out;
  EXPECT_EQ(count(out, "ran 1 instructions once on 2 ranks"), 1u) << out;
  ASSERT_EQ(run(plaitRun() + replicated + " --seed 5 --save-weights " + dir_ +
                    "/replicated.safetensors",
                out),
            0)
      << out;
  std::string a = readAll(dir_ + "/sharded.safetensors");
  EXPECT_THAT(a, HasSubstr("\"a\":{\"dtype\":\"F32\",\"shape\":[3]"));
  EXPECT_EQ(a, readAll(dir_ + "/replicated.safetensors"));
  rt::HostTensor full;
  ASSERT_TRUE(rt::readNpy(dir_ + "/out/full.npy", full).ok());
  EXPECT_EQ(full.shape, std::vector<int64_t>{8});
}

TEST_F(LaunchTest, WorldSizeMismatchIsOneLineError) {
  std::string plan2 = writePlan("m.plan", ddpPlan(2, 2));
  std::string data = " --data " + dir_ + "/data";
  std::string out;
  // Without mpirun: one process, no MPI, no waiting for peers.
  EXPECT_EQ(run(plaitRun() + plan2 + data, out), 1);
  EXPECT_EQ(out, "plait-run: " + plan2 + ": compiled for world size 2, launched with 1 rank "
                                         "(use mpirun -np 2 or --nproc 2)\n");
  // --nproc checks before launching anything.
  EXPECT_EQ(run(plaitRun() + plan2 + data + " --nproc 3", out), 1);
  EXPECT_EQ(out, "plait-run: " + plan2 + ": compiled for world size 2, launched with 3 ranks "
                                         "(use mpirun -np 2 or --nproc 2)\n");
  // Under mpirun, each rank finds the mismatch and the job ends with exit 1.
  std::string plan4 = writePlan("m4.plan", ddpPlan(4, 2));
  EXPECT_EQ(run(mpirun(2) + plaitRun() + plan4 + data, out), 1) << out;
  EXPECT_THAT(out, HasSubstr("plait-run: " + plan4 + ": rank "));
  EXPECT_THAT(out, HasSubstr(": compiled for world size 4, launched with 2 ranks (use mpirun "
                             "-np 4 or --nproc 4)\n"));
}

TEST_F(LaunchTest, NprocNeedsMpirunOnPath) {
  std::string plan2 = writePlan("m.plan", ddpPlan(2, 2));
  std::string out;
  EXPECT_EQ(run("env PATH=/nonexistent " + plaitRun() + plan2 + " --nproc=2", out), 1);
  EXPECT_EQ(out, "plait-run: --nproc 2: mpirun not found on PATH (install openmpi-bin, or "
                 "start the ranks yourself with mpirun -np 2)\n");
}

TEST_F(LaunchTest, ErrorOnOneRankEndsTheJob) {
  // Only rank 0 opens the log: it fails while rank 1 goes on into the first collective.
  std::string plan2 = writePlan("m.plan", ddpPlan(2, 2));
  std::string out;
  EXPECT_EQ(run(mpirun(2) + plaitRun() + plan2 + " --data " + dir_ +
                    "/data --log-jsonl /nonexistent/dir/log.jsonl",
                out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("plait-run: " + plan2 + ": rank 0: --log-jsonl "
                             "/nonexistent/dir/log.jsonl: cannot open for writing\n"));
}

TEST_F(LaunchTest, DyingRankEndsTheJob) {
  std::string plan2 = writePlan("m.plan", ddpPlan(2, 2));
  for (const char *hook : {"PLAIT_TEST_EXIT_RANK=1 PLAIT_TEST_EXIT_STEP=3",
                           "PLAIT_TEST_EXIT_RANK=0 PLAIT_TEST_EXIT_STEP=1"}) {
    std::string out;
    int status = run(std::string("env ") + hook + " " + mpirun(2) + plaitRun() + plan2 +
                         " --data " + dir_ + "/data --steps 5",
                     out);
    EXPECT_NE(status, 0) << hook << "\n" << out;
    EXPECT_NE(status, kTimedOut) << hook << ": the job hung\n" << out;
  }
}

} // namespace
} // namespace plait::testing
