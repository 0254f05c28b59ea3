// Elementwise unary kernels: math functions, activations, clamp, not.
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

const std::vector<double> kSample = {-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0};

std::vector<float> unaryF32(const std::string &op, const std::vector<double> &x,
                            const Attrs &attrs = Attrs()) {
  return runOk(op, {makeFloat(DType::F32, {(int64_t)x.size()}, x)}, DType::F32,
               {(int64_t)x.size()}, attrs)
      .floats();
}

TEST(UnaryKernels, MathFunctionsMatchLibm) {
  std::vector<double> x = {0.25, 0.5, 1.0, 2.0, 4.0};
  struct Case {
    const char *op;
    double (*ref)(double);
  } cases[] = {{"exp", [](double v) { return std::exp(v); }},
               {"log", [](double v) { return std::log(v); }},
               {"sqrt", [](double v) { return std::sqrt(v); }},
               {"rsqrt", [](double v) { return 1 / std::sqrt(v); }},
               {"reciprocal", [](double v) { return 1 / v; }},
               {"erf", [](double v) { return std::erf(v); }},
               {"tanh", [](double v) { return std::tanh(v); }},
               {"sin", [](double v) { return std::sin(v); }},
               {"cos", [](double v) { return std::cos(v); }},
               {"floor", [](double v) { return std::floor(v * 1.5); }},
               {"ceil", [](double v) { return std::ceil(v * 1.5); }}};
  for (const Case &c : cases) {
    bool rounding = std::string(c.op) == "floor" || std::string(c.op) == "ceil";
    std::vector<double> in = x, expected;
    if (rounding)
      for (double &v : in)
        v *= 1.5;
    for (double v : x)
      expected.push_back(c.ref(v));
    EXPECT_TRUE(allClose(unaryF32(c.op, in), expected)) << c.op;
    auto f64 = runOk(c.op, {makeFloat(DType::F64, {5}, in)}, DType::F64, {5});
    EXPECT_TRUE(allClose(f64.values<double>(), expected, 1e-12, 0)) << c.op << " f64";
  }
}

TEST(UnaryKernels, ActivationsMatchPyTorch) {
  EXPECT_TRUE(allClose(unaryF32("gelu", kSample),
                       {-0.00404969409489031, -0.15865525393145702, -0.15426876936299344, 0.0,
                        0.34573123063700656, 0.841344746068543, 2.99595030590511}));
  EXPECT_TRUE(allClose(unaryF32("gelu", kSample, AttrsBuilder().s("approximate", "tanh").build()),
                       {-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
                        0.34571400982514394, 0.8411919906082768, 2.996362607918227}));
  EXPECT_TRUE(allClose(unaryF32("softplus", kSample),
                       {0.04858735157374206, 0.31326168751822286, 0.4740769841801067,
                        0.6931471805599453, 0.9740769841801067, 1.3132616875182228,
                        3.048587351573742}));
  EXPECT_TRUE(allClose(unaryF32("silu", kSample),
                       {-0.14227761953270035, -0.2689414213699951, -0.1887703343990727, 0.0,
                        0.3112296656009273, 0.7310585786300049, 2.8577223804672998}));
  EXPECT_TRUE(allClose(unaryF32("elu", kSample, AttrsBuilder().f("alpha", 0.5).build()),
                       {-0.475106465816068, -0.31606027941427883, -0.1967346701436833, 0.0, 0.5,
                        1.0, 3.0}));
  EXPECT_TRUE(allClose(unaryF32("hard_sigmoid", kSample),
                       {0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0}));
  EXPECT_TRUE(allClose(unaryF32("hard_sigmoid", kSample,
                                AttrsBuilder().f("alpha", 1.0 / 6).f("beta", 0.5).build()),
                       {0.0, 1.0 / 3, 5.0 / 12, 0.5, 7.0 / 12, 2.0 / 3, 1.0}));
  EXPECT_TRUE(allClose(unaryF32("leaky_relu", kSample),
                       {-0.03, -0.01, -0.005, 0.0, 0.5, 1.0, 3.0}));
  EXPECT_TRUE(allClose(unaryF32("leaky_relu", kSample, AttrsBuilder().f("alpha", 0.2).build()),
                       {-0.6, -0.2, -0.1, 0.0, 0.5, 1.0, 3.0}));
}

