// The plan loader: a PlanBuilder round trip, then every way a plan file can be rejected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "runtime/PlanLoader.h"

namespace plait::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class PlanLoaderTest : public ::testing::Test {
protected:
  void SetUp() override { registerTestKernels(); }

  // Loads `bytes` as if from "model.plan"; returns the error message ("" when it loaded).
  std::string loadError(std::vector<uint8_t> bytes) {
    rt::Plan plan;
    rt::Status s = rt::loadPlanFromBytes(std::move(bytes), "model.plan", plan);
    return s.ok() ? "" : s.message();
  }
  std::string loadError(const RawPlan &raw) { return loadError(serializeRaw(raw)); }
};

TEST_F(PlanLoaderTest, RoundTripThroughPlanBuilder) {
  plan::PlanDesc desc;
  desc.arenaBytes = {256};
  desc.report = R"({"memory": {}})";
  desc.source = "tiny.onnx";
  plan::TensorDesc x{"x", fb::DType::F32, {2, 3}, fb::TensorKind::Input, 0, {}, ""};
  plan::TensorDesc c{"c", fb::DType::F32, {2, 3}, fb::TensorKind::Constant, 32,
                     f32Bytes({1, 2, 3, 4, 5, 6}), ""};
  plan::TensorDesc w{"w", fb::DType::BF16, {4}, fb::TensorKind::Param, 64, {}, "normal:0.02"};
  plan::TensorDesc y{"y", fb::DType::F32, {2, 3}, fb::TensorKind::Activation, 96, {}, ""};
  desc.tensors = {x, c, w, y};
  plan::InstrDesc add{"test_add_f32", {0, 1}, {3}, {}, "/add"};
  add.attrs.push_back({"axes", {0, 1}, {}, ""});
  add.attrs.push_back({"alpha", {}, {0.25}, ""});
  add.attrs.push_back({"mode", {}, {}, "exact"});
  desc.instrs = {add, {"test_scale_f32", {3}, {3}, {}, "/scale"}};
  desc.inputs = {0};
  desc.outputs = {3};

  std::vector<uint8_t> bytes = plan::serializePlan(desc);
  EXPECT_EQ(bytes, plan::serializePlan(desc)) << "serialisation must be deterministic";

  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(bytes, "tiny.plan", plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.path, "tiny.plan");
  EXPECT_EQ(plan.version, kPlanVersion);
  EXPECT_EQ(plan.worldSize, 1u);
  EXPECT_EQ(plan.arenaBytes, std::vector<uint64_t>{256});
  EXPECT_EQ(plan.report, desc.report);
  EXPECT_EQ(plan.source, "tiny.onnx");
  EXPECT_EQ(plan.kernels, (std::vector<std::string>{"test_add_f32", "test_scale_f32"}));
  ASSERT_EQ(plan.tensors.size(), 4u);
  EXPECT_EQ(plan.tensors[1].name, "c");
  EXPECT_EQ(plan.tensors[1].kind, rt::TensorKind::Constant);
  EXPECT_EQ(plan.tensors[1].offset, 32u);
  EXPECT_EQ(plan.tensors[1].bytes, 24u);
  ASSERT_EQ(plan.tensors[1].data, 0);
  EXPECT_EQ(std::vector<uint8_t>(plan.bufferData(0), plan.bufferData(0) + 24),
            f32Bytes({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(plan.buffers[0].offset % 64, 0u) << "weights are 64-byte aligned in the file";
  EXPECT_EQ(plan.tensors[2].dtype, rt::DType::BF16);
  EXPECT_EQ(plan.tensors[2].bytes, 8u);
  EXPECT_EQ(plan.tensors[2].init.kind, rt::ParamInit::Kind::Normal);
  EXPECT_DOUBLE_EQ(plan.tensors[2].init.scale, 0.02);
  ASSERT_EQ(plan.instrs.size(), 2u);
  EXPECT_EQ(plan.instrs[0].name, "/add");
  EXPECT_EQ(plan.instrs[0].fn, rt::findKernel("test_add_f32"));
  EXPECT_EQ(plan.instrs[0].inputs, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(plan.instrs[0].outputs, std::vector<uint32_t>{3});
  EXPECT_EQ(plan.instrs[0].attrs.getInts("axes"), (std::vector<int64_t>{0, 1}));
  EXPECT_DOUBLE_EQ(plan.instrs[0].attrs.getFloat("alpha", 0), 0.25);
  EXPECT_EQ(plan.instrs[0].attrs.getStr("mode", ""), "exact");
  EXPECT_EQ(plan.instrs[1].kernel, 1u);
  EXPECT_EQ(plan.inputs, std::vector<uint32_t>{0});
  EXPECT_EQ(plan.outputs, std::vector<uint32_t>{3});

  // A copy of the plan must not point into the original's bytes.
  rt::Plan copy = plan;
  plan = rt::Plan{};
  EXPECT_EQ(std::vector<uint8_t>(copy.bufferData(0), copy.bufferData(0) + 24),
            f32Bytes({1, 2, 3, 4, 5, 6}));
}

TEST_F(PlanLoaderTest, LoadsFromFile) {
  std::string path = freshTempDir("plans") + "/valid.plan";
  writeFile(path, withChecksum(serializeRaw(validRawPlan())));
  rt::Plan plan;
  rt::Status s = rt::loadPlan(path, plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.path, path);
  EXPECT_EQ(plan.tensors.size(), 5u);
}

// A plan file carries a checksum: a cut-short file has no trailer, a damaged one a wrong CRC.
TEST_F(PlanLoaderTest, RejectsTruncatedOrDamagedFile) {
  std::string dir = freshTempDir("plans");
  std::vector<uint8_t> bytes = withChecksum(serializeRaw(validRawPlan()));
  rt::Plan plan;
  writeFile(dir + "/cut.plan", std::vector<uint8_t>(bytes.begin(), bytes.end() - 5));
  EXPECT_THAT(rt::loadPlan(dir + "/cut.plan", plan).message(),
              HasSubstr("cut.plan: truncated plan file"));
  std::vector<uint8_t> flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x10;
  writeFile(dir + "/flip.plan", flipped);
  EXPECT_THAT(rt::loadPlan(dir + "/flip.plan", plan).message(),
              HasSubstr("flip.plan: damaged plan file (checksum"));
}

TEST_F(PlanLoaderTest, RejectsMissingFile) {
  rt::Plan plan;
  rt::Status s = rt::loadPlan("/nonexistent/dir/model.plan", plan);
  EXPECT_EQ(s.message(), "/nonexistent/dir/model.plan: no such file");
}

TEST_F(PlanLoaderTest, RejectsDirectory) {
  std::string dir = freshTempDir("a_dir");
  rt::Plan plan;
  EXPECT_THAT(rt::loadPlan(dir, plan).message(), HasSubstr("not a regular file"));
}

TEST_F(PlanLoaderTest, RejectsEmptyAndTinyFiles) {
  EXPECT_EQ(loadError(std::vector<uint8_t>{}), "model.plan: not a plait plan (file is 0 bytes)");
  EXPECT_THAT(loadError(std::vector<uint8_t>{1, 2, 3}), HasSubstr("file is 3 bytes"));
}

TEST_F(PlanLoaderTest, RejectsWrongIdentifier) {
  std::vector<uint8_t> bytes = serializeRaw(validRawPlan());
  std::memcpy(bytes.data() + 4, "ONNX", 4);
  EXPECT_EQ(loadError(bytes),
            "model.plan: not a plait plan (file identifier 'ONNX', expected 'PLAN')");
  bytes[4] = 0;
  EXPECT_THAT(loadError(bytes), HasSubstr("'\\x00NNX'"));
}

TEST_F(PlanLoaderTest, RejectsTruncatedFile) {
  std::vector<uint8_t> bytes = serializeRaw(validRawPlan());
  // (Cutting only the last few bytes may remove nothing but alignment padding, which is
  // harmless; cuts into referenced data must be caught.)
  for (size_t keep : {bytes.size() * 3 / 4, bytes.size() / 2, size_t{100}, size_t{12}}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + keep);
    EXPECT_EQ(loadError(cut), "model.plan: corrupt plan file (FlatBuffers verification failed)")
        << "kept " << keep << " of " << bytes.size() << " bytes";
  }
}

TEST_F(PlanLoaderTest, RejectsRootOffsetOutOfRange) {
  std::vector<uint8_t> bytes = serializeRaw(validRawPlan());
  uint32_t huge = 0x7ffffff0u;
  std::memcpy(bytes.data(), &huge, 4);
  EXPECT_THAT(loadError(bytes), HasSubstr("corrupt plan file"));
}

TEST_F(PlanLoaderTest, RejectsCorruptVectorLength) {
  // The tensors vector's length word: find it as the first occurrence of the uint32 5
  // followed by five plausible offsets is fragile, so corrupt every 4-byte word that
  // equals the tensor count and check that at least one of those is caught by the Verifier.
  std::vector<uint8_t> bytes = serializeRaw(validRawPlan());
  bool caught = false;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    uint32_t word;
    std::memcpy(&word, bytes.data() + i, 4);
    if (word != 5)
      continue;
    std::vector<uint8_t> corrupt = bytes;
    uint32_t big = 0x00ffffffu;
    std::memcpy(corrupt.data() + i, &big, 4);
    if (loadError(corrupt) == "model.plan: corrupt plan file (FlatBuffers verification failed)")
      caught = true;
  }
  EXPECT_TRUE(caught);
}

// Robustness: flipping any single byte must give either a loaded plan or a one-line error,
// never a crash (under ASan this also proves no out-of-bounds read).
TEST_F(PlanLoaderTest, SurvivesEveryFlippedByte) {
  std::vector<uint8_t> bytes = serializeRaw(validRawPlan());
  int rejected = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x01}}) {
      std::vector<uint8_t> flipped = bytes;
      flipped[i] ^= mask;
      std::string err = loadError(flipped);
      EXPECT_EQ(err.find('\n'), std::string::npos) << err;
      if (!err.empty()) {
        EXPECT_THAT(err, StartsWith("model.plan: "));
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(PlanLoaderTest, RejectsOtherVersion) {
  RawPlan raw = validRawPlan();
  raw.version = kPlanVersion + 1;
  EXPECT_EQ(loadError(raw), fmt::format("model.plan: plan format version {}, this runtime reads "
                                        "version {} (recompile the model with a matching "
                                        "plait-compile)",
                                        kPlanVersion + 1, kPlanVersion));
}

TEST_F(PlanLoaderTest, RejectsWorldSizeMismatch) {
  RawPlan raw = validRawPlan();
  raw.worldSize = 2;
  EXPECT_EQ(loadError(raw), "model.plan: arena_bytes has 1 entries, expected one per rank "
                            "(world size 2)");
  raw.worldSize = 0;
  EXPECT_EQ(loadError(raw), "model.plan: world size is 0");
}

TEST_F(PlanLoaderTest, RejectsUnknownDtype) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].dtype = 13;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): unknown dtype 13");
  raw.tensors[3].dtype = -1;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): unknown dtype -1");
}

