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

/// `attrs` with float attribute `name` set to `value`.
void setFloat(rt::Attrs &attrs, const char *name, double value) {
  rt::AttrValue v;
  v.floats = {value};
  attrs.set(name, v);
}

/// adamw_update on the CPU and per element as the CUDA kernels compute it, with `l2` (Adam's
/// weight decay, 0 for AdamW) and `amsgrad`, compared bit for bit.
void expectAdamWMatchesTheCpuKernel(double l2, bool amsgrad) {
  std::vector<float> param = sampleValues(), grad(param.size()), m(param.size()), v(param.size()),
                     maxV(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    param[i] = std::isfinite(param[i]) ? param[i] * 0.01f : 0.5f;
    grad[i] = std::sin(float(i)) * 0.1f;
    m[i] = std::cos(float(i)) * 0.01f;
    v[i] = 0.001f * float(i % 7);
    maxV[i] = 0.001f * float(i % 5); // above the new exp_avg_sq for some, below for others
  }
  const double lr = 3e-3, step = 5, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.01;
  rt::Attrs attrs; // the op's defaults, as the CUDA host kernel reads them
  if (l2 != 0)
    setFloat(attrs, "l2", l2);
  if (amsgrad) {
    rt::AttrValue value;
    value.ints = {1};
    attrs.set("amsgrad", value);
  }
  std::vector<std::vector<int64_t>> shapes(amsgrad ? 7 : 6, {int64_t(param.size())});
  shapes[4] = shapes[5] = {};
  std::vector<std::vector<float>> inputs = {param, grad, m, v, scalar(float(lr)),
                                            scalar(float(step))};
  if (amsgrad)
    inputs.push_back(maxV);
  std::vector<std::vector<float>> cpu =
      runCpu("adamw_update", inputs, amsgrad ? 4 : 3, attrs, shapes);
  rt::cuda::AdamWFactors f; // as the CUDA kernel computes them from the f32 lr and step
  f.beta1 = beta1;
  f.beta2 = beta2;
  f.eps = eps;
  f.weightDecay = wd;
  f.l2 = l2;
  f.amsgrad = amsgrad;
  math::adamwStepFactors(double(float(lr)), double(float(step)), f);
  for (size_t i = 0; i < param.size(); ++i) {
    float p, mm, vv, newMaxV = std::nanf("");
    math::adamwElement<float>(param[i], grad[i], m[i], v[i], maxV[i], f, p, mm, vv, newMaxV);
    EXPECT_EQ(p, cpu[0][i]) << i;
    EXPECT_EQ(mm, cpu[1][i]) << i;
    EXPECT_EQ(vv, cpu[2][i]) << i;
    if (amsgrad)
      EXPECT_EQ(newMaxV, cpu[3][i]) << i;
  }
}

TEST(ElementMath, AdamWMatchesTheCpuKernelBitForBit) {
  expectAdamWMatchesTheCpuKernel(0, false);
}

TEST(ElementMath, AdamsL2MatchesTheCpuKernelBitForBit) {
  expectAdamWMatchesTheCpuKernel(0.1, false);
}

TEST(ElementMath, AmsgradMatchesTheCpuKernelBitForBit) {
  expectAdamWMatchesTheCpuKernel(0, true);
  expectAdamWMatchesTheCpuKernel(0.1, true);
}

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

/// `n` parameters for the update tests: sampleValues() scaled to weights' sizes (the
/// infinities as 0.5), then sines, enough of them that a reordered operation shows in the last
/// bit of some.
std::vector<float> updateParams(size_t n) {
  std::vector<float> param = sampleValues();
  for (float &p : param)
    p = std::isfinite(p) ? p * 0.01f : 0.5f;
  for (size_t i = param.size(); i < n; ++i)
    param.push_back(std::sin(float(i) * 0.7f));
  return param;
}