TEST(UnaryKernels, SigmoidAndSoftplusAreStableAtExtremes) {
  std::vector<double> x = {-1000, -100, 0, 100, 1000};
  auto sig = unaryF32("sigmoid", x);
  EXPECT_TRUE(allClose(sig, {0, 0, 0.5, 1, 1}));
  auto sp = unaryF32("softplus", x);
  EXPECT_TRUE(allClose(sp, {0, 0, std::log(2.0), 100, 1000}));
  auto silu = unaryF32("silu", x);
  EXPECT_TRUE(allClose(silu, {0, 0, 0, 100, 1000}));
  for (float v : sig)
    EXPECT_FALSE(std::isnan(v));
}

TEST(UnaryKernels, VectorisedF32MathTracksLibmAcrossTheRange) {
  // exp, erf, sigmoid and gelu use branch-free f32 approximations; sweep them against libm.
  std::vector<double> x;
  for (double v = -110; v <= 110; v += 0.0137)
    x.push_back(float(v));
  auto in = makeFloat(DType::F32, {(int64_t)x.size()}, x);
  auto exp = runOk("exp", {in}, DType::F32, {(int64_t)x.size()}).floats();
  auto erf = runOk("erf", {in}, DType::F32, {(int64_t)x.size()}).floats();
  auto sig = runOk("sigmoid", {in}, DType::F32, {(int64_t)x.size()}).floats();
  auto gelu = runOk("gelu", {in}, DType::F32, {(int64_t)x.size()}).floats();
  for (size_t i = 0; i < x.size(); ++i) {
    double e = std::exp(x[i]);
    if (e > 1.2e-38 && e < 3.4e38)
      ASSERT_NEAR(exp[i], e, 3e-7 * e) << "exp(" << x[i] << ")";
    else if (e <= 1.2e-38) // denormal results: within a few units of the smallest denormal
      ASSERT_NEAR(exp[i], e, 5e-45) << "exp(" << x[i] << ")";
    else
      ASSERT_TRUE(std::isinf(exp[i])) << "exp(" << x[i] << ")";
    ASSERT_NEAR(erf[i], std::erf(x[i]), 2e-7 + 1e-6 * std::abs(std::erf(x[i])))
        << "erf(" << x[i] << ")";
    double s = 1 / (1 + std::exp(-x[i]));
    ASSERT_NEAR(sig[i], s, 3e-7 * s + 1e-30) << "sigmoid(" << x[i] << ")";
    double g = 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)));
    ASSERT_NEAR(gelu[i], g, 1e-5 + 1e-4 * std::abs(g)) << "gelu(" << x[i] << ")";
  }
  double inf = std::numeric_limits<double>::infinity();
  auto special = runOk("exp", {makeFloat(DType::F32, {3}, {std::nan(""), inf, -inf})}, DType::F32,
                       {3}).floats();
  EXPECT_TRUE(std::isnan(special[0]));
  EXPECT_TRUE(std::isinf(special[1]) && special[1] > 0);
  EXPECT_EQ(special[2], 0.0f);
}

