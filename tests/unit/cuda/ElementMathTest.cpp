// The CUDA kernels' per-element math (runtime/cuda/kernels/ElementMath.h), compiled by the
// host compiler, against the CPU kernels on the same inputs: what can be checked of the
// device kernels without a device. Transcendentals differ by design (CUDA's expf/erff versus
// the CPU's vectorised approximations), so they are compared to 2e-6; everything else, the
// optimizer updates included, must agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/cuda/kernels/ElementMath.h"

namespace plait {
namespace {

using rt::cuda::BinaryOp;
using rt::cuda::UnaryOp;
namespace math = rt::cuda::math;

/// Runs CPU kernel `name` on f32 tensors of `n` elements (inputs given, outputs returned).
std::vector<std::vector<float>> runCpu(const std::string &name,
                                       const std::vector<std::vector<float>> &inputs,
                                       size_t outputs, const rt::Attrs &attrs = {},
                                       std::vector<std::vector<int64_t>> shapes = {}) {
  std::vector<std::vector<float>> in = inputs, out(outputs);
  std::vector<rt::TensorView> inViews, outViews;
  for (size_t i = 0; i < in.size(); ++i)
    inViews.push_back({in[i].data(), rt::DType::F32,
                       i < shapes.size() ? shapes[i]
                                         : std::vector<int64_t>{int64_t(in[i].size())}});
  for (size_t o = 0; o < outputs; ++o) {
    out[o].assign(inputs[0].size(), std::nanf(""));
    outViews.push_back({out[o].data(), rt::DType::F32, inViews[0].shape});
  }
  std::vector<uint8_t> workspace(1 << 16);
  rt::KernelCall call{inViews, outViews, attrs};
  call.workspace = workspace.data();
  call.workspaceBytes = workspace.size();
  rt::KernelFn fn = rt::findKernel(name);
  EXPECT_NE(fn, nullptr) << name;
  rt::Status s = fn(call);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return out;
}

std::vector<float> sampleValues() {
  std::vector<float> v;
  for (int i = -40; i <= 40; ++i)
    v.push_back(float(i) * 0.173f);
  v.insert(v.end(), {0.0f, -0.0f, 1e-20f, -1e-20f, 88.0f, -88.0f, 1e6f,
                     std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity()});
  return v;
}

bool close(float a, float b, float tolerance) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= tolerance * std::max(1.0f, std::fabs(b));
}

struct UnaryCase {
  const char *name;
  UnaryOp op;
  float tolerance; // 0: bit for bit
  bool positiveOnly = false;
};

TEST(ElementMath, UnaryOpsMatchTheCpuKernels) {
  const UnaryCase cases[] = {
      {"exp", UnaryOp::Exp, 2e-6f},        {"log", UnaryOp::Log, 2e-6f, true},
      {"sqrt", UnaryOp::Sqrt, 0, true},    {"rsqrt", UnaryOp::Rsqrt, 0, true},
      {"reciprocal", UnaryOp::Reciprocal, 0}, {"erf", UnaryOp::Erf, 2e-6f},
      {"tanh", UnaryOp::Tanh, 2e-6f},      {"sigmoid", UnaryOp::Sigmoid, 2e-6f},
      {"silu", UnaryOp::Silu, 2e-6f},      {"softplus", UnaryOp::Softplus, 2e-6f},
      {"floor", UnaryOp::Floor, 0},        {"ceil", UnaryOp::Ceil, 0},
      {"round", UnaryOp::Round, 0},        {"gelu", UnaryOp::GeluErf, 2e-6f},
      {"neg", UnaryOp::Neg, 0},            {"abs", UnaryOp::Abs, 0},
      {"relu", UnaryOp::Relu, 0},          {"sign", UnaryOp::Sign, 0},
  };
  for (const UnaryCase &c : cases) {
    std::vector<float> x = sampleValues();
    if (c.positiveOnly)
      for (float &v : x)
        v = std::fabs(v);
    std::vector<float> cpu = runCpu(c.name, {x}, 1)[0];
    for (size_t i = 0; i < x.size(); ++i) {
      float device = math::unary<float>(c.op, x[i], {});
      if (c.tolerance == 0)
        EXPECT_TRUE(std::memcmp(&device, &cpu[i], 4) == 0 || (std::isnan(device) && std::isnan(cpu[i])))
            << c.name << "(" << x[i] << "): device math " << device << ", CPU " << cpu[i];
      else
        EXPECT_TRUE(close(device, cpu[i], c.tolerance))
            << c.name << "(" << x[i] << "): device math " << device << ", CPU " << cpu[i];
    }
  }
}

TEST(ElementMath, ClampAndLeakyReluReadTheirAttributes) {
  std::vector<float> x = sampleValues();
  rt::Attrs attrs;
  rt::AttrValue lo, hi;
  lo.floats = {-1.5};
  hi.floats = {2.0};
  attrs.set("min", lo);
  attrs.set("max", hi);
  std::vector<float> cpu = runCpu("clamp", {x}, 1, attrs)[0];
  rt::cuda::UnaryParams p;
  p.lo = -1.5;
  p.hi = 2.0;
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(math::unary<float>(UnaryOp::Clamp, x[i], p), cpu[i]) << x[i];
}

TEST(ElementMath, BinaryOpsMatchTheCpuKernelsBitForBit) {
  const std::pair<const char *, BinaryOp> cases[] = {
      {"add", BinaryOp::Add}, {"sub", BinaryOp::Sub}, {"mul", BinaryOp::Mul},
      {"div", BinaryOp::Div}, {"max", BinaryOp::Max}, {"min", BinaryOp::Min},
      {"pow", BinaryOp::Pow}};
  std::vector<float> a = sampleValues(), b(a.rbegin(), a.rend());
  for (auto &[name, op] : cases) {
    std::vector<float> cpu = runCpu(name, {a, b}, 1)[0];
    for (size_t i = 0; i < a.size(); ++i) {
      float device = math::arithmetic<float>(op, a[i], b[i]);
      EXPECT_TRUE(std::memcmp(&device, &cpu[i], 4) == 0 || (std::isnan(device) && std::isnan(cpu[i])))
          << name << "(" << a[i] << ", " << b[i] << "): device math " << device << ", CPU "
          << cpu[i];
    }
  }
  // pow by a scalar 2 or 3: products, as the CPU's powBySmallInteger.
  for (float e : {2.0f, 3.0f}) {
    std::vector<float> cpu = runCpu("pow", {a, {e}}, 1, {}, {{int64_t(a.size())}, {1}})[0];
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(math::arithmetic<float>(BinaryOp::Pow, a[i], e), cpu[i]) << a[i] << "^" << e;
  }
}

TEST(ElementMath, IntegerArithmeticWrapsAsOnTheCpu) {
  EXPECT_EQ(math::arithmetic<int64_t>(BinaryOp::Add, INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(math::arithmetic<int64_t>(BinaryOp::Div, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(math::arithmetic<int64_t>(BinaryOp::Mod, -7, 3), 2);
  EXPECT_EQ(math::arithmetic<int64_t>(BinaryOp::Pow, 3, 4), 81);
  EXPECT_EQ(math::arithmetic<int64_t>(BinaryOp::Pow, -1, -3), -1);
  EXPECT_EQ(math::unary<int32_t>(UnaryOp::Neg, INT32_MIN, {}), INT32_MIN);
  EXPECT_EQ(math::predicate<float>(BinaryOp::Greater, 2.0f, 1.0f), 1);
  EXPECT_EQ(math::predicate<float>(BinaryOp::Less, std::nanf(""), 1.0f), 0);
}

/// The f32 scalar tensor holding `v` (the runtime's "lr" and "step").
std::vector<float> scalar(float v) { return {v}; }

/// adamw_update on the CPU and per element as the CUDA kernels compute it, with `l2` (Adam's
/// weight decay, 0 for AdamW), compared bit for bit.
void expectAdamWMatchesTheCpuKernel(double l2) {
  std::vector<float> param = sampleValues(), grad(param.size()), m(param.size()), v(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    param[i] = std::isfinite(param[i]) ? param[i] * 0.01f : 0.5f;
    grad[i] = std::sin(float(i)) * 0.1f;
    m[i] = std::cos(float(i)) * 0.01f;
    v[i] = 0.001f * float(i % 7);
  }
  const double lr = 3e-3, step = 5, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.01;
  rt::Attrs attrs; // the op's defaults, as the CUDA host kernel reads them
  if (l2 != 0) {
    rt::AttrValue value;
    value.floats = {l2};
    attrs.set("l2", value);
  }
  std::vector<std::vector<int64_t>> shapes(6, {int64_t(param.size())});
  shapes[4] = shapes[5] = {};
  std::vector<std::vector<float>> cpu = runCpu(
      "adamw_update", {param, grad, m, v, scalar(float(lr)), scalar(float(step))}, 3, attrs,
      shapes);
  rt::cuda::AdamWFactors f; // as the CUDA kernel computes them from the f32 lr and step
  f.beta1 = beta1;
  f.beta2 = beta2;
  f.eps = eps;
  f.weightDecay = wd;
  f.l2 = l2;
  math::adamwStepFactors(double(float(lr)), double(float(step)), f);
  for (size_t i = 0; i < param.size(); ++i) {
    float p, mm, vv;
    math::adamwElement<float>(param[i], grad[i], m[i], v[i], f, p, mm, vv);
    EXPECT_EQ(p, cpu[0][i]) << i;
    EXPECT_EQ(mm, cpu[1][i]) << i;
    EXPECT_EQ(vv, cpu[2][i]) << i;
  }
}

TEST(ElementMath, AdamWMatchesTheCpuKernelBitForBit) { expectAdamWMatchesTheCpuKernel(0); }

TEST(ElementMath, AdamsL2MatchesTheCpuKernelBitForBit) { expectAdamWMatchesTheCpuKernel(0.1); }

TEST(ElementMath, SgdWithMomentumMatchesTheCpuKernelBitForBit) {
  std::vector<float> param(64), grad(64), buffer(64);
  for (size_t i = 0; i < param.size(); ++i) {
    param[i] = std::sin(float(i));
    grad[i] = std::cos(float(i)) * 0.3f;
    buffer[i] = 0.01f * float(i);
  }
  rt::Attrs attrs;
  rt::AttrValue momentum, decay;
  momentum.floats = {0.9};
  decay.floats = {1e-4};
  attrs.set("momentum", momentum);
  attrs.set("weight_decay", decay);
  for (float step : {1.0f, 2.0f}) {
    std::vector<std::vector<int64_t>> shapes = {{64}, {64}, {}, {}, {64}};
    std::vector<std::vector<float>> cpu =
        runCpu("sgd_update", {param, grad, scalar(0.05f), scalar(step), buffer}, 2, attrs, shapes);
    rt::cuda::SgdFactors f;
    f.lr = double(0.05f);
    f.momentum = 0.9;
    f.weightDecay = 1e-4;
    f.first = step == 1;
    for (size_t i = 0; i < param.size(); ++i) {
      float newBuffer = 0;
      float p = math::sgdElement<float>(param[i], grad[i], buffer[i], f, newBuffer);
      EXPECT_EQ(p, cpu[0][i]) << "step " << step << " element " << i;
      EXPECT_EQ(newBuffer, cpu[1][i]) << "step " << step << " element " << i;
    }
  }
}

} // namespace
} // namespace plait
