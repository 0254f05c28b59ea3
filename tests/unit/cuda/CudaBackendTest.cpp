// The CUDA backend's host side, on a machine without a GPU: plans are bound and checked
// (CudaExecutor::checkPlan runs every kernel's operand checks, no device needed), GEMMs are
// planned, and without a device plait-run refuses a cuda plan in one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "PlanMaker.h"
#include "runtime/PlanLoader.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaDnn.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/CudaGemmPlan.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/CudaKernelSupport.h"
#include "runtime/cuda/kernels/IndexMath.h"
#include "runtime/cuda/kernels/LaunchGeometry.h"
#include "tests/unit/cuda/CudaTestSupport.h"

namespace plait {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::PlanMaker;

rt::AttrValue ints(std::vector<int64_t> v) {
  rt::AttrValue a;
  a.ints = std::move(v);
  return a;
}

rt::Plan loadBytes(const plan::PlanDesc &desc) {
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(desc), "m.plan", plan);
  EXPECT_TRUE(s.ok()) << s.message();
  return plan;
}

/// A plan of one f32 instruction `op` from input x (`inShape`) to output y (`outShape`).
rt::Plan oneOpPlan(const std::string &op, const std::vector<int64_t> &inShape,
                   const std::vector<int64_t> &outShape,
                   const std::vector<plan::AttrDesc> &attrs = {}, const char *device = "cuda") {
  PlanMaker m;
  uint32_t x = m.add("x", fb::TensorKind::Input, inShape);
  uint32_t y = m.add("y", fb::TensorKind::Activation, outShape);
  m.instr(op, {x}, {y}, attrs);
  plan::PlanDesc desc = m.finish();
  desc.device = device;
  desc.outputs = {y};
  return loadBytes(desc);
}

//===--- the samples' plans ---------------------------------------------------------------===//

#ifdef PLAIT_COMPILE_PATH
/// Every sample compiled for --device cuda (fp32 and bf16-mixed at world size 1; the GPT's
/// DDP plan at world size 2; the other placements and plan-shaping options): 16 plans,
/// written into `dir`. Returns their paths; a failed compile is a test failure.
std::vector<std::string> compileSamplePlans(const fs::path &dir) {
  std::vector<std::string> plans;
  auto compile = [&](const std::string &sample, const std::string &flags,
                     const std::string &name) {
    std::string out = (dir / (name + ".plan")).string();
    std::string command = std::string(PLAIT_COMPILE_PATH) + " " + PLAIT_SOURCE_DIR +
                          "/samples/" + sample + "/" + sample + ".onnx --train --device cuda " +
                          flags + " -o " + out + " > " + out + ".log 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    plans.push_back(out);
  };
  const std::map<std::string, std::string> optimizer = {
      {"mlp", "--optimizer sgd --lr 0.05 --momentum 0.9"},
      {"cnn", "--optimizer sgd --lr 0.05 --momentum 0.9"},
      {"gpt", "--optimizer adamw --lr 3e-3"}};
  for (const auto &[sample, flags] : optimizer)
    for (const char *precision : {"fp32", "bf16-mixed"})
      compile(sample, flags + " --precision " + precision, sample + "-" + precision);
  compile("gpt", optimizer.at("gpt") + " --world-size 2 --strategy ddp", "gpt-ddp2");
  compile("gpt", optimizer.at("gpt") + " --world-size 2 --strategy fsdp", "gpt-fsdp2");
  // The other placements and plan-shaping options: each brings ops or layouts of its own.
  compile("mlp", optimizer.at("mlp") + " --world-size 2 --strategy zero1", "mlp-zero1");
  compile("cnn", optimizer.at("cnn") + " --world-size 2 --strategy zero2", "cnn-zero2");
  compile("gpt", optimizer.at("gpt") + " --world-size 4 --strategy hsdp:2", "gpt-hsdp");
  compile("gpt", optimizer.at("gpt") + " --world-size 2 --strategy zero3 --precision bf16-mixed",
          "gpt-zero3-bf16");
  compile("gpt", optimizer.at("gpt") + " --clip-grad-norm 1.0 --micro-batches 2", "gpt-clip-mb");
  compile("gpt", optimizer.at("gpt") + " --recompute all", "gpt-recompute");
  compile("gpt", optimizer.at("gpt") + " --no-fusion", "gpt-nofusion");
  compile("mlp", "--optimizer adamw --lr 3e-3 --no-fusion", "mlp-adamw-nofusion");
  return plans;
}

/// ctest's fixture cuda.sample_plans: compiles the plans once into $PLAIT_SAMPLE_PLANS for
/// every SamplePlans test of the run (each ctest test is a process of its own, so a suite
/// set-up would compile them once per test).
TEST(SamplePlansFixture, Compile) {
  const char *dir = std::getenv("PLAIT_SAMPLE_PLANS");
  if (!dir)
    GTEST_SKIP() << "ctest's fixture: writes the plans into $PLAIT_SAMPLE_PLANS";
  fs::create_directories(dir);
  for (const auto &entry : fs::directory_iterator(dir)) // no plan of an older list stays
    if (entry.path().extension() == ".plan")
      fs::remove(entry.path());
  compileSamplePlans(dir);
}