// bf16/f16 maps compute in f32 pieces of 2^20 elements (Workspace.h halfMapPiece): over
// three pieces, the bits of the f32 kernel on the widened input, rounded; the workspace
// one piece (the harness checks the declared bytes are the used ones).
TEST(UnaryKernels, HalfMapsComputeInF32Pieces) {
  const std::vector<int64_t> shape{3, 700001};
  struct Case {
    const char *kernel;
    Attrs attrs;
  };
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : std::vector<Case>{{"gelu", AttrsBuilder().s("approximate", "tanh").build()},
                                           {"exp", {}},
                                           {"leaky_relu", AttrsBuilder().f("alpha", 0.25).build()}}) {
      std::vector<float> r = randomFloats(shape, 5, -4, 4).floats();
      OwnedTensor half = makeFloat(dtype, shape, std::vector<double>(r.begin(), r.end()));
      std::vector<float> w = half.floats();
      OwnedTensor wide = makeFloat(DType::F32, shape, std::vector<double>(w.begin(), w.end()));
      std::vector<float> f32 = runOk(c.kernel, {wide}, DType::F32, shape, c.attrs).floats();
      std::vector<float> want =
          makeFloat(dtype, shape, std::vector<double>(f32.begin(), f32.end())).floats();
      EXPECT_EQ(runOk(c.kernel, {half}, dtype, shape, c.attrs).floats(), want)
          << c.kernel << " " << dtypeName(dtype);
    }
}

TEST(UnaryKernels, RoundIsHalfToEven) {
  EXPECT_TRUE(allClose(unaryF32("round", {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6}),
                       {0, 2, 2, 0, -2, -2, 2, 3}));
}

TEST(UnaryKernels, NumericOpsOnIntegers) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto x = make<int64_t>({5}, {-7, 0, 3, kMin, 9});
  EXPECT_EQ(runOk("neg", {x}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{7, 0, -3, kMin, -9}));
  EXPECT_EQ(runOk("abs", {x}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{7, 0, 3, kMin, 9}));
  EXPECT_EQ(runOk("relu", {x}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{0, 0, 3, 0, 9}));
  EXPECT_EQ(runOk("sign", {x}, DType::I64, {5}).values<int64_t>(),
            (std::vector<int64_t>{-1, 0, 1, -1, 1}));
  auto y = make<int32_t>({3}, {-2, 0, 5});
  EXPECT_EQ(runOk("sign", {y}, DType::I32, {3}).values<int32_t>(),
            (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_EQ(runOk("neg", {y}, DType::I32, {3}).values<int32_t>(),
            (std::vector<int32_t>{2, 0, -5}));
}

TEST(UnaryKernels, ReluAndSignPropagateNaN) {
  double nan = std::nan("");
  auto relu = unaryF32("relu", {nan, -1, 2});
  EXPECT_TRUE(std::isnan(relu[0]));
  EXPECT_EQ(relu[1], 0);
  auto sign = unaryF32("sign", {nan, -0.5, 0, 3});
  EXPECT_TRUE(std::isnan(sign[0]));
  EXPECT_TRUE(allClose(std::vector<float>{sign[1], sign[2], sign[3]}, {-1, 0, 1}));
}

TEST(UnaryKernels, ClampBoundsAreOptional) {
  std::vector<double> x = {-2, -0.5, 0.5, 7};
  EXPECT_TRUE(allClose(unaryF32("clamp", x, AttrsBuilder().f("min", 0).f("max", 6).build()),
                       {0, 0, 0.5, 6}));
  EXPECT_TRUE(allClose(unaryF32("clamp", x, AttrsBuilder().f("min", 0).build()), {0, 0, 0.5, 7}));
  EXPECT_TRUE(allClose(unaryF32("clamp", x, AttrsBuilder().f("max", 0).build()),
                       {-2, -0.5, 0, 0}));
  EXPECT_TRUE(allClose(unaryF32("clamp", x), x));
  // min > max: everything becomes max, as numpy.clip does.
  EXPECT_TRUE(allClose(unaryF32("clamp", x, AttrsBuilder().f("min", 3).f("max", 1).build()),
                       {1, 1, 1, 1}));
  auto nanOut = unaryF32("clamp", {std::nan("")}, AttrsBuilder().f("min", 0).f("max", 1).build());
  EXPECT_TRUE(std::isnan(nanOut[0]));
}

TEST(UnaryKernels, ClampIntegersWithFractionalBounds) {
  auto x = make<int32_t>({5}, {-3, -1, 0, 2, 9});
  auto out = runOk("clamp", {x}, DType::I32, {5},
                   AttrsBuilder().f("min", -1.5).f("max", 2.5).build());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{-1, -1, 0, 2, 2}));
  auto big = make<int64_t>({2}, {-5, 5});
  auto wide = runOk("clamp", {big}, DType::I64, {2},
                    AttrsBuilder().f("min", -1e300).f("max", 1e300).build());
  EXPECT_EQ(wide.values<int64_t>(), (std::vector<int64_t>{-5, 5}));
}

