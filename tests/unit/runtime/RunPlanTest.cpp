// The plait-run driver (runPlan) in process, and the plait-run binary's exit codes.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "PlanFixtures.h"
#include "runtime/RunPlan.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/io/Npy.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class RunPlanTest : public ::testing::Test {
protected:
  void SetUp() override {
    registerTestKernels();
    dir_ = freshTempDir("run");
    planPath_ = dir_ + "/model.plan";
    writeFile(planPath_, withChecksum(serializeRaw(validRawPlan())));
    xPath_ = dir_ + "/x.npy";
    std::vector<float> x = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE(rt::writeNpy(xPath_, {x.data(), rt::DType::F32, {2, 3}}).ok());
  }

  rt::RunOptions options() {
    rt::RunOptions o;
    o.planPath = planPath_;
    o.inputs = {{"x", xPath_}};
    return o;
  }
  std::string runError(const rt::RunOptions &o) {
    std::string summary;
    rt::Status s = rt::runPlan(o, summary);
    return s.ok() ? "" : s.message();
  }

  std::string dir_, planPath_, xPath_;
};

TEST_F(RunPlanTest, RunsAndWritesOutputs) {
  rt::RunOptions o = options();
  o.outputDir = dir_ + "/out/nested";
  o.logJsonl = dir_ + "/log.jsonl";
  std::string summary;
  rt::Status s = rt::runPlan(o, summary);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_THAT(summary, StartsWith(planPath_ + ": ran 2 instructions once in "));
  EXPECT_THAT(summary, HasSubstr("outputs: y f32 [2, 3] -> " + o.outputDir + "/y.npy, w f32 "
                                 "[2, 3] -> " + o.outputDir + "/w.npy"));
  // One summary line, then the measured memory and time against the plan's (RunMonitor).
  std::string first = summary.substr(0, summary.find('\n'));
  EXPECT_THAT(first, HasSubstr("outputs: y f32"));
  EXPECT_THAT(summary.substr(first.size()),
              ::testing::MatchesRegex("\nmemory \\(rank 0\\): arena high water [0-9,]+ bytes.*"
                                      "\nstep time: median [0-9.]+ ms over 1 step; no prediction "
                                      "\\(the plan's report has no predicted_step_ms\\)"
                                      "\nthreads: [0-9]+ per rank for the CPU kernels .*"));

  rt::HostTensor y;
  ASSERT_TRUE(rt::readNpy(o.outputDir + "/y.npy", y).ok());
  EXPECT_EQ(y.bytes, f32Bytes({3, 5, 7, 9, 11, 13}));

  std::ifstream log(o.logJsonl);
  std::string line;
  ASSERT_TRUE(std::getline(log, line));
  nlohmann::json record = nlohmann::json::parse(line);
  EXPECT_EQ(record["step"], 1);
  EXPECT_TRUE(record["loss"].is_null()) << "the first output is not a scalar";
  EXPECT_EQ(record["arena_bytes"], 128);
  EXPECT_EQ(record["comm_bytes"], nlohmann::json({{"all_reduce", 0},
                                                   {"reduce_scatter", 0},
                                                   {"all_gather", 0},
                                                   {"broadcast", 0},
                                                   {"total", 0}}));
  EXPECT_EQ(record["world_size"], 1);
  EXPECT_TRUE(record["step_ms"].is_number());
  EXPECT_TRUE(record["samples_per_s"].is_number());
  EXPECT_FALSE(std::getline(log, line));
}

TEST_F(RunPlanTest, ScalarOutputsAreShownAndLoggedAsLoss) {
  RawPlan raw = validRawPlan();
  RawTensor loss;
  loss.name = "loss";
  loss.kind = 3; // constant
  loss.offset = 120;
  loss.bytes = 4;
  loss.data = 1;
  raw.tensors.push_back(loss);
  raw.buffers.push_back(f32Bytes({0.75f}));
  raw.outputs = {5, 4};
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  rt::RunOptions o = options();
  o.logJsonl = dir_ + "/log.jsonl";
  std::string summary;
  ASSERT_TRUE(rt::runPlan(o, summary).ok());
  EXPECT_THAT(summary, HasSubstr("outputs: loss f32 [] = 0.75, y f32 [2, 3]"));
  std::ifstream log(o.logJsonl);
  std::string line;
  ASSERT_TRUE(std::getline(log, line));
  EXPECT_EQ(nlohmann::json::parse(line)["loss"], 0.75);
}

