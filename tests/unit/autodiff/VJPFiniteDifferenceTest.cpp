// Checks every differentiable op's VJP against central finite differences in float64.
//
// Each case is a function of float64 arguments returning one tensor y. The harness forms
// the scalar L = sum(y * W) with fixed pseudo-random weights W, builds dL/darg with the
// compiler's autodiff, compiles the function to a plan, runs it on the CPU runtime, and
// compares every gradient element with (L(x + h) - L(x - h)) / 2h.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "codegen/PlanBuilder.h"
#include "codegen/mlir/PlanWriter.h"
#include "ir/PlaitDialect.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/autodiff/Autodiff.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

namespace {

struct VJPCase {
  const char *name;
  const char *mlir;       // func.func @main(f64 args...) -> tensor<...xf64>
  double lo = -1, hi = 1; // range of the random inputs
  bool expandNormGrads = false; // norm gradients as plait-expand-norm-grad writes them
};

std::ostream &operator<<(std::ostream &os, const VJPCase &c) { return os << c.name; }

/// Compiles `c` with its gradients as extra outputs and runs it.
class GradientHarness {
public:
  explicit GradientHarness(const VJPCase &c) : name_(c.name), expand_(c.expandNormGrads) {
    registry_.insert<plait::PlaitDialect, func::FuncDialect>();
    plait::registerVJPInterfaces(registry_);
    ctx_ = std::make_unique<MLIRContext>(registry_);
    ctx_->loadAllAvailableDialects();
    module_ = parseSourceString<ModuleOp>(c.mlir, ctx_.get());
  }

  /// Builds L and the gradients, then the plan. Returns false with `error` set on failure.
  bool compile(std::string &error) {
    if (!module_) {
      error = "case does not parse";
      return false;
    }
    auto func = *module_->getOps<func::FuncOp>().begin();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value y = ret.getOperand(0);
    auto yType = cast<RankedTensorType>(y.getType());
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> dist(0.5, 1.5);
    SmallVector<double> weights;
    for (int64_t i = 0; i < yType.getNumElements(); ++i)
      weights.push_back(dist(rng) * (i % 2 ? -1 : 1));
    Value w = b.create<plait::ConstantOp>(loc, DenseElementsAttr::get(yType, ArrayRef<double>(weights)));
    Value prod = b.create<plait::MulOp>(loc, y, w);
    Value loss = b.create<plait::ReduceSumOp>(loc, prod, b.getDenseI64ArrayAttr({}), b.getBoolAttr(false));

    SmallVector<Value> wrt(func.getArguments().begin(), func.getArguments().end());
    auto grads = plait::differentiate(func, loss, wrt);
    if (failed(grads)) {
      error = "autodiff failed";
      return false;
    }
    SmallVector<Value> results{loss};
    for (Value arg : wrt) {
      Value g = grads->lookup(arg);
      if (!g) { // no gradient reaches this argument: its gradient is zero
        b.setInsertionPoint(ret);
        auto type = cast<RankedTensorType>(arg.getType());
        g = b.create<plait::ConstantOp>(loc, DenseElementsAttr::get(type, b.getF64FloatAttr(0.0)));
      }
      results.push_back(g);
    }
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(loc, results);
    ret.erase();
    func.setType(FunctionType::get(ctx_.get(), func.getArgumentTypes(), TypeRange(ValueRange(results))));
    if (expand_) {
      int64_t normGrads = 0;
      module_->walk([&](Operation *op) {
        normGrads += isa<plait::LayerNormGradOp, plait::RmsNormGradOp>(op);
      });
      if (normGrads == 0) {
        error = "the VJP wrote no norm gradient op to expand";
        return false;
      }
      plait::expandNormGrads(*module_);
    }
    if (failed(verify(*module_))) {
      error = "gradient IR does not verify";
      return false;
    }
    if (const char *dir = std::getenv("PLAIT_VJP_IR_DIR")) {
      // For tests/determinism/same_plan_across_builds.py: the gradient IR of every case,
      // compared between a GCC and a Clang build of plait.
      std::string text;
      llvm::raw_string_ostream os(text);
      module_->print(os);
      std::ofstream(std::string(dir) + "/" + name_ + ".mlir") << text;
      dumped_ = true;
    }
    auto memory = plait::planMemory(func);
    plait::plan::PlanDesc desc;
    if (failed(memory) || failed(plait::lowerToPlan(func, *memory, desc))) {
      error = "plan lowering failed";
      return false;
    }
    plait::rt::Status s = plait::rt::loadPlanFromBytes(plait::plan::serializePlan(desc), "vjp.plan", plan_);
    if (!s.ok()) {
      error = s.message();
      return false;
    }
    s = plait::rt::Executor::create(plan_, {}, executor_);
    if (!s.ok()) {
      error = s.message();
      return false;
    }
    return true;
  }