TEST_F(PlanLoaderTest, RejectsUnknownTensorKind) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].kind = 7;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): unknown tensor kind 7");
}

TEST_F(PlanLoaderTest, RejectsNegativeDimension) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].shape = {2, -3};
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): negative dimension in shape [2, -3]");
}

TEST_F(PlanLoaderTest, RejectsOverflowingShape) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].shape = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_THAT(loadError(raw), HasSubstr("tensor 3 ('sum'): shape [1099511627776, "
                                        "1099511627776] is too large"));
  // 2^63 one-byte elements fit a uint64_t of bytes but not the int64_t element count.
  raw.tensors[3].dtype = int(rt::DType::I1);
  raw.tensors[3].shape = {int64_t{1} << 32, int64_t{1} << 31};
  raw.tensors[3].bytes = uint64_t{1} << 63;
  EXPECT_THAT(loadError(raw), HasSubstr("tensor 3 ('sum'): shape [4294967296, 2147483648] is "
                                        "too large"));
}

// A zero dimension empties a shape: no elements and no bytes. Its other dimensions still
// multiply to at most int64's range, so that no product of some of them overflows in a kernel.
TEST_F(PlanLoaderTest, BoundsTheDimensionsOfAnEmptyShape) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].shape = {int64_t{1} << 20, 0, int64_t{1} << 40};
  raw.tensors[3].bytes = 0;
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(withChecksum(serializeRaw(raw)), "model.plan", plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.tensors[3].numel(), 0);
  raw.tensors[3].shape = {0, int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_THAT(loadError(raw), HasSubstr("tensor 3 ('sum'): shape [0, 1099511627776, "
                                        "1099511627776] is too large"));
}

