// Host side of the CUDA elementwise kernels: the unary and binary families, where and cast.
// Operand checks are the CPU kernels' (KernelSupport.h, Broadcast.h); the device code is
// kernels/Elementwise.cu.
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {
namespace {

using namespace cuda;
using cpu::checkArity;
using cpu::checkSameDtype;
using cpu::checkShape;

bool isFloatingDtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16;
}
bool isNumericDtype(DType t) { return isFloatingDtype(t) || t == DType::I64 || t == DType::I32; }

/// What a unary op accepts: floats only, or the numeric dtypes, or i1 (not).
enum class Domain { Float, Numeric, Bool };

Status checkUnary(const CudaKernelCall &call, std::string_view kernel, Domain domain) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kernel, 1, 1, 1));
  const TensorView &x = call.inputs[0], &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, y));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", y.shape, x.shape));
  bool ok = domain == Domain::Float     ? isFloatingDtype(x.dtype)
            : domain == Domain::Numeric ? isNumericDtype(x.dtype)
                                        : x.dtype == DType::I1;
  return ok ? Status() : noCudaDtype(kernel, x.dtype);
}

Status runUnary(const CudaKernelCall &call, std::string_view kernel, UnaryOp op, Domain domain,
                const UnaryParams &params = {}) {
  PLAIT_RETURN_IF_ERROR(checkUnary(call, kernel, domain));
  if (call.check)
    return {};
  const TensorView &x = call.inputs[0];
  return launched(launchUnary(op, code(x.dtype), x.data, call.outputs[0].data, x.numel(), params,
                              call.stream),
                  kernel);
}

// One registered function per op: the op is a template argument, so that the registry holds
// plain function pointers.
template <UnaryOp kOp, Domain kDomain> struct Unary {
  static const char *name;
  static Status run(const CudaKernelCall &call) { return runUnary(call, name, kOp, kDomain); }
};
template <UnaryOp kOp, Domain kDomain> const char *Unary<kOp, kDomain>::name = "";

template <UnaryOp kOp, Domain kDomain> void registerUnary(const char *name) {
  Unary<kOp, kDomain>::name = name;
  registerCudaKernel(name, &Unary<kOp, kDomain>::run);
}

Status geluKernel(const CudaKernelCall &call) {
  std::string_view approximate = call.attrs.getStrView("approximate", "none");
  if (approximate == "none")
    return runUnary(call, "gelu", UnaryOp::GeluErf, Domain::Float);
  if (approximate == "tanh")
    return runUnary(call, "gelu", UnaryOp::GeluTanh, Domain::Float);
  return Status::errorf("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"",
                        approximate);
}

template <UnaryOp kOp> Status alphaKernel(const CudaKernelCall &call) {
  UnaryParams p;
  const char *name = kOp == UnaryOp::LeakyRelu ? "leaky_relu"
                     : kOp == UnaryOp::Elu     ? "elu"
                                               : "hard_sigmoid";
  p.alpha = call.attrs.getFloat("alpha", kOp == UnaryOp::LeakyRelu ? 0.01
                                         : kOp == UnaryOp::Elu     ? 1.0
                                                                   : 0.2);
  p.beta = call.attrs.getFloat("beta", 0.5);
  return runUnary(call, name, kOp, Domain::Float, p);
}

/// Integer clamp bounds as UnaryKernels.cpp's integerBound: ceil / floor, saturated to T.
template <typename T> double integerBound(double v, bool lower) {
  double r = lower ? std::ceil(v) : std::floor(v);
  if (r <= double(std::numeric_limits<T>::lowest()))
    return double(std::numeric_limits<T>::lowest());
  if (r >= double(std::numeric_limits<T>::max()))
    return double(std::numeric_limits<T>::max());
  return r;
}

Status clampKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnary(call, "clamp", Domain::Numeric));
  DType t = call.inputs[0].dtype;
  if (t == DType::I64) // int64 bounds do not all survive a double; the samples clamp floats
    return noCudaDtype("clamp", t);
  UnaryParams p;
  bool integer = t == DType::I32;
  p.lo = integer ? double(std::numeric_limits<int32_t>::lowest())
                 : -std::numeric_limits<double>::infinity();
  p.hi = integer ? double(std::numeric_limits<int32_t>::max())
                 : std::numeric_limits<double>::infinity();
  if (call.attrs.has("min"))
    p.lo = integer ? integerBound<int32_t>(call.attrs.getFloat("min", 0), true)
                   : call.attrs.getFloat("min", 0);
  if (call.attrs.has("max"))
    p.hi = integer ? integerBound<int32_t>(call.attrs.getFloat("max", 0), false)
                   : call.attrs.getFloat("max", 0);
  return runUnary(call, "clamp", UnaryOp::Clamp, Domain::Numeric, p);
}