/// adagrad_update on the CPU and per element as the CUDA kernels compute it (at `step`, with
/// attributes lr_decay and weight_decay), compared bit for bit.
void expectAdagradMatchesTheCpuKernel(double lrDecay, double weightDecay, float step) {
  SCOPED_TRACE("lr_decay " + std::to_string(lrDecay) + ", weight_decay " +
               std::to_string(weightDecay) + ", step " + std::to_string(step));
  std::vector<float> param = updateParams(1000), grad(param.size()), sum(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    grad[i] = std::sin(float(i)) * 0.1f;
    sum[i] = 0.01f * float(i % 5); // zero too: the first step's sqrt(g * g) + eps
  }
  const float lr = 0.05f;
  rt::Attrs attrs; // eps at the op's default, as the CUDA host kernel reads it
  if (lrDecay != 0)
    setFloat(attrs, "lr_decay", lrDecay);
  if (weightDecay != 0)
    setFloat(attrs, "weight_decay", weightDecay);
  const std::vector<int64_t> n = {int64_t(param.size())};
  std::vector<std::vector<float>> cpu = runCpu(
      "adagrad_update", {param, grad, scalar(lr), scalar(step), sum}, 2, attrs, {n, n, {}, {}, n});
  rt::cuda::AdagradFactors f; // as the CUDA kernel computes them from the f32 lr and step
  f.lrDecay = lrDecay;
  f.weightDecay = weightDecay;
  f.eps = 1e-10;
  math::adagradStepFactors(double(lr), double(step), f);
  for (size_t i = 0; i < param.size(); ++i) {
    float p, newSum;
    math::adagradElement<float>(param[i], grad[i], sum[i], f, p, newSum);
    EXPECT_EQ(p, cpu[0][i]) << i;
    EXPECT_EQ(newSum, cpu[1][i]) << i;
  }
}

TEST(ElementMath, AdagradMatchesTheCpuKernelBitForBit) {
  expectAdagradMatchesTheCpuKernel(0, 0, 1);
  expectAdagradMatchesTheCpuKernel(0, 0, 4);
}

TEST(ElementMath, AdagradWithDecaysMatchesTheCpuKernelBitForBit) {
  expectAdagradMatchesTheCpuKernel(0.01, 0, 3);
  expectAdagradMatchesTheCpuKernel(0, 0.1, 3);
  expectAdagradMatchesTheCpuKernel(0.01, 0.1, 7);
}

/// lion_update on the CPU and per element as the CUDA kernels compute it (betas and
/// weight_decay as given), compared bit for bit; zero gradients and states included (sign 0).
void expectLionMatchesTheCpuKernel(double beta1, double beta2, double weightDecay) {
  SCOPED_TRACE("betas " + std::to_string(beta1) + "," + std::to_string(beta2) +
               ", weight_decay " + std::to_string(weightDecay));
  std::vector<float> param = updateParams(1000), grad(param.size()), expAvg(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    grad[i] = i % 11 == 0 ? 0.0f : std::sin(float(i)) * 0.1f;
    expAvg[i] = i % 11 == 0 ? 0.0f : std::cos(float(2 * i)) * 0.05f;
  }
  const float lr = 0.01f, step = 2;
  rt::Attrs attrs;
  setFloat(attrs, "beta1", beta1);
  setFloat(attrs, "beta2", beta2);
  if (weightDecay != 0)
    setFloat(attrs, "weight_decay", weightDecay);
  const std::vector<int64_t> n = {int64_t(param.size())};
  std::vector<std::vector<float>> cpu = runCpu(
      "lion_update", {param, grad, scalar(lr), scalar(step), expAvg}, 2, attrs, {n, n, {}, {}, n});
  rt::cuda::LionFactors f; // as the CUDA kernel computes them from the f32 lr
  f.beta1 = beta1;
  f.beta2 = beta2;
  f.weightDecay = weightDecay;
  math::lionStepFactors(double(lr), f);
  for (size_t i = 0; i < param.size(); ++i) {
    float p, m;
    math::lionElement<float>(param[i], grad[i], expAvg[i], f, p, m);
    EXPECT_EQ(p, cpu[0][i]) << i;
    EXPECT_EQ(m, cpu[1][i]) << i;
  }
}

TEST(ElementMath, LionMatchesTheCpuKernelBitForBit) {
  expectLionMatchesTheCpuKernel(0.9, 0.99, 0);
  expectLionMatchesTheCpuKernel(0.8, 0.95, 0.1);
}

