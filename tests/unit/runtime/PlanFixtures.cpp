// Test plans and test kernels shared by the runtime suites.
#include "PlanFixtures.h"

#include <mutex>
#include <stdexcept>

#include "codegen/schema/PlanChecksum.h"

namespace plait::testing {

namespace {

rt::Status testAddF32(const rt::KernelCall &call) {
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return rt::Status::error("test_add_f32 needs 2 inputs and 1 output");
  const float *a = call.inputs[0].as<float>();
  const float *b = call.inputs[1].as<float>();
  float *y = call.outputs[0].as<float>();
  for (int64_t i = 0; i < call.outputs[0].numel(); ++i)
    y[i] = a[i] + b[i];
  return {};
}

rt::Status testScaleF32(const rt::KernelCall &call) {
  float factor = static_cast<float>(call.attrs.getFloat("factor", 1.0));
  const float *x = call.inputs[0].as<float>();
  float *y = call.outputs[0].as<float>();
  for (int64_t i = 0; i < call.outputs[0].numel(); ++i)
    y[i] = x[i] * factor;
  return {};
}

rt::Status testFail(const rt::KernelCall &) { return rt::Status::error("boom"); }

rt::Status testThrow(const rt::KernelCall &) { throw std::runtime_error("kaboom"); }

} // namespace

void registerTestKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    rt::registerKernel("test_add_f32", testAddF32);
    rt::registerKernel("test_scale_f32", testScaleF32);
    rt::registerKernel("test_fail", testFail);
    rt::registerKernel("test_throw", testThrow);
  });
}

std::vector<uint8_t> serializeRaw(const RawPlan &plan) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  // Not CreateBufferDirect: its 64-byte force_align asserts in debug builds (PlanBuilder.cpp).
  for (const auto &b : plan.buffers)
    buffers.push_back(fb::CreateBuffer(fbb, fbb.CreateVector(b)));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const RawTensor &t : plan.tensors)
    tensors.push_back(fb::CreateTensorDirect(
        fbb, t.name.c_str(), static_cast<fb::DType>(t.dtype), &t.shape,
        static_cast<fb::TensorKind>(t.kind), t.offset, t.bytes, t.data,
        t.init.empty() ? nullptr : t.init.c_str()));
  std::vector<flatbuffers::Offset<fb::Instr>> instrs;
  for (const RawInstr &in : plan.instrs) {
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    for (const RawAttr &a : in.attrs)
      attrs.push_back(fb::CreateAttrDirect(fbb, a.hasName ? a.name.c_str() : nullptr,
                                           a.ints.empty() ? nullptr : &a.ints,
                                           a.floats.empty() ? nullptr : &a.floats,
                                           a.str.empty() ? nullptr : a.str.c_str()));
    instrs.push_back(
        fb::CreateInstrDirect(fbb, in.kernel, &in.inputs, &in.outputs, &attrs, in.name.c_str()));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
  for (const std::string &k : plan.kernels)
    kernels.push_back(fbb.CreateString(k));
  auto root = fb::CreatePlanDirect(fbb, plan.version, plan.worldSize, &plan.arenaBytes, &kernels,
                                   &tensors, &instrs, &plan.inputs, &plan.outputs, &buffers,
                                   "{}", "test", false, nullptr, 0, nullptr, nullptr, nullptr,
                                   nullptr, plan.device.empty() ? nullptr : plan.device.c_str());
  fb::FinishPlanBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::vector<uint8_t> withChecksum(std::vector<uint8_t> bytes) {
  plan::appendPlanChecksum(bytes);
  return bytes;
}

std::vector<uint8_t> f32Bytes(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

RawPlan validRawPlan() {
  RawPlan p;
  p.arenaBytes = {128};
  p.kernels = {"test_add_f32", "test_scale_f32"};
  auto tensor = [](std::string name, int8_t kind, uint64_t offset) {
    RawTensor t;
    t.name = std::move(name);
    t.shape = {2, 3};
    t.kind = kind;
    t.offset = offset;
    t.bytes = 24;
    return t;
  };
  p.tensors.push_back(tensor("x", 1, 0));
  p.tensors.push_back(tensor("bias", 3, 32));
  p.tensors.back().data = 0;
  p.tensors.push_back(tensor("w", 2, 64));
  p.tensors.back().init = "ones";
  p.tensors.push_back(tensor("sum", 0, 96));
  p.tensors.push_back(tensor("y", 0, 0));
  p.buffers.push_back(f32Bytes({0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}));
  RawInstr add;
  add.kernel = 0;
  add.inputs = {0, 1};
  add.outputs = {3};
  add.name = "/add";
  RawInstr scale;
  scale.kernel = 1;
  scale.inputs = {3};
  scale.outputs = {4};
  scale.name = "/scale";
  RawAttr factor;
  factor.name = "factor";
  factor.floats = {2.0};
  scale.attrs.push_back(factor);
  p.instrs = {add, scale};
  p.inputs = {0};
  p.outputs = {4, 2};
  return p;
}

std::string freshTempDir(const std::string &name) {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string unique = info ? std::string(info->test_suite_name()) + "." + info->name() : name;
  std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "plait_runtime_tests" / unique / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

void writeFile(const std::string &path, const std::string &bytes) {
  writeFile(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

} // namespace plait::testing