//===--- binary ---------------------------------------------------------------------------===//

/// kDomain: 0 numeric (result of the operand dtype), 1 comparison (i1 result; equal takes i1
/// operands too), 2 logic (i1 operands and result).
template <BinaryOp kOp, int kDomain> struct Binary {
  static const char *name;
  static Status run(const CudaKernelCall &call) {
    KernelCall host = call.asHostCall();
    PLAIT_RETURN_IF_ERROR(checkArity(host, name, 2, 2, 1));
    const TensorView &a = call.inputs[0], &b = call.inputs[1];
    TensorView &out = call.outputs[0];
    PLAIT_RETURN_IF_ERROR(checkSameDtype(name, a, b));
    DType expected = kDomain == 0 ? a.dtype : DType::I1;
    if (out.dtype != expected)
      return Status::errorf("{}: output dtype {} should be {}", name, dtypeName(out.dtype),
                            dtypeName(expected));
    cpu::Dims shape;
    if (!cpu::broadcastShapes(a.shape, b.shape, shape))
      return Status::errorf("{}: shapes {} and {} do not broadcast", name,
                            shapeString(a.shape), shapeString(b.shape));
    PLAIT_RETURN_IF_ERROR(checkShape(name, "output", out.shape, shape));
    bool ok = kDomain == 2   ? a.dtype == DType::I1
              : kDomain == 1 ? isNumericDtype(a.dtype) ||
                                   (kOp == BinaryOp::Equal && a.dtype == DType::I1)
                             : isNumericDtype(a.dtype);
    if (!ok)
      return noCudaDtype(name, a.dtype);
    if (call.check)
      return {};
    cpu::BroadcastPlan<2> plan = cpu::planBroadcast<2>(out.shape, {a.shape, b.shape});
    return launched(launchBinary(kOp, code(a.dtype), a.data, b.data, out.data, toGeometry(plan),
                                 out.numel(), call.stream),
                    name);
  }
};
template <BinaryOp kOp, int kDomain> const char *Binary<kOp, kDomain>::name = "";

template <BinaryOp kOp, int kDomain> void registerBinary(const char *name) {
  Binary<kOp, kDomain>::name = name;
  registerCudaKernel(name, &Binary<kOp, kDomain>::run);
}

/// shift_left / shift_right (ONNX BitShift): unsigned integers, the CPU kernels' checks.
template <bool kLeft> Status shiftKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kLeft ? "shift_left" : "shift_right";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 2, 2, 1));
  const TensorView &a = call.inputs[0], &b = call.inputs[1];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, a, b));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, a, out));
  cpu::Dims shape;
  if (!cpu::broadcastShapes(a.shape, b.shape, shape))
    return Status::errorf("{}: shapes {} and {} do not broadcast", kName, shapeString(a.shape),
                          shapeString(b.shape));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, shape));
  if (!isUnsigned(a.dtype))
    return noCudaDtype(kName, a.dtype);
  if (call.check)
    return {};
  cpu::BroadcastPlan<2> plan = cpu::planBroadcast<2>(out.shape, {a.shape, b.shape});
  return launched(launchShift(kLeft, code(a.dtype), a.data, b.data, out.data, toGeometry(plan),
                              out.numel(), call.stream),
                  kName);
}