  /// Whether compile() wrote the gradient IR to $PLAIT_VJP_IR_DIR (and nothing runs).
  bool dumped() const { return dumped_; }
  size_t numInputs() const { return plan_.inputs.size(); }
  std::vector<int64_t> inputShape(size_t i) const { return plan_.tensors[plan_.inputs[i]].shape; }

  /// Runs with `inputs`; returns false with `error` on a runtime failure.
  bool run(std::vector<std::vector<double>> &inputs, std::string &error) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      plait::rt::TensorView v{inputs[i].data(), plait::rt::DType::F64, inputShape(i)};
      plait::rt::Status s = executor_->setInput(i, v);
      if (!s.ok()) {
        error = s.message();
        return false;
      }
    }
    plait::rt::Status s = executor_->run();
    if (!s.ok()) {
      error = s.message();
      return false;
    }
    return true;
  }
  double loss() const { return *executor_->output(0).as<double>(); }
  std::vector<double> gradient(size_t arg) const {
    plait::rt::TensorView v = executor_->output(1 + arg);
    return std::vector<double>(v.as<double>(), v.as<double>() + v.numel());
  }

private:
  std::string name_;
  bool expand_ = false;
  bool dumped_ = false;
  DialectRegistry registry_;
  std::unique_ptr<MLIRContext> ctx_;
  OwningOpRef<ModuleOp> module_;
  plait::rt::Plan plan_;
  std::unique_ptr<plait::rt::Executor> executor_;
};

class VJPFiniteDifference : public ::testing::TestWithParam<VJPCase> {};

TEST_P(VJPFiniteDifference, MatchesCentralDifferences) {
  const VJPCase &c = GetParam();
  GradientHarness harness(c);
  std::string error;
  ASSERT_TRUE(harness.compile(error)) << error;
  if (harness.dumped())
    GTEST_SKIP() << "gradient IR written to $PLAIT_VJP_IR_DIR";

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(c.lo, c.hi);
  std::vector<std::vector<double>> inputs(harness.numInputs());
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : harness.inputShape(i))
      n *= d;
    for (int64_t k = 0; k < n; ++k)
      inputs[i].push_back(dist(rng));
  }
  ASSERT_TRUE(harness.run(inputs, error)) << error;
  std::vector<std::vector<double>> analytic;
  for (size_t i = 0; i < inputs.size(); ++i)
    analytic.push_back(harness.gradient(i));

  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      double saved = inputs[i][k];
      inputs[i][k] = saved + h;
      ASSERT_TRUE(harness.run(inputs, error)) << error;
      double plus = harness.loss();
      inputs[i][k] = saved - h;
      ASSERT_TRUE(harness.run(inputs, error)) << error;
      double minus = harness.loss();
      inputs[i][k] = saved;
      double numeric = (plus - minus) / (2 * h);
      EXPECT_NEAR(analytic[i][k], numeric, 1e-6 + 1e-5 * std::fabs(numeric))
          << c.name << ": d/darg" << i << "[" << k << "]";
    }
  }
}