TEST_F(PlanLoaderTest, RejectsByteCountMismatch) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].bytes = 20;
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 3 ('sum'): bytes is 20, expected 24 for shape [2, 3] of f32");
}

TEST_F(PlanLoaderTest, RejectsOffsetPastArena) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].offset = 112;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): bytes [112, 112+24) lie past the end "
                            "of rank 0's arena (128 bytes)");
  raw.tensors[3].offset = UINT64_MAX - 8; // offset + bytes wraps around
  EXPECT_THAT(loadError(raw), HasSubstr("past the end of rank 0's arena"));
}

TEST_F(PlanLoaderTest, RejectsOffsetPastAnotherRanksArena) {
  RawPlan raw = validRawPlan();
  raw.worldSize = 2;
  raw.arenaBytes = {128, 100};
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): bytes [96, 96+24) lie past the end "
                            "of rank 1's arena (100 bytes)");
}

TEST_F(PlanLoaderTest, RejectsDataBufferIndexOutOfRange) {
  RawPlan raw = validRawPlan();
  raw.tensors[1].data = 3;
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 1 ('bias'): data buffer index 3 out of range (1 buffers)");
  raw.tensors[1].data = -2;
  EXPECT_THAT(loadError(raw), HasSubstr("data buffer index -2 out of range"));
}