/// rmsprop_update on the CPU and per element as the CUDA kernels compute it (attributes
/// centered, momentum and weight_decay; alpha and eps not at their defaults), compared bit for
/// bit: the new param and each state the call holds.
void expectRMSpropMatchesTheCpuKernel(bool centered, double momentum, double weightDecay) {
  SCOPED_TRACE(std::string(centered ? "centered" : "not centered") + ", momentum " +
               std::to_string(momentum) + ", weight_decay " + std::to_string(weightDecay));
  std::vector<float> param = updateParams(1000), grad(param.size()), squareAvg(param.size()),
                     gradAvg(param.size()), buffer(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    grad[i] = std::sin(float(i)) * 0.1f;
    squareAvg[i] = 0.01f * float(i % 7 + 1); // above gradAvg^2: a real centered sqrt
    gradAvg[i] = std::cos(float(i)) * 0.01f;
    buffer[i] = 0.02f * std::sin(float(3 * i));
  }
  const float lr = 0.01f, step = 3;
  const double alpha = 0.9, eps = 1e-6;
  rt::Attrs attrs;
  setFloat(attrs, "alpha", alpha);
  setFloat(attrs, "eps", eps);
  if (weightDecay != 0)
    setFloat(attrs, "weight_decay", weightDecay);
  if (momentum != 0)
    setFloat(attrs, "momentum", momentum);
  if (centered) {
    rt::AttrValue v;
    v.ints = {1};
    attrs.set("centered", v);
  }
  const std::vector<int64_t> n = {int64_t(param.size())};
  std::vector<std::vector<float>> inputs = {param, grad, scalar(lr), scalar(step), squareAvg};
  std::vector<std::vector<int64_t>> shapes = {n, n, {}, {}, n};
  if (centered) {
    inputs.push_back(gradAvg);
    shapes.push_back(n);
  }
  if (momentum != 0) {
    inputs.push_back(buffer);
    shapes.push_back(n);
  }
  std::vector<std::vector<float>> cpu =
      runCpu("rmsprop_update", inputs, inputs.size() - 3, attrs, shapes);
  rt::cuda::RMSpropFactors f; // as the CUDA kernel computes them from the f32 lr
  f.alpha = alpha;
  f.eps = eps;
  f.weightDecay = weightDecay;
  f.momentum = momentum;
  f.centered = centered;
  math::rmspropStepFactors(double(lr), f);
  for (size_t i = 0; i < param.size(); ++i) {
    float p, s, a = std::nanf(""), b = std::nanf("");
    math::rmspropElement<float>(param[i], grad[i], squareAvg[i], gradAvg[i], buffer[i], f, p, s,
                                a, b);
    EXPECT_EQ(p, cpu[0][i]) << i;
    EXPECT_EQ(s, cpu[1][i]) << i;
    if (centered)
      EXPECT_EQ(a, cpu[2][i]) << i;
    if (momentum != 0)
      EXPECT_EQ(b, cpu.back()[i]) << i;
  }
}

TEST(ElementMath, RMSpropMatchesTheCpuKernelBitForBit) {
  expectRMSpropMatchesTheCpuKernel(false, 0, 0);
}

TEST(ElementMath, CenteredRMSpropMatchesTheCpuKernelBitForBit) {
  expectRMSpropMatchesTheCpuKernel(true, 0, 0);
}

TEST(ElementMath, RMSpropWithMomentumMatchesTheCpuKernelBitForBit) {
  expectRMSpropMatchesTheCpuKernel(false, 0.9, 0);
  expectRMSpropMatchesTheCpuKernel(true, 0.9, 0);
}

TEST(ElementMath, RMSpropWithWeightDecayMatchesTheCpuKernelBitForBit) {
  expectRMSpropMatchesTheCpuKernel(false, 0, 0.01);
  expectRMSpropMatchesTheCpuKernel(true, 0.9, 0.01);
}

// NAdam's momentum products (runtime/OptimizerSchedule.h) stop their walk once the f32
// product underflows to 0; the coefficients must be those of the full walk, at any step.
TEST(ElementMath, NAdamProductsStopOnlyWhereTheFullWalkIsZero) {
  for (double beta1 : {0.9, 0.99, 0.5})
    for (double decay : {4e-3, 0.1, 0.0})
      for (double step : {1.0, 2.0, 10.0, 150.0, 1000.0, 5000.0}) {
        float product = 1.0f;
        for (double t = 1; t <= step; t += 1)
          product = product * float(rt::nadamMu(beta1, decay, t));
        rt::NAdamCoefficients c = rt::nadamCoefficients(beta1, decay, step);
        EXPECT_EQ(c.product, double(product)) << beta1 << " " << decay << " " << step;
        EXPECT_EQ(c.productNext, double(product) * rt::nadamMu(beta1, decay, step + 1));
        EXPECT_EQ(c.mu, rt::nadamMu(beta1, decay, step));
      }
}

} // namespace
} // namespace plait