// bf16/f16 clamp reads each element widened and rounds the clamped value back (no f32
// copies; the harness checks the workspace is the rule's none): the f32 kernel's bits,
// with a bound that bf16 cannot hold exactly, and NaN passing through.
TEST(UnaryKernels, HalfClampReadsElementsWidened) {
  for (DType dt : {DType::BF16, DType::F16}) {
    OwnedTensor r = randomFloats({3001}, 5, -4, 4);
    r.view.as<float>()[17] = std::nanf("");
    OwnedTensor x = convertedTo(dt, r);
    const Attrs attrs = AttrsBuilder().f("min", -1.0009765).f("max", 2.5).build();
    OwnedTensor want = runOk("clamp", {convertedTo(DType::F32, x)}, DType::F32, {3001}, attrs);
    EXPECT_EQ(runOk("clamp", {x}, dt, {3001}, attrs).bytes, convertedTo(dt, want).bytes)
        << dtypeName(dt);
  }
}

TEST(UnaryKernels, NotOnBool) {
  auto out = runOk("not", {make<uint8_t>({3}, {0, 1, 0})}, DType::I1, {3});
  EXPECT_EQ(out.values<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(UnaryKernels, HalfPrecisionIsComputedInF32) {
  for (DType dt : {DType::BF16, DType::F16}) {
    auto out = runOk("exp", {makeFloat(dt, {3}, {0.0, 1.0, -1.0})}, dt, {3});
    EXPECT_EQ(out.view.dtype, dt);
    EXPECT_TRUE(allClose(out.floats(), {1.0, std::exp(1.0), std::exp(-1.0)}, 1e-2, 0))
        << dtypeName(dt);
    auto neg = runOk("neg", {makeFloat(dt, {2}, {1.5, -2.0})}, dt, {2});
    EXPECT_TRUE(allClose(neg.floats(), {-1.5, 2.0})) << dtypeName(dt);
  }
}

TEST(UnaryKernels, RejectsBadDtypesAndShapes) {
  auto r = runKernel("exp", {make<int64_t>({2}, {1, 2})}, {{DType::I64, {2}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "exp: unsupported dtype i64");
  r = runKernel("relu", {make<uint8_t>({1}, {1})}, {{DType::I1, {1}}});
  EXPECT_EQ(r.status.message(), "relu: unsupported dtype i1");
  r = runKernel("not", {make<float>({1}, {1})}, {{DType::F32, {1}}});
  EXPECT_EQ(r.status.message(), "not: unsupported dtype f32");
  r = runKernel("exp", {make<float>({2}, {1, 2})}, {{DType::F32, {3}}});
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("exp: output has shape [3]"), std::string::npos)
      << r.status.message();
  r = runKernel("exp", {make<float>({2}, {1, 2})}, {{DType::F64, {2}}});
  EXPECT_EQ(r.status.message(), "exp: unsupported dtype f32 x f64");
  r = runKernel("exp", {}, {{DType::F32, {2}}});
  EXPECT_EQ(r.status.message(), "exp: expected 1 inputs, got 0");
  r = runKernel("gelu", {make<float>({1}, {1})}, {{DType::F32, {1}}},
                AttrsBuilder().s("approximate", "fast").build());
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("approximate"), std::string::npos);
}

} // namespace
} // namespace plait::rt::test