TEST_F(RunPlanTest, OutputFileNamesAreSanitised) {
  EXPECT_EQ(rt::outputFileName("/fc1/Gemm_output_0", 0), "_fc1_Gemm_output_0.npy");
  EXPECT_EQ(rt::outputFileName("logits.1-a", 0), "logits.1-a.npy");
  EXPECT_EQ(rt::outputFileName("a b:c", 0), "a_b_c.npy");
  EXPECT_EQ(rt::outputFileName("", 3), "output_3.npy");
  EXPECT_EQ(rt::outputFileName("..", 1), "output_1.npy");
}

TEST_F(RunPlanTest, OutputsWhoseNamesCollideAreBothWritten) {
  RawPlan raw = validRawPlan();
  raw.tensors[4].name = "a/b";
  raw.tensors[2].name = "a:b";
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  rt::RunOptions o = options();
  o.outputDir = dir_ + "/out";
  std::string summary;
  ASSERT_TRUE(rt::runPlan(o, summary).ok());
  EXPECT_TRUE(std::filesystem::exists(o.outputDir + "/a_b.npy"));
  EXPECT_TRUE(std::filesystem::exists(o.outputDir + "/a_b_1.npy"));
}

TEST_F(RunPlanTest, RejectsBadInputBindings) {
  rt::RunOptions o = options();
  o.inputs = {{"x", xPath_}, {"z", xPath_}};
  EXPECT_EQ(runError(o), "--input z: 'z' is not an input of " + planPath_ + " (inputs: x)");
  o.inputs = {{"x", xPath_}, {"x", xPath_}};
  EXPECT_EQ(runError(o), "--input x: given more than once");
  o.inputs = {};
  EXPECT_EQ(runError(o), "input 'x' (f32 [2, 3]) not given; pass --input x=FILE.npy");

  std::string wrongShape = dir_ + "/wrong_shape.npy";
  std::vector<float> v(6);
  ASSERT_TRUE(rt::writeNpy(wrongShape, {v.data(), rt::DType::F32, {3, 2}}).ok());
  o.inputs = {{"x", wrongShape}};
  EXPECT_EQ(runError(o), "--input x: expected f32 [2, 3], got f32 [3, 2] from " + wrongShape);

  std::string wrongType = dir_ + "/wrong_type.npy";
  std::vector<double> d(6);
  ASSERT_TRUE(rt::writeNpy(wrongType, {d.data(), rt::DType::F64, {2, 3}}).ok());
  o.inputs = {{"x", wrongType}};
  EXPECT_EQ(runError(o), "--input x: expected f32 [2, 3], got f64 [2, 3] from " + wrongType);

  o.inputs = {{"x", dir_ + "/missing.npy"}};
  EXPECT_EQ(runError(o), dir_ + "/missing.npy: no such file");
}

TEST_F(RunPlanTest, ForwardPlanRunsSeveralSteps) {
  rt::RunOptions o = options();
  o.steps = 3;
  o.logJsonl = dir_ + "/log.jsonl";
  std::string summary;
  rt::Status s = rt::runPlan(o, summary);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_THAT(summary, HasSubstr("ran 2 instructions x 3 steps"));
  std::ifstream log(o.logJsonl);
  std::string line;
  int lines = 0;
  while (std::getline(log, line))
    EXPECT_EQ(nlohmann::json::parse(line)["step"], ++lines);
  EXPECT_EQ(lines, 3);
}