TEST_F(PlanLoaderTest, RejectsBufferSizeMismatch) {
  RawPlan raw = validRawPlan();
  raw.buffers[0].pop_back();
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 1 ('bias'): data buffer 0 holds 23 bytes, the tensor needs 24");
}

TEST_F(PlanLoaderTest, RejectsDataOnActivationOrInput) {
  RawPlan raw = validRawPlan();
  raw.tensors[3].data = 0;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 3 ('sum'): activation tensors cannot have a "
                            "data buffer");
  raw = validRawPlan();
  raw.tensors[0].data = 0;
  EXPECT_THAT(loadError(raw), HasSubstr("tensor 0 ('x'): input tensors cannot have a data"));
}

TEST_F(PlanLoaderTest, RejectsConstantWithoutData) {
  RawPlan raw = validRawPlan();
  raw.tensors[1].data = -1;
  EXPECT_EQ(loadError(raw), "model.plan: tensor 1 ('bias'): constant has no data buffer");
}

TEST_F(PlanLoaderTest, AcceptsEmptyConstantWithoutData) {
  RawPlan raw = validRawPlan();
  raw.tensors[1].data = -1;
  raw.tensors[1].shape = {0, 3};
  raw.tensors[1].bytes = 0;
  EXPECT_EQ(loadError(raw), "");
}

TEST_F(PlanLoaderTest, RejectsParamWithoutDataOrInit) {
  RawPlan raw = validRawPlan();
  raw.tensors[2].init = "";
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 2 ('w'): param has neither a data buffer nor an initializer");
}

TEST_F(PlanLoaderTest, RejectsBadInitSpecs) {
  RawPlan raw = validRawPlan();
  for (const char *spec : {"gaussian", "normal:", "normal:abc", "uniform:-1", "normal:nan"}) {
    raw.tensors[2].init = spec;
    EXPECT_THAT(loadError(raw), AllOf(StartsWith("model.plan: tensor 2 ('w'): bad initializer"),
                                      HasSubstr(spec)));
  }
  raw.tensors[2].init = "normal:0.1";
  raw.tensors[2].dtype = 4; // i64
  raw.tensors[2].bytes = 48;
  raw.arenaBytes = {256};
  EXPECT_EQ(loadError(raw), "model.plan: tensor 2 ('w'): initializer 'normal:0.1' needs a float "
                            "dtype, the tensor is i64");
}

