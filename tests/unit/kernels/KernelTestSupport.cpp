// Test helpers for the CPU kernels.
#include "KernelTestSupport.h"

#include <cmath>
#include <random>

#include "runtime/cpu/Workspace.h"
#ifdef PLAIT_COUNT_ALLOCATIONS
#include "AllocationCounter.h"
#endif

namespace plait::rt::test {

std::vector<double> OwnedTensor::doubles() const {
  if (view.dtype == DType::F64)
    return values<double>();
  std::vector<float> f = floats();
  return std::vector<double>(f.begin(), f.end());
}

std::vector<float> OwnedTensor::floats() const {
  std::vector<float> out(view.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    switch (view.dtype) {
    case DType::F32:
      out[i] = view.as<float>()[i];
      break;
    case DType::F64:
      out[i] = float(view.as<double>()[i]);
      break;
    case DType::BF16:
      out[i] = bf16ToFloat(view.as<uint16_t>()[i]);
      break;
    case DType::F16:
      out[i] = f16ToFloat(view.as<uint16_t>()[i]);
      break;
    default:
      ADD_FAILURE() << "floats() of a " << dtypeName(view.dtype) << " tensor";
      return {};
    }
  }
  return out;
}

OwnedTensor randomFloats(std::vector<int64_t> shape, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v)
    x = dist(rng);
  return makeFloat(DType::F32, std::move(shape), v);
}

std::vector<double> pattern(int64_t count, int mod, double offset, double scale) {
  std::vector<double> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = (double(i % mod) + offset) * scale;
  return v;
}

OwnedTensor makeFloat(DType dtype, std::vector<int64_t> shape, const std::vector<double> &values) {
  OwnedTensor t(dtype, std::move(shape));
  EXPECT_EQ((int64_t)values.size(), t.view.numel()) << "test tensor size mismatch";
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
    case DType::F32:
      t.view.as<float>()[i] = float(values[i]);
      break;
    case DType::F64:
      t.view.as<double>()[i] = values[i];
      break;
    case DType::BF16:
      t.view.as<uint16_t>()[i] = floatToBf16(float(values[i]));
      break;
    case DType::F16:
      t.view.as<uint16_t>()[i] = floatToF16(float(values[i]));
      break;
    default:
      ADD_FAILURE() << "makeFloat with " << dtypeName(dtype);
    }
  }
  return t;
}

OwnedTensor convertedTo(DType dtype, const OwnedTensor &t) {
  std::vector<double> values = t.doubles();
  return makeFloat(dtype, t.view.shape, values);
}

KernelResult runKernel(const std::string &name, const std::vector<OwnedTensor> &inputs,
                       const std::vector<std::pair<DType, std::vector<int64_t>>> &outputs,
                       const Attrs &attrs) {
  KernelResult result;
  KernelFn fn = findKernel(name);
  if (!fn) {
    result.status = Status::errorf("no kernel named {}", name);
    return result;
  }
  std::vector<TensorView> in;
  for (const OwnedTensor &t : inputs)
    in.push_back(t.view);
  for (const auto &[dtype, shape] : outputs)
    result.outputs.emplace_back(dtype, shape);
  std::vector<TensorView> out;
  for (OwnedTensor &t : result.outputs)
    out.push_back(t.view);
  result.status = callKernel(name, in, out, attrs);
  return result;
}

namespace {
KernelShadow kernelShadow = nullptr;
} // namespace

void setKernelShadow(KernelShadow shadow) { kernelShadow = shadow; }

Status callKernel(const std::string &name, std::vector<TensorView> &inputs,
                  std::vector<TensorView> &outputs, const Attrs &attrs) {
  KernelFn fn = findKernel(name);
  if (!fn)
    return Status::errorf("no kernel named {}", name);
  // The inputs as the shadow will see them (a kernel may write an input it aliases).
  std::vector<std::vector<uint8_t>> before;
  std::vector<TensorView> shadowInputs;
  if (kernelShadow)
    for (const TensorView &t : inputs) {
      before.emplace_back(static_cast<const uint8_t *>(t.data),
                          static_cast<const uint8_t *>(t.data) + t.bytes());
      shadowInputs.push_back(t);
      shadowInputs.back().data = before.back().data();
    }
  std::vector<OperandType> in, out;
  for (const TensorView &t : inputs)
    in.push_back({t.dtype, &t.shape});
  for (const TensorView &t : outputs)
    out.push_back({t.dtype, &t.shape});
  uint64_t declared = kernelWorkspaceBytes(name, in, out, attrs);
  // The workspace sits at the end of an over-allocated block: a kernel writing past what it
  // was given corrupts the guard bytes after it.
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> block(declared + kWorkspaceAlignment + kGuard, 0xAB);
  uint8_t *base = block.data();
  base += (kWorkspaceAlignment - reinterpret_cast<uintptr_t>(base) % kWorkspaceAlignment) %
          kWorkspaceAlignment;
  uint64_t used = 0;
  KernelCall call{inputs, outputs, attrs, 0, 1, declared ? base : nullptr, declared, &used};
#ifdef PLAIT_COUNT_ALLOCATIONS
  alloc_test::startCounting();
  Status s = fn(call);
  alloc_test::AllocationReport report = alloc_test::stopCounting();
  if (s.ok()) // error paths may allocate their messages
    EXPECT_EQ(report.allocationsBy("plait") + report.freesBy("plait"), 0u)
        << name << " allocated: " << report.describe() << "\n" << report.firstPlaitStack;
#else
  Status s = fn(call);
#endif
  for (size_t i = 0; i < kGuard; ++i)
    if (base[declared + i] != 0xAB) {
      ADD_FAILURE() << name << " wrote past its " << declared << "-byte workspace";
      break;
    }
  if (s.ok())
    EXPECT_EQ(used, declared) << name << ": kernelWorkspaceBytes declares " << declared
                              << " bytes, the kernel used " << used;
  if (s.ok() && kernelShadow)
    kernelShadow(name, shadowInputs, outputs, attrs);
  return s;
}

OwnedTensor runOk(const std::string &name, const std::vector<OwnedTensor> &inputs, DType dtype,
                  std::vector<int64_t> shape, const Attrs &attrs) {
  KernelResult r = runKernel(name, inputs, {{dtype, std::move(shape)}}, attrs);
  EXPECT_TRUE(r.status.ok()) << name << ": " << r.status.message();
  return r.outputs.at(0);
}

template <typename T>
static ::testing::AssertionResult closeImpl(const std::vector<T> &actual,
                                            const std::vector<double> &expected, double rtol,
                                            double atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    if (std::isnan(e) && std::isnan(a))
      continue;
    if (std::isinf(e) && a == e)
      continue;
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e)))
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs expected " << e;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult allClose(const std::vector<float> &actual,
                                    const std::vector<double> &expected, double rtol,
                                    double atol) {
  return closeImpl(actual, expected, rtol, atol);
}
::testing::AssertionResult allClose(const std::vector<double> &actual,
                                    const std::vector<double> &expected, double rtol,
                                    double atol) {
  return closeImpl(actual, expected, rtol, atol);
}

} // namespace plait::rt::test