TEST_F(RunPlanTest, RejectsBadOptionsAndWorldSizeMismatch) {
  rt::RunOptions o = options();
  o.steps = 0;
  EXPECT_EQ(runError(o), "--steps must be at least 1, got 0");
  o = options();
  o.nproc = 0;
  EXPECT_EQ(runError(o), "--nproc must be at least 1, got 0");
  o = options();
  o.nproc = 2;
  EXPECT_EQ(runError(o), "runPlan runs one rank, not --nproc 2"); // relaunchUnderMpirun's job
  o = options();
  o.dataDir = dir_;
  EXPECT_EQ(runError(o), "give the batch either with --data DIR or with --input, not both");
  o = options();
  o.threads = -1;
  EXPECT_EQ(runError(o), "--threads must be between 1 and 256 (0: the default), got -1");
  o.threads = 257;
  EXPECT_EQ(runError(o), "--threads must be between 1 and 256 (0: the default), got 257");

  RawPlan raw = validRawPlan();
  raw.worldSize = 2;
  raw.arenaBytes = {128, 128};
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  // Not started by mpirun: one rank, so the plan cannot run (and MPI is never touched).
  EXPECT_EQ(runError(options()), planPath_ + ": compiled for world size 2, launched with 1 rank "
                                             "(use mpirun -np 2 or --nproc 2)");
}

// A plan runs on the device it was compiled for: this runtime runs cpu plans only.
TEST_F(RunPlanTest, RefusesPlansForOtherDevices) {
  RawPlan raw = validRawPlan();
  raw.device = "tpu";
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  EXPECT_EQ(runError(options()),
            planPath_ + ": compiled for --device tpu, a device this plait-run does not know");
  raw.device = "cuda";
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  // No CUDA device (CUDA's reason); on a machine with one the CUDA backend takes the plan
  // (tests/unit/cuda and tests/gpu/run.sh cover that side).
  std::vector<rt::CudaDeviceInfo> devices;
  if (!rt::listCudaDevices(devices).ok())
    EXPECT_THAT(runError(options()),
                StartsWith(planPath_ + ": compiled for --device cuda: no CUDA device ("));
  raw.device = "cpu";
  writeFile(planPath_, withChecksum(serializeRaw(raw)));
  EXPECT_EQ(runError(options()), "");
}

TEST_F(RunPlanTest, ReportsPlanErrors) {
  writeFile(planPath_, std::string("not a plan at all"));
  EXPECT_THAT(runError(options()), HasSubstr(planPath_ + ": not a plait plan"));
}

