// Test helpers for the CPU kernels.
#include "KernelTestSupport.h"

#include <cmath>

namespace plait::rt::test {

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
  KernelCall call{in, out, attrs};
  result.status = fn(call);
  return result;
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