Status whereKernel(const CudaKernelCall &call) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, "where", 3, 3, 1));
  const TensorView &cond = call.inputs[0], &x = call.inputs[1], &y = call.inputs[2];
  TensorView &out = call.outputs[0];
  if (cond.dtype != DType::I1)
    return Status::errorf("where: cond must be i1, got {}", dtypeName(cond.dtype));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("where", x, y));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("where", x, out));
  cpu::Dims xy, shape;
  if (!cpu::broadcastShapes(x.shape, y.shape, xy) || !cpu::broadcastShapes(cond.shape, xy, shape))
    return Status::errorf("where: shapes {}, {} and {} do not broadcast",
                          shapeString(cond.shape), shapeString(x.shape), shapeString(y.shape));
  PLAIT_RETURN_IF_ERROR(checkShape("where", "output", out.shape, shape));
  if (call.check)
    return {};
  cpu::BroadcastPlan<3> plan = cpu::planBroadcast<3>(out.shape, {cond.shape, x.shape, y.shape});
  return launched(launchWhere(int(dtypeSize(x.dtype)), cond.data, x.data, y.data, out.data,
                              toGeometry(plan), out.numel(), call.stream),
                  "where");
}

Status castKernel(const CudaKernelCall &call) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, "cast", 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkShape("cast", "output", y.shape, x.shape));
  if (call.check)
    return {};
  if (x.dtype == y.dtype) {
    if (x.data != y.data && x.bytes() != 0)
      PLAIT_RETURN_IF_ERROR(launched(
          cudaMemcpyAsync(y.data, x.data, x.bytes(), cudaMemcpyDeviceToDevice, call.stream),
          "cast"));
    return {};
  }
  return launched(launchCast(code(x.dtype), code(y.dtype), x.data, y.data, x.numel(),
                             call.stream),
                  "cast");
}

/// grouped_cast (plait-group-casts): result i = cast(operand i), float to float; the casts
/// of one pair of dtypes in a row in one launch per kMaxCastTensors (launchGroupedCast).
Status groupedCastKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "grouped_cast";
  PLAIT_RETURN_IF_ERROR(cpu::checkGroupedCast(call.inputs, call.outputs));
  const size_t count = call.inputs.size();
  std::vector<CastTensor> tensors(count);
  for (size_t i = 0; i < count; ++i)
    tensors[i] = CastTensor{call.inputs[i].data, call.outputs[i].data, call.inputs[i].numel()};
  if (call.check)
    return {};
  auto dtypes = [&](size_t i) {
    return std::pair(code(call.inputs[i].dtype), code(call.outputs[i].dtype));
  };
  for (size_t begin = 0; begin < count;) {
    size_t end = begin + 1;
    while (end < count && dtypes(end) == dtypes(begin))
      ++end;
    auto [from, to] = dtypes(begin);
    PLAIT_RETURN_IF_ERROR(launched(
        launchGroupedCast(from, to, tensors.data() + begin, int64_t(end - begin), call.stream),
        kName));
    begin = end;
  }
  return {};
}

/// The operands of a drawing kernel (dropout_mask, random): one f32 step, read on the device,
/// and a float result (the `what`).
Status checkDrawCall(const char *name, const char *what, const CudaKernelCall &call) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, name, 1, 1, 1));
  const TensorView &step = call.inputs[0];
  if (step.dtype != DType::F32 || step.numel() != 1)
    return Status::errorf("{}: step must be one f32 value, got {} {}", name,
                          dtypeName(step.dtype), shapeString(step.shape));
  if (!isFloat(call.outputs[0].dtype))
    return Status::errorf("{}: the {} must be a float tensor, got {}", name, what,
                          dtypeName(call.outputs[0].dtype));
  return {};
}

Status dropoutMaskKernel(const CudaKernelCall &call) {
  constexpr const char *kName = "dropout_mask";
  PLAIT_RETURN_IF_ERROR(checkDrawCall(kName, "mask", call));
  const TensorView &step = call.inputs[0];
  TensorView &y = call.outputs[0];
  const double ratio = call.attrs.getFloat("ratio", -1.0);
  if (!(ratio >= 0.0 && ratio < 1.0))
    return Status::errorf("{}: ratio {} is not in [0, 1)", kName, ratio);
  if (call.check)
    return {};
  return launched(launchDropoutMask(code(y.dtype), static_cast<const float *>(step.data),
                                    y.data, y.numel(), uint64_t(call.attrs.getInt("seed", 0)),
                                    uint64_t(call.attrs.getInt("stream", 0)), call.rank, ratio,
                                    call.stream),
                  kName);
}