TEST_F(PlanLoaderTest, RejectsInitWithDataOrOnNonParam) {
  RawPlan raw = validRawPlan();
  raw.tensors[2].data = 0;
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 2 ('w'): has both a data buffer and initializer 'ones'");
  raw = validRawPlan();
  raw.tensors[3].init = "zeros";
  EXPECT_EQ(loadError(raw),
            "model.plan: tensor 3 ('sum'): activation tensors cannot have an initializer");
}

TEST_F(PlanLoaderTest, RejectsKernelIndexOutOfRange) {
  RawPlan raw = validRawPlan();
  raw.instrs[1].kernel = 2;
  EXPECT_EQ(loadError(raw),
            "model.plan: instruction 1 ('/scale'): kernel index 2 out of range (2 kernels)");
}

TEST_F(PlanLoaderTest, RejectsUnknownKernel) {
  RawPlan raw = validRawPlan();
  raw.kernels[1] = "no_such_kernel";
  EXPECT_THAT(loadError(raw),
              StartsWith("model.plan: kernel 1 'no_such_kernel' is not known to this runtime"));
}

TEST_F(PlanLoaderTest, RejectsInstructionTensorIndexOutOfRange) {
  RawPlan raw = validRawPlan();
  raw.instrs[0].inputs[1] = 99;
  EXPECT_EQ(loadError(raw), "model.plan: instruction 0 ('/add'): input tensor index 99 out of "
                            "range (5 tensors)");
  raw = validRawPlan();
  raw.instrs[1].outputs[0] = 5;
  EXPECT_EQ(loadError(raw), "model.plan: instruction 1 ('/scale'): output tensor index 5 out of "
                            "range (5 tensors)");
}

TEST_F(PlanLoaderTest, RejectsBadAttributes) {
  RawPlan raw = validRawPlan();
  raw.instrs[1].attrs.push_back(raw.instrs[1].attrs[0]);
  EXPECT_EQ(loadError(raw), "model.plan: instruction 1 ('/scale'): attribute 'factor' given twice");
  raw = validRawPlan();
  raw.instrs[1].attrs[0].hasName = false;
  EXPECT_EQ(loadError(raw), "model.plan: instruction 1 ('/scale'): attribute without a name");
}

TEST_F(PlanLoaderTest, RejectsGraphInputProblems) {
  RawPlan raw = validRawPlan();
  raw.inputs = {7};
  EXPECT_EQ(loadError(raw),
            "model.plan: graph inputs: input tensor index 7 out of range (5 tensors)");
  raw.inputs = {0, 3};
  EXPECT_EQ(loadError(raw),
            "model.plan: graph inputs: tensor 3 ('sum') has kind activation, not input");
  raw = validRawPlan();
  raw.inputs = {};
  EXPECT_EQ(loadError(raw), "model.plan: tensor 0 ('x'): an input tensor that is not listed "
                            "among the graph inputs");
  raw = validRawPlan();
  raw.tensors[3].kind = 1;
  raw.tensors[3].name = "x";
  raw.inputs = {0, 3};
  EXPECT_EQ(loadError(raw), "model.plan: graph inputs: two inputs are named 'x'");
}

TEST_F(PlanLoaderTest, RejectsGraphOutputIndexOutOfRange) {
  RawPlan raw = validRawPlan();
  raw.outputs = {4, 12};
  EXPECT_EQ(loadError(raw),
            "model.plan: graph outputs: output tensor index 12 out of range (5 tensors)");
}

TEST_F(PlanLoaderTest, AcceptsEmptyPlan) {
  RawPlan raw;
  raw.arenaBytes = {0};
  EXPECT_EQ(loadError(raw), "");
}

} // namespace
} // namespace plait::testing