/// The samples' plans: those of the fixture when ctest runs the test ($PLAIT_SAMPLE_PLANS),
/// else compiled here, once for the suite. `scratch_` is this process's own folder.
class SamplePlans : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    scratch_ = fs::temp_directory_path() / ("plait-cuda-plans-" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
    if (const char *shared = std::getenv("PLAIT_SAMPLE_PLANS")) {
      dir_ = shared;
      for (const auto &entry : fs::directory_iterator(dir_))
        if (entry.path().extension() == ".plan")
          plans_.push_back(entry.path().string());
      std::sort(plans_.begin(), plans_.end());
    } else {
      dir_ = scratch_;
      plans_ = compileSamplePlans(dir_);
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
  static fs::path dir_, scratch_;
  static std::vector<std::string> plans_;
};
fs::path SamplePlans::dir_;
fs::path SamplePlans::scratch_;
std::vector<std::string> SamplePlans::plans_;

// What create() checks before touching a device, for every rank of every sample's plan:
// each op has a CUDA kernel, and each kernel takes the instruction's operands.
TEST_F(SamplePlans, EveryInstructionHasACudaKernelThatTakesItsOperands) {
  ASSERT_EQ(plans_.size(), 16u);
  for (const std::string &path : plans_) {
    rt::Plan plan;
    rt::Status loaded = rt::loadPlan(path, plan);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    EXPECT_EQ(plan.device, "cuda");
    for (uint32_t rank = 0; rank < plan.worldSize; ++rank) {
      rt::Status checked = rt::CudaExecutor::checkPlan(plan, rank);
      EXPECT_TRUE(checked.ok()) << path << " rank " << rank << ": " << checked.message();
    }
  }
}

// ONNX ops imported as other plait ops, in the models of their PyTorch parity tests: the
// recurrent layers unrolled (tests/e2e/recurrent_lengths_parity.py: a bidirectional LSTM with
// peepholes, GRU and RNN, batch first, with runtime sequence_lens: GEMMs with a state operand,
// gate slices, masks of less, where and cast, concats), GridSample (every mode and padding:
// gathers at computed positions, clamps, rounds, comparisons) and TopK (top_k, and a gather of
// the values, its gradient a scatter-add), 3-D convolutions and pooling (grouped conv2d,
// conv2d_grad_input and 2-D pools over depth-stacked views; pads, strided slices, concats), a
// training-mode Dropout (dropout_mask reading the step), stochastic depth with input noise
// (tests/e2e/drop_path_parity.py: random's uniform and normal draws, less, casts), and MaxPool's
// Indices with MaxUnpool (tests/e2e/max_unpool_parity.py: a concat, gathers, an argmax, adds,
// a gather_grad). Every
// instruction of their training steps, fused and unfused, has a CUDA kernel that takes its
// operands.
TEST(CudaKernels, ImportedOpsModelsHaveCudaKernels) {
  fs::path dir = fs::temp_directory_path() / ("plait-cuda-imported-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string e2e = std::string(PLAIT_PYTHON) + " " + PLAIT_SOURCE_DIR + "/tests/e2e/";
  const std::pair<std::string, std::string> models[] = {
      {"recurrent", e2e + "recurrent_lengths_parity.py --build . --write-model "},
      {"grid_sample", e2e + "onnx_op_train_parity.py --build . --model grid_sample "
                            "--write-model "},
      {"topk", e2e + "onnx_op_train_parity.py --build . --model topk --write-model "},
      {"volumetric", e2e + "onnx_op_train_parity.py --build . --model volumetric "
                           "--write-model "},
      {"dropout", e2e + "dropout_parity.py --build . --write-model "},
      {"drop_path", e2e + "drop_path_parity.py --build . --write-model "},
      {"max_unpool", e2e + "max_unpool_parity.py --build . --write-model "}};
  for (const auto &[name, writer] : models) {
    fs::path model = dir / (name + ".onnx");
    std::string write = writer + model.string();
    ASSERT_EQ(std::system(write.c_str()), 0) << write;
    for (const char *flags : {"--train", "--train --no-fusion"}) { // forward ops included
      std::string out = (dir / (name + ".plan")).string();
      std::string command = std::string(PLAIT_COMPILE_PATH) + " " + model.string() +
                            " --device cuda " + flags + " -o " + out + " > " + out +
                            ".log 2>&1";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      rt::Plan plan;
      rt::Status loaded = rt::loadPlan(out, plan);
      ASSERT_TRUE(loaded.ok()) << loaded.message();
      rt::Status checked = rt::CudaExecutor::checkPlan(plan);
      EXPECT_TRUE(checked.ok()) << name << " " << flags << ": " << checked.message();
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Every convolution of the CNN's plans (forward and both gradients) as cuDNN is given it:
// the descriptors build (no device needed) and cuDNN computes the plan's output shape.
TEST_F(SamplePlans, CnnConvolutionsDescribeForCudnn) {
  int convolutions = 0;
  for (const std::string &path : plans_) {
    if (fs::path(path).filename().string().rfind("cnn", 0) != 0)
      continue;
    rt::Plan plan;
    ASSERT_TRUE(rt::loadPlan(path, plan).ok());
    for (const rt::PlanInstr &in : plan.instrs) {
      const std::string &op = plan.kernels[in.kernel];
      auto view = [&](uint32_t t) {
        return rt::TensorView{nullptr, plan.tensors[t].dtype, plan.tensors[t].shape};
      };
      rt::TensorView x, w, y;
      if (op == "conv2d")
        x = view(in.inputs[0]), w = view(in.inputs[1]), y = view(in.outputs[0]);
      else if (op == "conv2d_grad_input")
        x = view(in.outputs[0]), w = view(in.inputs[1]), y = view(in.inputs[0]);
      else if (op == "conv2d_grad_weight")
        x = view(in.inputs[0]), w = view(in.outputs[0]), y = view(in.inputs[1]);
      else
        continue;
      rt::cpu::ConvShape shape;
      ASSERT_TRUE(rt::cpu::planConvShape(op, in.attrs, x, w, y, "output", shape).ok());
      rt::Status described = rt::describeConvForCudnn(shape, x.dtype, op == "conv2d" &&
                                                                          in.inputs.size() > 2);
      EXPECT_TRUE(described.ok()) << path << ": " << in.name << ": " << described.message();
      ++convolutions;
    }
  }
  EXPECT_GE(convolutions, 6); // forward and two gradients, fp32 and bf16-mixed at least
}

// The fp32 plans carry the generated fused kernels the CUDA backend launches from the fatbin.
TEST_F(SamplePlans, Fp32PlansCarryTheirFatbin) {
  for (const std::string &path : plans_) {
    rt::Plan plan;
    ASSERT_TRUE(rt::loadPlan(path, plan).ok());
    bool fused = false;
    for (const rt::PlanInstr &in : plan.instrs)
      if (!in.isCollective && plan.kernels[in.kernel] == "fused_elementwise") {
        fused = true;
        EXPECT_TRUE(in.attrs.has("cuda_symbol")) << path << ": " << in.name;
      }
    if (fused)
      EXPECT_FALSE(plan.generatedCuda.empty()) << path;
  }
}

/// Runs plait-run with `args` (stderr too); returns its exit code and output.
int plaitRun(const std::string &args, std::string &output) {
  std::string command = std::string(PLAIT_RUN_PATH) + " " + args + " 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return -1;
  output.clear();
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string sampleInputs(const std::string &sample) {
  std::string dir = std::string(PLAIT_SOURCE_DIR) + "/samples/" + sample + "/inputs/";
  return sample == "gpt" ? " --input idx=" + dir + "idx.npy --input targets=" + dir + "targets.npy"
                         : " --input x=" + dir + "x.npy --input y=" + dir + "y.npy";
}

// Without a GPU, plait-run refuses a cuda plan in one line naming the plan, with exit 1,
// also under --nproc (checked before mpirun starts).
TEST_F(SamplePlans, PlaitRunWithoutADeviceRefusesInOneLine) {
  if (haveCudaDevice())
    GTEST_SKIP() << "a CUDA device is present (tests/gpu/run.sh runs the plans)";
  for (const std::string name : {"mlp-fp32", "cnn-bf16-mixed", "gpt-ddp2"}) {
    std::string plan = (dir_ / (name + ".plan")).string();
    std::string sample = name.substr(0, 3), output;
    std::string nproc = name == "gpt-ddp2" ? " --nproc 2" : "";
    EXPECT_EQ(plaitRun(plan + nproc + " --steps 1" + sampleInputs(sample), output), 1) << output;
    EXPECT_THAT(output, StartsWith("plait-run: " + plan + ": compiled for --device cuda: no "
                                   "CUDA device ("));
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  }
}

// --kernel-times times CUDA kernels: with a CPU plan it is a one-line error.
TEST_F(SamplePlans, KernelTimesNeedACudaPlan) {
  std::string plan = (scratch_ / "mlp-cpu.plan").string(), output;
  std::string command = std::string(PLAIT_COMPILE_PATH) + " " + PLAIT_SOURCE_DIR +
                        "/samples/mlp/mlp.onnx -o " + plan + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(plaitRun(plan + " --kernel-times " + (scratch_ / "k.json").string() +
                         sampleInputs("mlp"),
                     output),
            1);
  EXPECT_EQ(output, "plait-run: " + plan + ": --kernel-times times CUDA kernels; this plan was "
                    "compiled for --device cpu\n");
}
#endif

//===--- kernels the backend has and lacks ------------------------------------------------===//

// Every CPU kernel has a CUDA counterpart (some for fewer dtypes: those refuse the plan at
// create(), naming the dtype). A kernel added to the CPU alone fails here until it is listed.
TEST(CudaKernels, EveryCpuKernelHasACudaKernel) {
  std::vector<std::string> cuda = rt::cudaKernelNames();
  std::set<std::string> have(cuda.begin(), cuda.end()), missing;
  for (const std::string &name : rt::kernelNames())
    if (!have.count(name))
      missing.insert(name);
  missing.erase("cpu_only_op"); // AnOpWithoutACudaKernelIsRefusedBeforeAnythingRuns's
  EXPECT_EQ(missing, std::set<std::string>{});
  for (const std::string &name : cuda) // no CUDA kernel for an op the CPU lacks
    EXPECT_NE(rt::findKernel(name), nullptr) << name;
}

rt::Status cpuOnlyKernel(const rt::KernelCall &) { return {}; }

TEST(CudaKernels, AnOpWithoutACudaKernelIsRefusedBeforeAnythingRuns) {
  // An op the CPU backend has and the CUDA backend lacks (registered here: every real CPU
  // kernel has a CUDA one).
  rt::registerKernel("cpu_only_op", &cpuOnlyKernel);
  PlanMaker m;
  uint32_t x = m.add("x", fb::TensorKind::Input, {4, 4});
  uint32_t y = m.add("y", fb::TensorKind::Activation, {4, 4});
  m.instr("cpu_only_op", {x}, {y});
  plan::PlanDesc desc = m.finish();
  desc.device = "cuda";
  desc.outputs = {y};
  rt::Plan plan = loadBytes(desc);
  rt::Status s = rt::CudaExecutor::checkPlan(plan);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("m.plan: instruction 0 ("));
  EXPECT_THAT(s.message(), HasSubstr("): op 'cpu_only_op' has no CUDA kernel"));
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  // create() says the same, before it looks for a device.
  std::unique_ptr<rt::CudaExecutor> exec;
  EXPECT_EQ(rt::CudaExecutor::create(plan, {}, exec).message(), s.message());
}

TEST(CudaKernels, OperandsAKernelCannotTakeAreRefusedAtCreate) {
  PlanMaker m;
  uint32_t a = m.add("a", fb::TensorKind::Input, {4, 3});
  uint32_t b = m.add("b", fb::TensorKind::Input, {4, 5});
  uint32_t c = m.add("c", fb::TensorKind::Activation, {4, 5});
  m.instr("matmul", {a, b}, {c});
  plan::PlanDesc desc = m.finish();
  desc.device = "cuda";
  desc.outputs = {c};
  rt::Plan plan = loadBytes(desc);
  EXPECT_THAT(rt::CudaExecutor::checkPlan(plan).message(),
              HasSubstr(", kernel matmul): matmul: contracting dimensions differ: [4, 3] times "
                        "[4, 5]"));
}

TEST(CudaKernels, IntegerMatmulHasNoCudaKernel) {
  PlanMaker m;
  uint32_t a = m.add("a", fb::TensorKind::Input, {2, 3}, fb::DType::I64);
  uint32_t b = m.add("b", fb::TensorKind::Input, {3, 2}, fb::DType::I64);
  uint32_t c = m.add("c", fb::TensorKind::Activation, {2, 2}, fb::DType::I64);
  m.instr("matmul", {a, b}, {c});
  plan::PlanDesc desc = m.finish();
  desc.device = "cuda";
  desc.outputs = {c};
  rt::Plan plan = loadBytes(desc);
  EXPECT_THAT(rt::CudaExecutor::checkPlan(plan).message(),
              HasSubstr("matmul: dtype i64 has no CUDA kernel"));
}

/// A cuda plan of matmul(x [2, 3, 4], w [5, 4] read transposed, bias `biasShape`) -> [2, 3, 5].
rt::Plan biasedMatmulPlan(const std::vector<int64_t> &biasShape) {
  PlanMaker m;
  uint32_t x = m.add("x", fb::TensorKind::Input, {2, 3, 4});
  uint32_t w = m.add("w", fb::TensorKind::Input, {5, 4});
  uint32_t bias = m.add("bias", fb::TensorKind::Input, biasShape);
  uint32_t y = m.add("y", fb::TensorKind::Activation, {2, 3, 5});
  m.instr("matmul", {x, w, bias}, {y}, {testing::intsAttr("transpose_rhs", {1})});
  plan::PlanDesc desc = m.finish();
  desc.device = "cuda";
  desc.outputs = {y};
  return loadBytes(desc);
}

// matmul's bias (plait-fuse-gemm-epilogue): checked as the CPU checks it; on a device, one
// GEMM with cuBLASLt's bias epilogue (or, where no algorithm takes it, the bias rows written
// first) against the product plus the bias in double.
TEST(CudaKernels, MatmulWithABiasIsCheckedAndAddsItsBias) {
  EXPECT_TRUE(rt::CudaExecutor::checkPlan(biasedMatmulPlan({5})).ok());
  EXPECT_THAT(rt::CudaExecutor::checkPlan(biasedMatmulPlan({4})).message(),
              HasSubstr("matmul: bias [4] is not a vector of the result [2, 3, 5]'s last "
                        "dimension"));
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  rt::Plan plan = biasedMatmulPlan({5});
  std::unique_ptr<rt::CudaExecutor> exec;
  rt::Status s = rt::CudaExecutor::create(plan, {}, exec);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<float> x(24), w(20), bias(5);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.125f * float(i) - 1;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.25f * float(i) - 2;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = 0.5f * float(i) - 1;
  ASSERT_TRUE(exec->setInput(0, rt::DType::F32, {2, 3, 4}, x.data()).ok());
  ASSERT_TRUE(exec->setInput(1, rt::DType::F32, {5, 4}, w.data()).ok());
  ASSERT_TRUE(exec->setInput(2, rt::DType::F32, {5}, bias.data()).ok());
  for (int step = 0; step < 2; ++step) { // the second replays the prepared descriptors
    s = exec->run();
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(exec->readOutput(0, bytes).ok());
    ASSERT_EQ(bytes.size(), 30 * sizeof(float));
    std::vector<float> y(30);
    std::memcpy(y.data(), bytes.data(), bytes.size());
    for (int r = 0; r < 6; ++r)
      for (int n = 0; n < 5; ++n) {
        double expected = bias[size_t(n)];
        for (int k = 0; k < 4; ++k)
          expected += double(x[size_t(r * 4 + k)]) * double(w[size_t(n * 4 + k)]);
        ASSERT_NEAR(y[size_t(r * 5 + n)], expected, 1e-5 * std::max(1.0, std::fabs(expected)))
            << "row " << r << " column " << n << ", step " << step;
      }
  }
}

TEST(CudaExecutor, WithoutADeviceCreateIsANoCudaDeviceError) {
  if (haveCudaDevice())
    GTEST_SKIP() << "a CUDA device is present";
  rt::Plan plan = oneOpPlan("relu", {4}, {4});
  std::unique_ptr<rt::CudaExecutor> exec;
  rt::Status s = rt::CudaExecutor::create(plan, {}, exec);
  EXPECT_EQ(exec, nullptr);
  EXPECT_THAT(s.message(), StartsWith("m.plan: rank 0: no CUDA device: "));
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

TEST(CudaExecutor, ACpuPlanIsNotRunOnCuda) {
  rt::Plan plan = oneOpPlan("relu", {4}, {4}, {}, "cpu");
  std::unique_ptr<rt::CudaExecutor> exec;
  EXPECT_EQ(rt::CudaExecutor::create(plan, {}, exec).message(),
            "m.plan: compiled for --device cpu, not cuda");
}

// Convolution geometries cuDNN is given, built on the host: strides, padding, dilation,
// groups; and what it cannot take, refused.
TEST(CudnnConvolution, DescriptorsGiveThePlannedOutputShape) {
  struct Case {
    std::vector<int64_t> x, w, y;
    std::vector<std::pair<std::string, std::vector<int64_t>>> attrs;
    std::string error; // "" when cuDNN takes it
  };
  const Case cases[] = {
      {{2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 8, 8}, {{"pads", {1, 1, 1, 1}}}, ""},
      {{2, 3, 9, 7}, {4, 3, 3, 3}, {2, 4, 5, 4},
       {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}}, ""},
      {{1, 4, 8, 8}, {6, 2, 3, 3}, {1, 6, 4, 4}, {{"group", {2}}, {"dilations", {2, 2}}}, ""},
      {{2, 8, 5, 5}, {16, 8, 1, 1}, {2, 16, 5, 5}, {}, ""},
      {{1, 1, 6, 6}, {1, 1, 3, 3}, {1, 1, 5, 4}, {{"pads", {1, 0, 0, 0}}},
       "conv2d: asymmetric padding has no cuDNN kernel"}};
  for (const Case &c : cases) {
    rt::Attrs attrs; // the plan spells every attribute out
    attrs.set("strides", ints({1, 1}));
    attrs.set("pads", ints({0, 0, 0, 0}));
    attrs.set("dilations", ints({1, 1}));
    attrs.set("group", ints({1}));
    for (const auto &[name, values] : c.attrs)
      attrs.set(name, ints(values));
    rt::TensorView x{nullptr, rt::DType::F32, c.x}, w{nullptr, rt::DType::F32, c.w},
        y{nullptr, rt::DType::F32, c.y};
    rt::cpu::ConvShape shape;
    rt::Status planned = rt::cpu::planConvShape("conv2d", attrs, x, w, y, "output", shape);
    ASSERT_TRUE(planned.ok()) << planned.message();
    EXPECT_EQ(rt::describeConvForCudnn(shape, rt::DType::F32, true).message(), c.error)
        << rt::shapeString(c.x) << " * " << rt::shapeString(c.w);
  }
}

//===--- GEMM planning --------------------------------------------------------------------===//

rt::TensorView shaped(std::vector<int64_t> shape) {
  return rt::TensorView{nullptr, rt::DType::F32, std::move(shape)};
}

TEST(GemmPlan, ALinearLayerFoldsTheBatchIntoM) {
  rt::GemmPlan p;
  ASSERT_TRUE(rt::planCudaMatmul({}, shaped({8, 16, 32}), shaped({32, 64}), shaped({8, 16, 64}), p)
                  .ok());
  EXPECT_EQ(p.count, 1);
  EXPECT_EQ(p.calls(), 1);
  EXPECT_EQ(p.m, 8 * 16);
  EXPECT_EQ(p.n, 64);
  EXPECT_EQ(p.k, 32);
  EXPECT_FALSE(p.transA);
  EXPECT_FALSE(p.transB);
  EXPECT_EQ(p.lda, 32);
  EXPECT_EQ(p.ldb, 64);
  EXPECT_EQ(p.ldc, 64);
}

TEST(GemmPlan, AttentionScoresAreOneStridedBatch) {
  rt::Attrs attrs;
  rt::AttrValue yes;
  yes.ints = {1};
  attrs.set("transpose_rhs", yes);
  rt::GemmPlan p;
  // q [B, H, T, D] x k [B, H, T, D]^T -> [B, H, T, T]
  ASSERT_TRUE(rt::planCudaMatmul(attrs, shaped({2, 4, 8, 16}), shaped({2, 4, 8, 16}),
                                 shaped({2, 4, 8, 8}), p)
                  .ok());
  EXPECT_EQ(p.calls(), 1);
  EXPECT_EQ(p.count, 8);
  EXPECT_EQ(p.batch, 8);
  EXPECT_TRUE(p.transB);
  EXPECT_EQ(p.ldb, 16);
  EXPECT_EQ(p.strideA, 8 * 16);
  EXPECT_EQ(p.strideB, 8 * 16);
  EXPECT_EQ(p.strideC, 8 * 8);
}

TEST(GemmPlan, BroadcastBatchesRunOneCallPerLeadingIndex) {
  rt::GemmPlan p;
  // [2, 1, 3, 4] x [1, 5, 4, 6] -> [2, 5, 3, 6]: A repeats along dim 1, B along dim 0.
  ASSERT_TRUE(rt::planCudaMatmul({}, shaped({2, 1, 3, 4}), shaped({1, 5, 4, 6}),
                                 shaped({2, 5, 3, 6}), p)
                  .ok());
  EXPECT_EQ(p.count, 10);
  EXPECT_EQ(p.batch, 5);
  ASSERT_EQ(p.calls(), 2);
  EXPECT_EQ(p.strideA, 0);  // within a call, A stays
  EXPECT_EQ(p.strideB, 24); // B walks its 5 matrices
  EXPECT_EQ(p.strideC, 18);
  EXPECT_EQ(p.offA, (std::vector<int64_t>{0, 12}));
  EXPECT_EQ(p.offB, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(p.offC, (std::vector<int64_t>{0, 5 * 18}));
}

TEST(GemmPlan, ThreeBatchDimensionsStrideOverTheLast) {
  rt::GemmPlan p;
  // [2, 1, 4, 3, 5] x [1, 3, 4, 5, 2] -> [2, 3, 4, 3, 2]: 24 GEMMs, 6 calls of 4.
  ASSERT_TRUE(rt::planCudaMatmul({}, shaped({2, 1, 4, 3, 5}), shaped({1, 3, 4, 5, 2}),
                                 shaped({2, 3, 4, 3, 2}), p)
                  .ok());
  EXPECT_EQ(p.count, 24);
  EXPECT_EQ(p.batch, 4);
  ASSERT_EQ(p.calls(), 6);
  EXPECT_EQ(p.strideA, 15);
  EXPECT_EQ(p.strideB, 10);
  EXPECT_EQ(p.strideC, 6);
  EXPECT_EQ(p.offA, (std::vector<int64_t>{0, 0, 0, 60, 60, 60}));
  EXPECT_EQ(p.offB, (std::vector<int64_t>{0, 40, 80, 0, 40, 80}));
  EXPECT_EQ(p.offC[5], 5 * 24);
}

TEST(GemmPlan, PermutedOperandsReadThroughStrides) {
  // lhs_perm [0, 2, 1, 3] reads [B, T, H, D] as [B, H, T, D]; rhs likewise, transposed.
  rt::Attrs attrs;
  attrs.set("lhs_perm", ints({0, 2, 1, 3}));
  attrs.set("rhs_perm", ints({0, 2, 3, 1}));
  rt::GemmPlan p;
  ASSERT_TRUE(rt::planCudaMatmul(attrs, shaped({2, 8, 4, 16}), shaped({2, 8, 4, 16}),
                                 shaped({2, 4, 8, 8}), p)
                  .ok());
  // Heads step by D, batch entries by T * H * D: one call per batch entry, strided over heads.
  EXPECT_EQ(p.count, 8);
  EXPECT_EQ(p.batch, 4);
  ASSERT_EQ(p.calls(), 2);
  EXPECT_EQ(p.m, 8);
  EXPECT_EQ(p.n, 8);
  EXPECT_EQ(p.k, 16);
  EXPECT_FALSE(p.transA);
  EXPECT_EQ(p.lda, 4 * 16); // a row of T steps over the heads
  EXPECT_TRUE(p.transB);
  EXPECT_EQ(p.ldb, 4 * 16);
  EXPECT_EQ(p.strideA, 16); // next head: D elements on
  EXPECT_EQ(p.offA, (std::vector<int64_t>{0, 8 * 4 * 16}));
  EXPECT_EQ(p.strideC, 8 * 8);
}

TEST(GemmPlan, VectorsArePromoted) {
  rt::GemmPlan p;
  ASSERT_TRUE(rt::planCudaMatmul({}, shaped({4}), shaped({4, 3}), shaped({3}), p).ok());
  EXPECT_EQ(p.m, 1);
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.k, 4);
  ASSERT_TRUE(rt::planCudaMatmul({}, shaped({5, 4}), shaped({4}), shaped({5}), p).ok());
  EXPECT_EQ(p.m, 5);
  EXPECT_EQ(p.n, 1);
  EXPECT_EQ(p.ldb, 1);
}

TEST(GemmPlan, AWrongOutputShapeIsAnError) {
  rt::GemmPlan p;
  EXPECT_EQ(rt::planCudaMatmul({}, shaped({2, 3}), shaped({3, 4}), shaped({2, 5}), p).message(),
            "matmul: output has shape [2, 5], expected [2, 4]");
}

//===--- launch geometry ------------------------------------------------------------------===//

TEST(LaunchGeometry, GridStrideLaunchesStayWithinLimits) {
  using rt::cuda::gridFor;
  EXPECT_EQ(gridFor(0), 1u);
  EXPECT_EQ(gridFor(1), 1u);
  EXPECT_EQ(gridFor(1024), 1u);
  EXPECT_EQ(gridFor(1025), 2u);
  EXPECT_EQ(gridFor(int64_t(1) << 40), unsigned(rt::cuda::kMaxGridBlocks));
  EXPECT_EQ(rt::cuda::rowBlocks(0), 1u);
  EXPECT_EQ(rt::cuda::rowBlocks(int64_t(1) << 40), unsigned((int64_t(1) << 31) - 1));
}

/// The reduction's geometry for reducing `shape` over `axes`.
rt::cuda::ReduceGeometry reduceGeometry(std::vector<int64_t> shape, std::vector<int64_t> axes) {
  rt::cpu::Dims out;
  rt::cuda::ReduceGeometry g;
  rt::Status s = rt::cuda::planReduceGeometry("reduce_sum", shape, axes, true, out, g);
  EXPECT_TRUE(s.ok()) << s.message();
  return g;
}

// The three ways launchReduce spreads a reduction, chosen from its geometry alone.
TEST(LaunchGeometry, ReductionsRunAThreadAWarpOrABlockPerOutput) {
  using rt::cuda::ReduceShape;
  using rt::cuda::reduceShapeFor;
  // Eight terms each (the position embedding's gradient over the batch): a thread each.
  EXPECT_EQ(reduceShapeFor(reduceGeometry({8, 512, 1024}, {0})), ReduceShape::ThreadPerOutput);
  // Many contiguous rows (softmax's backward sum): a warp each.
  EXPECT_EQ(reduceShapeFor(reduceGeometry({8, 16, 512, 512}, {3})), ReduceShape::WarpPerOutput);
  // Otherwise a block each: outer axes (a bias gradient), or few long rows.
  EXPECT_EQ(reduceShapeFor(reduceGeometry({8, 512, 4096}, {0, 1})), ReduceShape::BlockPerOutput);
  EXPECT_EQ(reduceShapeFor(reduceGeometry({256, 8192}, {0})), ReduceShape::BlockPerOutput);
  EXPECT_EQ(reduceShapeFor(reduceGeometry({64, 65536}, {1})), ReduceShape::BlockPerOutput);
  EXPECT_EQ(reduceShapeFor(reduceGeometry({4096, 1024}, {0})), ReduceShape::BlockPerOutput);
  EXPECT_EQ(reduceShapeFor(reduceGeometry({4096, 1024}, {})), ReduceShape::BlockPerOutput);
  EXPECT_EQ(rt::cuda::threadBlocks(0), 1u);
  EXPECT_EQ(rt::cuda::threadBlocks(257), 2u);
  EXPECT_EQ(rt::cuda::warpBlocks(9), 2u);
  EXPECT_EQ(rt::cuda::warpBlocks(int64_t(1) << 40), unsigned(rt::cuda::kMaxGridBlocks));
}

/// Runs one f32 op on `x` (`inShape`) through a one-instruction cuda plan on the executor, as
/// plait-run would, into `out` (`outShape`).
void runOneOpOnCuda(const std::string &op, const std::vector<plan::AttrDesc> &attrs,
                    const std::vector<int64_t> &inShape, const std::vector<float> &x,
                    const std::vector<int64_t> &outShape, std::vector<float> &out) {
  rt::Plan plan = oneOpPlan(op, inShape, outShape, attrs);
  std::unique_ptr<rt::CudaExecutor> exec;
  rt::Status s = rt::CudaExecutor::create(plan, {}, exec);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(exec->setInput(0, rt::DType::F32, inShape, x.data()).ok());
  s = exec->run();
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(exec->readOutput(0, bytes).ok());
  ASSERT_EQ(bytes.size() % sizeof(float), 0u);
  out.resize(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
}

// Each way on the device against sums (and maxima) taken in order in double, through the
// executor as plait-run runs a plan: reduce_sum and reduce_max over inner, outer and all axes.
TEST(CudaExecutor, ReductionsOfEveryShapeMatchSequentialOnes) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const Case cases[] = {{{8, 64, 1024}, {0}},  {{64, 16, 512}, {2}}, {{256, 8192}, {0}},
                        {{16, 65536}, {1}},    {{4096, 256}, {0}},   {{4096, 256}, {}},
                        {{4, 33, 7, 5}, {1, 3}}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1, 1);
  for (const Case &c : cases)
    for (const char *op : {"reduce_sum", "reduce_max"}) {
      SCOPED_TRACE(::testing::Message() << op << " of [" << ::testing::PrintToString(c.shape)
                                        << "] over " << ::testing::PrintToString(c.axes));
      rt::cuda::ReduceGeometry g = reduceGeometry(c.shape, c.axes);
      std::vector<int64_t> outShape = c.shape;
      for (size_t d = 0; d < outShape.size(); ++d)
        if (c.axes.empty() || std::find(c.axes.begin(), c.axes.end(), int64_t(d)) != c.axes.end())
          outShape[d] = 1;
      std::vector<float> data(size_t(g.outCount * g.reducedCount)), got;
      for (float &v : data)
        v = value(rng);
      runOneOpOnCuda(op, {testing::intsAttr("axes", c.axes)}, c.shape, data, outShape, got);
      if (HasFatalFailure())
        return;
      ASSERT_EQ(got.size(), size_t(g.outCount));
      bool max = std::string(op) == "reduce_max";
      for (int64_t o = 0; o < g.outCount; ++o) {
        int64_t base = rt::cuda::indexing::reduceBase(g, o);
        double expected = max ? -INFINITY : 0.0;
        for (int64_t r = 0; r < g.reducedCount; ++r) {
          double v = data[size_t(base + rt::cuda::indexing::reduceStep(g, r))];
          expected = max ? std::max(expected, v) : expected + v;
        }
        ASSERT_NEAR(got[o], expected, 1e-6 * std::max(1.0, std::fabs(expected))) << "output " << o;
      }
    }
}

// softmax and log_softmax on the device, a warp per row ([2048, 512] along the last axis,
// attention's shape) and a block per row (along a middle axis), against the math in double.
TEST(CudaExecutor, SoftmaxRowsByWarpsAndByBlocksMatchTheMath) {
  EXPECT_TRUE(rt::cuda::softmaxByWarps(2048, 512, 1));
  EXPECT_FALSE(rt::cuda::softmaxByWarps(4, 300, 8));
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis, outer, n, inner;
  };
  const Case cases[] = {{{2048, 512}, 1, 2048, 512, 1}, {{4, 300, 8}, 1, 4, 300, 8}};
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> value(-8, 8);
  for (const Case &c : cases)
    for (bool log : {false, true}) {
      const char *op = log ? "log_softmax" : "softmax";
      SCOPED_TRACE(::testing::Message() << op << " of " << ::testing::PrintToString(c.shape));
      std::vector<float> data(size_t(c.outer * c.n * c.inner)), got;
      for (float &v : data)
        v = value(rng);
      runOneOpOnCuda(op, {testing::intsAttr("axis", {c.axis})}, c.shape, data, c.shape, got);
      if (HasFatalFailure())
        return;
      ASSERT_EQ(got.size(), data.size());
      for (int64_t o = 0; o < c.outer; ++o)
        for (int64_t j = 0; j < c.inner; ++j) {
          auto at = [&](int64_t k) { return size_t((o * c.n + k) * c.inner + j); };
          double top = -INFINITY, sum = 0;
          for (int64_t k = 0; k < c.n; ++k)
            top = std::max(top, double(data[at(k)]));
          for (int64_t k = 0; k < c.n; ++k)
            sum += std::exp(double(data[at(k)]) - top);
          for (int64_t k = 0; k < c.n; ++k) {
            double e = log ? double(data[at(k)]) - top - std::log(sum)
                           : std::exp(double(data[at(k)]) - top) / sum;
            ASSERT_NEAR(got[at(k)], e, 1e-5 * std::max(1.0, std::fabs(e)))
                << "row " << o << "," << j << " element " << k;
          }
        }
    }
}

} // namespace
} // namespace plait