Status randomKernel(const CudaKernelCall &call) {
  constexpr const char *kName = "random";
  PLAIT_RETURN_IF_ERROR(checkDrawCall(kName, "result", call));
  const TensorView &step = call.inputs[0];
  TensorView &y = call.outputs[0];
  const std::string distribution = call.attrs.getStr("distribution", "");
  if (distribution != "uniform" && distribution != "normal")
    return Status::errorf("{}: distribution '{}' is not uniform or normal", kName, distribution);
  if (call.check)
    return {};
  return launched(launchRandom(code(y.dtype), static_cast<const float *>(step.data), y.data,
                               y.numel(), uint64_t(call.attrs.getInt("seed", 0)),
                               uint64_t(call.attrs.getInt("stream", 0)), call.rank,
                               distribution == "normal", call.attrs.getFloat("a", 0.0),
                               call.attrs.getFloat("b", 1.0), call.stream),
                  kName);
}

} // namespace

void registerCudaElementwiseKernels() {
  registerUnary<UnaryOp::Exp, Domain::Float>("exp");
  registerUnary<UnaryOp::Log, Domain::Float>("log");
  registerUnary<UnaryOp::Sqrt, Domain::Float>("sqrt");
  registerUnary<UnaryOp::Rsqrt, Domain::Float>("rsqrt");
  registerUnary<UnaryOp::Reciprocal, Domain::Float>("reciprocal");
  registerUnary<UnaryOp::Erf, Domain::Float>("erf");
  registerUnary<UnaryOp::Tanh, Domain::Float>("tanh");
  registerUnary<UnaryOp::Sin, Domain::Float>("sin");
  registerUnary<UnaryOp::Cos, Domain::Float>("cos");
  registerUnary<UnaryOp::Sigmoid, Domain::Float>("sigmoid");
  registerUnary<UnaryOp::Silu, Domain::Float>("silu");
  registerUnary<UnaryOp::Softplus, Domain::Float>("softplus");
  registerUnary<UnaryOp::Floor, Domain::Float>("floor");
  registerUnary<UnaryOp::Ceil, Domain::Float>("ceil");
  registerUnary<UnaryOp::Round, Domain::Float>("round");
  registerCudaKernel("gelu", &geluKernel);
  registerCudaKernel("leaky_relu", &alphaKernel<UnaryOp::LeakyRelu>);
  registerCudaKernel("elu", &alphaKernel<UnaryOp::Elu>);
  registerCudaKernel("hard_sigmoid", &alphaKernel<UnaryOp::HardSigmoid>);
  registerUnary<UnaryOp::Neg, Domain::Numeric>("neg");
  registerUnary<UnaryOp::Abs, Domain::Numeric>("abs");
  registerUnary<UnaryOp::Relu, Domain::Numeric>("relu");
  registerUnary<UnaryOp::Sign, Domain::Numeric>("sign");
  registerCudaKernel("clamp", &clampKernel);
  registerUnary<UnaryOp::Not, Domain::Bool>("not");

  registerBinary<BinaryOp::Add, 0>("add");
  registerBinary<BinaryOp::Sub, 0>("sub");
  registerBinary<BinaryOp::Mul, 0>("mul");
  registerBinary<BinaryOp::Div, 0>("div");
  registerBinary<BinaryOp::Mod, 0>("mod");
  registerBinary<BinaryOp::Pow, 0>("pow");
  registerBinary<BinaryOp::Max, 0>("max");
  registerBinary<BinaryOp::Min, 0>("min");
  registerBinary<BinaryOp::Equal, 1>("equal");
  registerBinary<BinaryOp::Less, 1>("less");
  registerBinary<BinaryOp::LessEqual, 1>("less_equal");
  registerBinary<BinaryOp::Greater, 1>("greater");
  registerBinary<BinaryOp::GreaterEqual, 1>("greater_equal");
  registerBinary<BinaryOp::And, 2>("and");
  registerBinary<BinaryOp::Or, 2>("or");
  registerBinary<BinaryOp::Xor, 2>("xor");
  registerCudaKernel("shift_left", &shiftKernel<true>);
  registerCudaKernel("shift_right", &shiftKernel<false>);
  registerCudaKernel("where", &whereKernel);
  registerCudaKernel("cast", &castKernel);
  registerCudaKernel("grouped_cast", &groupedCastKernel);
  registerCudaKernel("dropout_mask", &dropoutMaskKernel);
  registerCudaKernel("random", &randomKernel);
}

} // namespace plait::rt