// The binary: exit codes and one-line messages. It has no test kernels, so it runs a plan
// whose output is its input (no instructions).
class PlaitRunBinaryTest : public RunPlanTest {
protected:
  // Runs plait-run with `args` (and the environment assignments `env`, as a shell reads them);
  // returns the exit code, sets `output` to stdout + stderr.
  int runTool(const std::string &args, std::string &output, const std::string &env = "") {
    std::string cmd = env + (env.empty() ? "" : " ") + std::string(PLAIT_RUN_PATH) + " " + args +
                      " 2>&1";
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
  void writeIdentityPlan(const std::string &device = "cpu") {
    RawPlan raw;
    raw.device = device;
    raw.arenaBytes = {64};
    RawTensor x;
    x.name = "x";
    x.kind = 1;
    x.shape = {2, 3};
    x.bytes = 24;
    raw.tensors = {x};
    raw.inputs = {0};
    raw.outputs = {0};
    writeFile(planPath_, withChecksum(serializeRaw(raw)));
  }
};

TEST_F(PlaitRunBinaryTest, RunsIdentityPlan) {
  writeIdentityPlan();
  std::string out;
  EXPECT_EQ(runTool(planPath_ + " --input x=" + xPath_ + " --output-dir " + dir_ + "/out --seed 3"
                    " --steps 1",
                    out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("ran 0 instructions"));
  rt::HostTensor y;
  ASSERT_TRUE(rt::readNpy(dir_ + "/out/x.npy", y).ok());
  EXPECT_EQ(y.bytes, f32Bytes({1, 2, 3, 4, 5, 6}));
}

TEST_F(PlaitRunBinaryTest, UserErrorsExitOneWithOneLine) {
  writeIdentityPlan();
  struct Case {
    std::string args, message;
  };
  for (const Case &c : {
           Case{"/nonexistent.plan", "plait-run: /nonexistent.plan: no such file\n"},
           Case{planPath_, "plait-run: input 'x' (f32 [2, 3]) not given; pass --input "
                           "x=FILE.npy\n"},
           Case{planPath_ + " --input x", "plait-run: --input 'x': expected NAME=FILE\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --nproc 2",
                "plait-run: " + planPath_ + ": compiled for world size 1, launched with 2 ranks "
                "(use mpirun -np 1 or --nproc 1)\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --trace /nonexistent/t.json",
                "plait-run: --trace /nonexistent/t.json: cannot open for writing\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --resume",
                "plait-run: --resume needs --checkpoint-dir DIR\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --checkpoint-every 2",
                "plait-run: --checkpoint-every needs --checkpoint-dir DIR\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --checkpoint-dir " + dir_ + "/ck",
                "plait-run: " + planPath_ + ": checkpoints hold a training run's params and "
                "optimizer state; this plan does not train\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --timeout 0",
                "plait-run: --timeout must be positive, got 0\n"},
           Case{planPath_ + " --input x=" + xPath_ + " --max-restarts 2",
                "plait-run: --max-restarts needs --checkpoint-dir DIR to restart from\n"},
       }) {
    std::string out;
    EXPECT_EQ(runTool(c.args, out), 1) << c.args;
    EXPECT_EQ(out, c.message) << c.args;
  }
  std::string out;
  EXPECT_EQ(runTool(planPath_ + " --no-such-flag", out), 1);
  EXPECT_THAT(out, StartsWith("plait-run: "));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(runTool("", out), 1);
  EXPECT_EQ(runTool(planPath_ + " --steps abc", out), 1);
}

// CUDA's libraries are opened only when CUDA is asked for (runtime/cuda/CudaBackend.h): a CPU
// run never loads libplait-cuda.so; --list-devices does.
TEST_F(PlaitRunBinaryTest, OpensTheCudaBackendOnlyWhenAskedForCuda) {
  writeIdentityPlan();
  std::string out;
  ASSERT_EQ(runTool(planPath_ + " --input x=" + xPath_, out, "LD_DEBUG=files"), 0) << out;
  EXPECT_THAT(out, HasSubstr("libplait-runtime.so")); // LD_DEBUG did list the files
  EXPECT_THAT(out, Not(HasSubstr("libplait-cuda.so")));
  EXPECT_THAT(out, Not(HasSubstr("libcudart")));
  if (!rt::cudaBackendBuilt())
    return;
  ASSERT_EQ(runTool("--list-devices", out, "LD_DEBUG=files"), 0) << out;
  EXPECT_THAT(out, HasSubstr("libplait-cuda.so"));
}

// Where the backend cannot be opened (here: not beside the runtime), there is no CUDA device, and
// dlopen's reason is the one line a CUDA plan is refused with.
TEST_F(PlaitRunBinaryTest, WithoutTheCudaBackendThereIsNoCudaDevice) {
  if (!rt::cudaBackendBuilt())
    GTEST_SKIP() << "built without the CUDA toolkit";
  std::string lib = dir_ + "/lib";
  std::filesystem::create_directories(lib);
  std::filesystem::copy_file(PLAIT_RUNTIME_LIBRARY, lib + "/libplait-runtime.so");
  std::string env = "LD_LIBRARY_PATH=" + lib;
  std::string reason = "cannot load the CUDA backend: " + lib +
                       "/libplait-cuda.so: cannot open shared object file: No such file or "
                       "directory";
  std::string out;
  EXPECT_EQ(runTool("--list-devices", out, env), 0) << out;
  EXPECT_THAT(out, HasSubstr("\ncuda: no CUDA device: " + reason + "\n"));
  writeIdentityPlan("cuda");
  EXPECT_EQ(runTool(planPath_ + " --input x=" + xPath_, out, env), 1);
  EXPECT_EQ(out, "plait-run: " + planPath_ + ": compiled for --device cuda: no CUDA device (" +
                     reason + ")\n");
}

TEST_F(PlaitRunBinaryTest, HelpExitsZero) {
  std::string out;
  EXPECT_EQ(runTool("--help", out), 0);
  EXPECT_THAT(out, HasSubstr("--output-dir"));
}

} // namespace
} // namespace plait::testing
