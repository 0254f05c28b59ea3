// The CPU kernel suites (tests/unit/kernels) again, with every kernel call that succeeds also
// run through the CUDA backend's kernel of the same op under the emulation (Emulation.h): its
// host side (operand checks, geometry, workspace) and its device code, on the same inputs and
// attributes. Each result must match the CPU kernel's: integers and i1 exactly, floats within
// the dtype's tolerance (the CUDA kernels sum in other orders and call the host's expf where
// the CPU kernels have their own approximations). A call the CUDA kernel refuses (a dtype it
// has no kernel for, f16 say) is counted, not failed; the summary at the end lists what was
// compared and refused per op, and fails the run when a CUDA kernel was never compared.
// PLAIT_SHADOW_MAX_ELEMENTS=N leaves out the calls with an operand of more than N elements
// (counted too): the run with blocks and threads reversed looks for races, which show on a few
// hundred blocks as on thousands, and needs not repeat the suites' largest calls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/cuda/CudaKernel.h"
#include "tests/cuda_emulation/EmulatedCall.h"
#include "tests/cuda_emulation/Emulation.h"
#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait {
namespace {

using rt::DType;
using rt::test::OwnedTensor;

/// The CUDA kernels no CPU kernel test calls, and why that is fine here.
const std::map<std::string, std::string> kNotShadowed = {
    {"dropout_mask", "its CPU test calls the kernel directly; EmulatedKernels.DropoutMask*"},
    {"random", "its CPU test calls the kernel directly; EmulatedKernels.Random*"},
    {"local_shard", "it depends on the rank; EmulatedKernels.LocalShard*"},
};

struct Tally {
  std::map<std::string, int> compared, refused;
  int large = 0; // calls left out by PLAIT_SHADOW_MAX_ELEMENTS
  std::map<std::string, std::string> refusal; // the first reason per op
};

Tally &tally() {
  static Tally t;
  return t;
}

/// Whether `got` is close enough to the CPU kernel's `want` for `dtype`.
bool close(DType dtype, double got, double want) {
  if (std::isnan(got) || std::isnan(want))
    return std::isnan(got) && std::isnan(want);
  if (std::isinf(want) || std::isinf(got))
    return got == want;
  double rtol = 1e-4, atol = 1e-5; // f32
  if (dtype == DType::F64)
    rtol = 1e-9, atol = 1e-12;
  else if (dtype == DType::BF16)
    rtol = 1.0 / 64, atol = 1e-3; // two units in the last place
  else if (dtype == DType::F16)
    rtol = 1.0 / 512, atol = 1e-4;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

std::string where() {
  const ::testing::TestInfo *t = ::testing::UnitTest::GetInstance()->current_test_info();
  return t ? fmt::format("{}.{}", t->test_suite_name(), t->name()) : "?";
}

/// PLAIT_SHADOW_MAX_ELEMENTS, or no limit.
int64_t maxShadowElements() {
  static const int64_t limit = [] {
    const char *text = std::getenv("PLAIT_SHADOW_MAX_ELEMENTS");
    return text && *text ? std::atoll(text) : std::numeric_limits<int64_t>::max();
  }();
  return limit;
}

void shadow(const std::string &name, const std::vector<rt::TensorView> &inputs,
            const std::vector<rt::TensorView> &outputs, const rt::Attrs &attrs) {
  rt::CudaKernelFn fn = rt::findCudaKernel(name);
  if (!fn)
    return; // no CUDA kernel, or a library one (NoLibraryKernels.cpp)
  for (const auto *list : {&inputs, &outputs})
    for (const rt::TensorView &t : *list)
      if (t.numel() > maxShadowElements()) {
        ++tally().large;
        return;
      }
  std::vector<OwnedTensor> results;
  std::vector<rt::TensorView> out;
  for (const rt::TensorView &t : outputs)
    results.emplace_back(t.dtype, t.shape);
  for (OwnedTensor &t : results)
    out.push_back(t.view);
  std::vector<uint8_t> workspace;
  emu_test::EmulatedCall r = emu_test::callEmulated(fn, inputs, out, attrs, 0, 1, workspace);
  if (!r.taken) {
    Tally &t = tally();
    if (t.refused[name]++ == 0)
      t.refusal[name] = r.status.message();
    return;
  }
  ASSERT_TRUE(r.status.ok()) << name << " (emulated CUDA, in " << where() << "): "
                             << r.status.message() << "; " << plait_emu::lastFailure();
  EXPECT_EQ(r.deviceError, 0) << name << " (emulated CUDA, in " << where()
                              << "): the device flagged operands the CPU kernel took";
  for (size_t o = 0; o < outputs.size(); ++o) {
    const rt::TensorView &want = outputs[o];
    const std::string what = fmt::format("{} result {} ({} {}, in {})", name, o,
                                         rt::dtypeName(want.dtype),
                                         rt::shapeString(want.shape), where());
    if (rt::isFloat(want.dtype)) {
      OwnedTensor expected(want.dtype, want.shape);
      std::memcpy(expected.bytes.data(), want.data, want.bytes());
      std::vector<float> g = results[o].floats(), w = expected.floats();
      int reported = 0;
      for (size_t i = 0; i < w.size() && reported < 3; ++i)
        if (!close(want.dtype, g[i], w[i])) {
          ADD_FAILURE() << what << " element " << i << ": emulated CUDA " << g[i] << ", CPU "
                        << w[i];
          ++reported;
        }
    } else {
      EXPECT_EQ(std::memcmp(results[o].bytes.data(), want.data, want.bytes()), 0)
          << what << ": the integer results differ";
    }
  }
  ++tally().compared[name];
}

/// Prints what was compared and refused per op; in a run of every test, fails when a CUDA
/// kernel the emulation has was never compared (a CPU suite lost its cases, or a new CUDA
/// kernel has none).
class Summary : public ::testing::Environment {
public:
  void TearDown() override {
    const Tally &t = tally();
    std::string line;
    for (const auto &[op, n] : t.compared)
      line += fmt::format(" {}:{}", op, n);
    std::printf("[ shadowed ] %zu CUDA kernels compared with the CPU kernels:%s\n",
                t.compared.size(), line.c_str());
    if (t.large > 0)
      std::printf("[ large    ] %d calls with an operand above PLAIT_SHADOW_MAX_ELEMENTS (%lld) "
                  "left out\n",
                  t.large, static_cast<long long>(maxShadowElements()));
    for (const auto &[op, n] : t.refused)
      std::printf("[ refused  ] %s: %d calls the CUDA kernel does not take (%s)\n", op.c_str(),
                  n, t.refusal.at(op).c_str());
    if (::testing::GTEST_FLAG(filter) != "*")
      return;
    std::vector<std::string> missing;
    for (const std::string &op : rt::cudaKernelNames())
      if (!t.compared.count(op) && !kNotShadowed.count(op))
        missing.push_back(op);
    EXPECT_TRUE(missing.empty()) << "CUDA kernels no CPU kernel test exercised: "
                                 << fmt::format("{}", fmt::join(missing, ", "));
  }
};

const bool kInstalled = [] {
  rt::test::setKernelShadow(&shadow);
  ::testing::AddGlobalTestEnvironment(new Summary);
  return true;
}();

} // namespace
} // namespace plait