// clang-format off
const VJPCase kCases[] = {
  {"add_broadcast", R"(func.func @main(%a: tensor<2x1x3xf64>, %b: tensor<4x1xf64>) -> tensor<2x4x3xf64> {
    %0 = plait.add %a, %b : (tensor<2x1x3xf64>, tensor<4x1xf64>) -> tensor<2x4x3xf64>
    return %0 : tensor<2x4x3xf64> })"},
  {"sub_broadcast", R"(func.func @main(%a: tensor<3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.sub %a, %b : (tensor<3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"mul_broadcast", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<f64>) -> tensor<2x3xf64> {
    %0 = plait.mul %a, %b : (tensor<2x3xf64>, tensor<f64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"div", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<2x1xf64>) -> tensor<2x3xf64> {
    %0 = plait.div %a, %b : (tensor<2x3xf64>, tensor<2x1xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })", 0.5, 2.0},
  {"pow", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.pow %a, %b : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })", 0.5, 2.0},
  {"max", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
    %0 = plait.max %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"min", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.min %a, %b : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
#define PLAIT_UNARY_CASE(OP, LO, HI) \
  {#OP, "func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {\n" \
        "  %0 = plait." #OP " %a : tensor<2x3xf64>\n  return %0 : tensor<2x3xf64> }", LO, HI},
  PLAIT_UNARY_CASE(neg, -1, 1)
  PLAIT_UNARY_CASE(exp, -1, 1)
  PLAIT_UNARY_CASE(log, 0.5, 2)
  PLAIT_UNARY_CASE(sqrt, 0.5, 2)
  PLAIT_UNARY_CASE(rsqrt, 0.5, 2)
  PLAIT_UNARY_CASE(reciprocal, 0.5, 2)
  PLAIT_UNARY_CASE(erf, -1, 1)
  PLAIT_UNARY_CASE(tanh, -1, 1)
  PLAIT_UNARY_CASE(sin, -1, 1)
  PLAIT_UNARY_CASE(cos, -1, 1)
  PLAIT_UNARY_CASE(sigmoid, -2, 2)
  PLAIT_UNARY_CASE(silu, -2, 2)
  PLAIT_UNARY_CASE(softplus, -2, 2)
  PLAIT_UNARY_CASE(abs, -1, 1)
  PLAIT_UNARY_CASE(relu, -1, 1)
  PLAIT_UNARY_CASE(gelu, -2, 2)
#undef PLAIT_UNARY_CASE
  {"gelu_tanh", R"(func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.gelu %a {approximate = "tanh"} : tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })", -2, 2},
  {"leaky_relu", R"(func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.leaky_relu %a {alpha = 0.2 : f64} : tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"elu", R"(func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.elu %a {alpha = 0.7 : f64} : tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"hard_sigmoid", R"(func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.hard_sigmoid %a : tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })", -4, 4},
  {"clamp", R"(func.func @main(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.clamp %a {min = -0.5 : f64, max = 0.5 : f64} : tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"where", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
    %c = plait.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
    %0 = plait.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"reduce_sum", R"(func.func @main(%a: tensor<2x3x4xf64>) -> tensor<3xf64> {
    %0 = plait.reduce_sum %a {axes = array<i64: 0, -1>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<3xf64>
    return %0 : tensor<3xf64> })"},
  {"reduce_mean_keepdims", R"(func.func @main(%a: tensor<2x3x4xf64>) -> tensor<2x1x4xf64> {
    %0 = plait.reduce_mean %a {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
    return %0 : tensor<2x1x4xf64> })"},
  {"reduce_max", R"(func.func @main(%a: tensor<3x4xf64>) -> tensor<3xf64> {
    %0 = plait.reduce_max %a {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xf64>) -> tensor<3xf64>
    return %0 : tensor<3xf64> })"},
  {"reduce_min_all", R"(func.func @main(%a: tensor<3x4xf64>) -> tensor<f64> {
    %0 = plait.reduce_min %a {axes = array<i64>, keepdims = false} : (tensor<3x4xf64>) -> tensor<f64>
    return %0 : tensor<f64> })"},
  {"softmax", R"(func.func @main(%a: tensor<2x5xf64>) -> tensor<2x5xf64> {
    %0 = plait.softmax %a {axis = -1 : i64} : tensor<2x5xf64>
    return %0 : tensor<2x5xf64> })", -2, 2},
  {"log_softmax_axis0", R"(func.func @main(%a: tensor<4x3xf64>) -> tensor<4x3xf64> {
    %0 = plait.log_softmax %a {axis = 0 : i64} : tensor<4x3xf64>
    return %0 : tensor<4x3xf64> })", -2, 2},
  {"det", R"(func.func @main(%a: tensor<2x3x3xf64>) -> tensor<2xf64> {
    %0 = plait.det %a : (tensor<2x3x3xf64>) -> tensor<2xf64>
    return %0 : tensor<2xf64> })", -2, 2},
  {"det_1x1", R"(func.func @main(%a: tensor<4x1x1xf64>) -> tensor<4xf64> {
    %0 = plait.det %a : (tensor<4x1x1xf64>) -> tensor<4xf64>
    return %0 : tensor<4xf64> })"},
  {"layer_norm", R"(func.func @main(%x: tensor<2x3x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2x3x4xf64> {
    %0 = plait.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })"},
  {"layer_norm_two_axes_no_bias", R"(func.func @main(%x: tensor<2x3x4xf64>, %g: tensor<3x4xf64>) -> tensor<2x3x4xf64> {
    %0 = plait.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })"},
  {"rms_norm", R"(func.func @main(%x: tensor<3x4xf64>, %g: tensor<4xf64>) -> tensor<3x4xf64> {
    %0 = plait.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-6 : f64} : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
    return %0 : tensor<3x4xf64> })"},
  // Both results read, so the sum's gradient is its own plus the norm's.
  {"add_layer_norm", R"(func.func @main(%x: tensor<2x3x4xf64>, %r: tensor<2x3x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2x3x4xf64> {
    %y, %s = plait.add_layer_norm %x, %r, %g, %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<2x3x4xf64>, tensor<2x3x4xf64>)
    %0 = plait.mul %y, %s : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })"},
  {"add_rms_norm", R"(func.func @main(%x: tensor<3x4xf64>, %r: tensor<3x4xf64>, %g: tensor<4xf64>) -> tensor<3x4xf64> {
    %y, %s = plait.add_rms_norm %x, %r, %g {axis = -1 : i64, epsilon = 1.0e-6 : f64} : (tensor<3x4xf64>, tensor<3x4xf64>, tensor<4xf64>) -> (tensor<3x4xf64>, tensor<3x4xf64>)
    %0 = plait.add %y, %s : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
    return %0 : tensor<3x4xf64> })"},
  {"add_layer_norm_only_y", R"(func.func @main(%x: tensor<2x3x4xf64>, %r: tensor<2x3x4xf64>, %g: tensor<3x4xf64>) -> tensor<2x3x4xf64> {
    %y, %s = plait.add_layer_norm %x, %r, %g {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<2x3x4xf64>, tensor<3x4xf64>) -> (tensor<2x3x4xf64>, tensor<2x3x4xf64>)
    return %y : tensor<2x3x4xf64> })"},
  {"batch_norm", R"(func.func @main(%x: tensor<3x2x4xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<3x2x4xf64> {
    %y, %m, %v = plait.batch_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<3x2x4xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x4xf64>, tensor<2xf64>, tensor<2xf64>)
    return %y : tensor<3x2x4xf64> })"},
  // The statistics read too (BatchNormalization-9's saved mean and var): their gradients
  // reach x through the mean and the variance.
  {"batch_norm_statistics", R"(func.func @main(%x: tensor<5x3xf64>, %g: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<5x3xf64> {
    %y, %m, %v = plait.batch_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<5x3xf64>, tensor<3xf64>, tensor<3xf64>) -> (tensor<5x3xf64>, tensor<3xf64>, tensor<3xf64>)
    %mv = plait.mul %m, %v : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %0 = plait.add %y, %mv : (tensor<5x3xf64>, tensor<3xf64>) -> tensor<5x3xf64>
    return %0 : tensor<5x3xf64> })"},
  {"batch_norm_only_statistics", R"(func.func @main(%x: tensor<4x2x3xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {
    %y, %m, %v = plait.batch_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<4x2x3xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<4x2x3xf64>, tensor<2xf64>, tensor<2xf64>)
    %0 = plait.sub %v, %m : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
    return %0 : tensor<2xf64> })"},
  // The same three as the ops plait-expand-norm-grad writes (--no-fused-norm).
  {"layer_norm_expanded", R"(func.func @main(%x: tensor<2x3x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2x3x4xf64> {
    %0 = plait.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })", -1, 1, true},
  {"layer_norm_two_axes_no_bias_expanded", R"(func.func @main(%x: tensor<2x3x4xf64>, %g: tensor<3x4xf64>) -> tensor<2x3x4xf64> {
    %0 = plait.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })", -1, 1, true},
  {"rms_norm_expanded", R"(func.func @main(%x: tensor<3x4xf64>, %g: tensor<4xf64>) -> tensor<3x4xf64> {
    %0 = plait.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-6 : f64} : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
    return %0 : tensor<3x4xf64> })", -1, 1, true},
  {"matmul_2d", R"(func.func @main(%a: tensor<3x4xf64>, %b: tensor<4x2xf64>) -> tensor<3x2xf64> {
    %0 = plait.matmul %a, %b : (tensor<3x4xf64>, tensor<4x2xf64>) -> tensor<3x2xf64>
    return %0 : tensor<3x2xf64> })"},
  {"matmul_rows_times_matrix", R"(func.func @main(%a: tensor<2x3x4xf64>, %b: tensor<4x2xf64>) -> tensor<2x3x2xf64> {
    %0 = plait.matmul %a, %b : (tensor<2x3x4xf64>, tensor<4x2xf64>) -> tensor<2x3x2xf64>
    return %0 : tensor<2x3x2xf64> })"},
  {"matmul_batched_broadcast", R"(func.func @main(%a: tensor<2x1x3x4xf64>, %b: tensor<3x4x2xf64>) -> tensor<2x3x3x2xf64> {
    %0 = plait.matmul %a, %b : (tensor<2x1x3x4xf64>, tensor<3x4x2xf64>) -> tensor<2x3x3x2xf64>
    return %0 : tensor<2x3x3x2xf64> })"},
  {"matmul_vector", R"(func.func @main(%a: tensor<4xf64>, %b: tensor<2x4x3xf64>) -> tensor<2x3xf64> {
    %0 = plait.matmul %a, %b : (tensor<4xf64>, tensor<2x4x3xf64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  {"matmul_transposed_rhs", R"(func.func @main(%a: tensor<2x3x4xf64>, %b: tensor<2x4xf64>) -> tensor<2x3x2xf64> {
    %0 = plait.matmul %a, %b {transpose_rhs = true} : (tensor<2x3x4xf64>, tensor<2x4xf64>) -> tensor<2x3x2xf64>
    return %0 : tensor<2x3x2xf64> })"},
  {"matmul_transposed_both", R"(func.func @main(%a: tensor<2x4x3xf64>, %b: tensor<2x2x4xf64>) -> tensor<2x3x2xf64> {
    %0 = plait.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<2x4x3xf64>, tensor<2x2x4xf64>) -> tensor<2x3x2xf64>
    return %0 : tensor<2x3x2xf64> })"},
  {"gemm_transposed", R"(func.func @main(%a: tensor<4x3xf64>, %b: tensor<2x4xf64>, %c: tensor<2xf64>) -> tensor<3x2xf64> {
    %0 = plait.gemm %a, %b, %c {trans_a = true, trans_b = true, alpha = 0.5 : f64, beta = 2.0 : f64} : (tensor<4x3xf64>, tensor<2x4xf64>, tensor<2xf64>) -> tensor<3x2xf64>
    return %0 : tensor<3x2xf64> })"},
  {"conv2d", R"(func.func @main(%x: tensor<2x2x5x5xf64>, %w: tensor<3x2x3x3xf64>, %b: tensor<3xf64>) -> tensor<2x3x3x3xf64> {
    %0 = plait.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x5x5xf64>, tensor<3x2x3x3xf64>, tensor<3xf64>) -> tensor<2x3x3x3xf64>
    return %0 : tensor<2x3x3x3xf64> })"},
  {"conv2d_grouped_dilated", R"(func.func @main(%x: tensor<1x4x6x6xf64>, %w: tensor<4x2x2x2xf64>) -> tensor<1x4x4x4xf64> {
    %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x4x6x6xf64>, tensor<4x2x2x2xf64>) -> tensor<1x4x4x4xf64>
    return %0 : tensor<1x4x4x4xf64> })"},
  // A transposed convolution (ONNX ConvTranspose): stride 2 with one row of output padding.
  {"conv2d_grad_input", R"(func.func @main(%g: tensor<2x3x3x3xf64>, %w: tensor<3x2x3x3xf64>) -> tensor<2x2x6x6xf64> {
    %0 = plait.conv2d_grad_input %g, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x3x3xf64>, tensor<3x2x3x3xf64>) -> tensor<2x2x6x6xf64>
    return %0 : tensor<2x2x6x6xf64> })"},
  {"conv2d_grad_input_grouped_dilated", R"(func.func @main(%g: tensor<1x4x3x3xf64>, %w: tensor<4x1x2x2xf64>) -> tensor<1x2x5x7xf64> {
    %0 = plait.conv2d_grad_input %g, %w {strides = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x4x3x3xf64>, tensor<4x1x2x2xf64>) -> tensor<1x2x5x7xf64>
    return %0 : tensor<1x2x5x7xf64> })"},
  {"max_pool2d", R"(func.func @main(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
    %0 = plait.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64>
    return %0 : tensor<1x2x3x3xf64> })"},
  {"avg_pool2d", R"(func.func @main(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
    %0 = plait.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64>
    return %0 : tensor<1x2x3x3xf64> })"},
  {"reshape_transpose", R"(func.func @main(%a: tensor<2x6xf64>) -> tensor<4x3xf64> {
    %0 = plait.reshape %a : (tensor<2x6xf64>) -> tensor<3x4xf64>
    %1 = plait.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x4xf64>) -> tensor<4x3xf64>
    return %1 : tensor<4x3xf64> })"},
  {"broadcast_to", R"(func.func @main(%a: tensor<3x1xf64>) -> tensor<2x3x4xf64> {
    %0 = plait.broadcast_to %a : (tensor<3x1xf64>) -> tensor<2x3x4xf64>
    return %0 : tensor<2x3x4xf64> })"},
  // Steps other than 1: every 2nd row from 1, columns reversed from 4 through 0 by 3
  // ([4, 1]), and a reversal by 1 of a third dimension.
  {"slice_strided", R"(func.func @main(%a: tensor<6x5x3xf64>) -> tensor<3x2x3xf64> {
    %0 = plait.slice %a {starts = array<i64: 1, 4, 2>, ends = array<i64: 6, -1, -1>, steps = array<i64: 2, -3, -1>} : (tensor<6x5x3xf64>) -> tensor<3x2x3xf64>
    return %0 : tensor<3x2x3xf64> })"},
  // One element taken by a large step, and a negative step ending before index 0.
  {"slice_strided_single", R"(func.func @main(%a: tensor<7x4xf64>) -> tensor<1x2xf64> {
    %0 = plait.slice %a {starts = array<i64: 2, 3>, ends = array<i64: 3, 0>, steps = array<i64: 5, -2>} : (tensor<7x4xf64>) -> tensor<1x2xf64>
    return %0 : tensor<1x2xf64> })"},
  {"slice_pad", R"(func.func @main(%a: tensor<4x5xf64>) -> tensor<3x5xf64> {
    %0 = plait.slice %a {starts = array<i64: 1, 1>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<4x5xf64>) -> tensor<2x3xf64>
    %1 = plait.pad %0 {pads = array<i64: 0, 2, 1, 0>, value = 0.0 : f64} : (tensor<2x3xf64>) -> tensor<3x5xf64>
    return %1 : tensor<3x5xf64> })"},
  {"concat_split", R"(func.func @main(%a: tensor<2x3xf64>, %b: tensor<2x2xf64>) -> tensor<2x2xf64> {
    %0 = plait.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf64>, tensor<2x2xf64>) -> tensor<2x5xf64>
    %1:2 = plait.split %0 {axis = 1 : i64, sizes = array<i64: 3, 2>} : (tensor<2x5xf64>) -> (tensor<2x3xf64>, tensor<2x2xf64>)
    %2 = plait.mul %1#1, %1#1 : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
    return %2 : tensor<2x2xf64> })"},
  {"gather_embedding", R"(func.func @main(%t: tensor<5x3xf64>) -> tensor<2x3x3xf64> {
    %i = plait.constant dense<[[0, 4, 0], [2, -1, 3]]> : tensor<2x3xi64>
    %0 = plait.gather %t, %i {axis = 0 : i64} : (tensor<5x3xf64>, tensor<2x3xi64>) -> tensor<2x3x3xf64>
    return %0 : tensor<2x3x3xf64> })"},
  {"gather_axis1", R"(func.func @main(%t: tensor<2x4xf64>) -> tensor<2x3xf64> {
    %i = plait.constant dense<[1, 1, 3]> : tensor<3xi64>
    %0 = plait.gather %t, %i {axis = 1 : i64} : (tensor<2x4xf64>, tensor<3xi64>) -> tensor<2x3xf64>
    return %0 : tensor<2x3xf64> })"},
  // A scatter-add (ONNX ScatterElements/ScatterND): repeated and negative indices.
  {"gather_grad_scatter", R"(func.func @main(%g: tensor<2x3x2xf64>) -> tensor<2x4x2xf64> {
    %i = plait.constant dense<[1, 1, -1]> : tensor<3xi64>
    %0 = plait.gather_grad %g, %i {axis = 1 : i64} : (tensor<2x3x2xf64>, tensor<3xi64>) -> tensor<2x4x2xf64>
    return %0 : tensor<2x4x2xf64> })"},
  {"trilu", R"(func.func @main(%a: tensor<2x4x4xf64>) -> tensor<2x4x4xf64> {
    %0 = plait.trilu %a {upper = false, k = 0 : i64} : tensor<2x4x4xf64>
    return %0 : tensor<2x4x4xf64> })"},
  {"softmax_cross_entropy_mean", R"(func.func @main(%l: tensor<4x5xf64>) -> tensor<f64> {
    %t = plait.constant dense<[1, 0, 4, 2]> : tensor<4xi64>
    %0 = plait.softmax_cross_entropy %l, %t {reduction = "mean"} : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<f64>
    return %0 : tensor<f64> })", -2, 2},
  // Class weights are constants, as in PyTorch (which has no derivative for them).
  {"softmax_cross_entropy_weighted_ignore", R"(func.func @main(%l: tensor<4x3x2xf64>) -> tensor<f64> {
    %w = plait.constant dense<[0.5, 2.0, 1.5]> : tensor<3xf64>
    %t = plait.constant dense<[[1, 0], [2, 2], [0, 1], [1, 1]]> : tensor<4x2xi64>
    %0 = plait.softmax_cross_entropy %l, %t, %w {reduction = "mean", ignore_index = 0 : i64} : (tensor<4x3x2xf64>, tensor<4x2xi64>, tensor<3xf64>) -> tensor<f64>
    return %0 : tensor<f64> })", 0.5, 2},
  {"softmax_cross_entropy_none", R"(func.func @main(%l: tensor<3x4xf64>) -> tensor<3xf64> {
    %t = plait.constant dense<[3, 0, 1]> : tensor<3xi64>
    %0 = plait.softmax_cross_entropy %l, %t {reduction = "none"} : (tensor<3x4xf64>, tensor<3xi64>) -> tensor<3xf64>
    return %0 : tensor<3xf64> })", -2, 2},
  {"nll_loss_sum", R"(func.func @main(%l: tensor<3x4xf64>) -> tensor<f64> {
    %t = plait.constant dense<[3, 0, 1]> : tensor<3xi64>
    %0 = plait.nll_loss %l, %t {reduction = "sum"} : (tensor<3x4xf64>, tensor<3xi64>) -> tensor<f64>
    return %0 : tensor<f64> })"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(AllOps, VJPFiniteDifference, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VJPCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
