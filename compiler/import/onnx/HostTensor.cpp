// Host tensors and the folding kernels the importer evaluates at import time.
#include "compiler/import/onnx/HostTensor.h"
#include "ir/ShapeRules.h"

#include <cmath>
#include <limits>

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace plait::onnx_import {

//===----------------------------------------------------------------------===//
// Element kinds
//===----------------------------------------------------------------------===//

bool isFloatKind(ElemKind kind) {
  return kind == ElemKind::F16 || kind == ElemKind::BF16 || kind == ElemKind::F32 ||
         kind == ElemKind::F64;
}

bool isUnsignedKind(ElemKind kind) {
  return kind == ElemKind::U8 || kind == ElemKind::U16 || kind == ElemKind::U32 ||
         kind == ElemKind::U64;
}

/// The width and signedness of an integer kind other than Bool.
static std::pair<unsigned, bool> integerKind(ElemKind kind) {
  switch (kind) {
  case ElemKind::I8: return {8, true};
  case ElemKind::U8: return {8, false};
  case ElemKind::I16: return {16, true};
  case ElemKind::U16: return {16, false};
  case ElemKind::I32: return {32, true};
  case ElemKind::U32: return {32, false};
  case ElemKind::U64: return {64, false};
  default: return {64, true};
  }
}

Type toMlirType(ElemKind kind, MLIRContext *ctx) {
  switch (kind) {
  case ElemKind::F16:
    return Float16Type::get(ctx);
  case ElemKind::BF16:
    return BFloat16Type::get(ctx);
  case ElemKind::F32:
    return Float32Type::get(ctx);
  case ElemKind::F64:
    return Float64Type::get(ctx);
  case ElemKind::I32:
    return IntegerType::get(ctx, 32);
  case ElemKind::I64:
    return IntegerType::get(ctx, 64);
  case ElemKind::Bool:
    return IntegerType::get(ctx, 1);
  case ElemKind::I8:
  case ElemKind::I16:
    return IntegerType::get(ctx, integerKind(kind).first);
  case ElemKind::U8:
  case ElemKind::U16:
  case ElemKind::U32:
  case ElemKind::U64:
    return IntegerType::get(ctx, integerKind(kind).first, IntegerType::Unsigned);
  }
  llvm_unreachable("unknown element kind");
}

std::optional<ElemKind> kindOf(Type type) {
  if (type.isF16())
    return ElemKind::F16;
  if (type.isBF16())
    return ElemKind::BF16;
  if (type.isF32())
    return ElemKind::F32;
  if (type.isF64())
    return ElemKind::F64;
  if (type.isSignlessInteger(32))
    return ElemKind::I32;
  if (type.isSignlessInteger(64))
    return ElemKind::I64;
  if (type.isSignlessInteger(1))
    return ElemKind::Bool;
  if (type.isSignlessInteger(8))
    return ElemKind::I8;
  if (type.isSignlessInteger(16))
    return ElemKind::I16;
  if (type.isUnsignedInteger(8))
    return ElemKind::U8;
  if (type.isUnsignedInteger(16))
    return ElemKind::U16;
  if (type.isUnsignedInteger(32))
    return ElemKind::U32;
  if (type.isUnsignedInteger(64))
    return ElemKind::U64;
  return std::nullopt;
}

llvm::StringRef kindName(ElemKind kind) {
  switch (kind) {
  case ElemKind::F16:
    return "float16";
  case ElemKind::BF16:
    return "bfloat16";
  case ElemKind::F32:
    return "float";
  case ElemKind::F64:
    return "double";
  case ElemKind::I32:
    return "int32";
  case ElemKind::I64:
    return "int64";
  case ElemKind::Bool:
    return "bool";
  case ElemKind::I8:
    return "int8";
  case ElemKind::U8:
    return "uint8";
  case ElemKind::I16:
    return "int16";
  case ElemKind::U16:
    return "uint16";
  case ElemKind::U32:
    return "uint32";
  case ElemKind::U64:
    return "uint64";
  }
  llvm_unreachable("unknown element kind");
}

int64_t numElementsOf(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0)
      return 0;
    if (d < 0 || n > std::numeric_limits<int64_t>::max() / d)
      n = std::numeric_limits<int64_t>::max(); // keep scanning: a later 0 still wins
    else
      n *= d;
  }
  return n;
}

static const llvm::fltSemantics &semanticsOf(ElemKind kind) {
  switch (kind) {
  case ElemKind::F16:
    return llvm::APFloat::IEEEhalf();
  case ElemKind::BF16:
    return llvm::APFloat::BFloat();
  case ElemKind::F32:
    return llvm::APFloat::IEEEsingle();
  default:
    return llvm::APFloat::IEEEdouble();
  }
}

double roundToKind(double v, ElemKind kind) {
  switch (kind) {
  case ElemKind::F32:
    return static_cast<double>(static_cast<float>(v));
  case ElemKind::F16:
  case ElemKind::BF16: {
    llvm::APFloat f(v);
    bool lost;
    f.convert(semanticsOf(kind), llvm::APFloat::rmNearestTiesToEven, &lost);
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  default:
    return v;
  }
}

int64_t wrapToKind(int64_t v, ElemKind kind) {
  uint64_t bits = static_cast<uint64_t>(v);
  switch (kind) {
  case ElemKind::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(bits));
  case ElemKind::U8:
    return static_cast<uint8_t>(bits);
  case ElemKind::I16:
    return static_cast<int16_t>(static_cast<uint16_t>(bits));
  case ElemKind::U16:
    return static_cast<uint16_t>(bits);
  case ElemKind::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(bits));
  case ElemKind::U32:
    return static_cast<uint32_t>(bits);
  case ElemKind::Bool:
    return v != 0;
  default: // I64, and U64 as its bit pattern
    return v;
  }
}

int64_t floatToKind(double v, ElemKind kind) {
  if (kind == ElemKind::Bool)
    return v != 0.0;
  if (std::isnan(v))
    return 0;
  auto [bits, isSigned] = integerKind(kind);
  if (!isSigned && bits == 64) {
    if (v <= 0)
      return 0;
    if (v >= 18446744073709551616.0) // 2^64
      return -1;                     // UINT64_MAX's bits
    return static_cast<int64_t>(static_cast<uint64_t>(v));
  }
  double lowest = isSigned ? -std::ldexp(1.0, int(bits) - 1) : 0.0;
  double highest = std::ldexp(1.0, int(bits) - (isSigned ? 1 : 0)); // one past the largest
  if (v <= lowest)
    return static_cast<int64_t>(lowest);
  if (v >= highest)
    return bits == 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(highest) - 1;
  return static_cast<int64_t>(v);
}


//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

HostTensor::HostTensor(ElemKind kind, llvm::ArrayRef<int64_t> shape)
    : kind_(kind), shape_(shape) {
  if (isFloat())
    floats_.assign(numElements(), 0.0);
  else
    ints_.assign(numElements(), 0);
}

HostTensor HostTensor::splat(ElemKind kind, llvm::ArrayRef<int64_t> shape, double value) {
  HostTensor t;
  t.kind_ = kind;
  t.shape_.assign(shape.begin(), shape.end());
  if (t.numElements() == 0)
    return HostTensor(kind, shape);
  if (t.isFloat())
    t.floats_.push_back(roundToKind(value, kind));
  else
    t.ints_.push_back(floatToKind(value, kind));
  return t;
}

HostTensor HostTensor::splatInt(ElemKind kind, llvm::ArrayRef<int64_t> shape, int64_t value) {
  HostTensor t;
  t.kind_ = kind;
  t.shape_.assign(shape.begin(), shape.end());
  if (t.numElements() == 0)
    return HostTensor(kind, shape);
  if (t.isFloat())
    t.floats_.push_back(roundToKind(static_cast<double>(value), kind));
  else
    t.ints_.push_back(wrapToKind(value, kind));
  return t;
}

HostTensor HostTensor::fromInts(ElemKind kind, llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<int64_t> values) {
  HostTensor t(kind, shape);
  for (auto [i, v] : llvm::enumerate(values))
    t.setInt(i, v);
  return t;
}

HostTensor HostTensor::fromDoubles(ElemKind kind, llvm::ArrayRef<int64_t> shape,
                                   llvm::ArrayRef<double> values) {
  HostTensor t(kind, shape);
  for (auto [i, v] : llvm::enumerate(values))
    t.setDouble(i, v);
  return t;
}

HostTensor HostTensor::fromAttr(DenseElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  ElemKind kind = *kindOf(type.getElementType());
  HostTensor t;
  t.kind_ = kind;
  t.shape_.assign(type.getShape().begin(), type.getShape().end());
  bool splat = attr.isSplat() && t.numElements() > 0;
  if (t.isFloat()) {
    auto toDouble = [](llvm::APFloat v) {
      bool lost;
      v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
      return v.convertToDouble();
    };
    if (splat)
      t.floats_.push_back(toDouble(attr.getSplatValue<llvm::APFloat>()));
    else
      for (const llvm::APFloat &v : attr.getValues<llvm::APFloat>())
        t.floats_.push_back(toDouble(v));
  } else {
    bool zeroExtend = kind == ElemKind::Bool || isUnsignedKind(kind);
    auto toInt = [&](const llvm::APInt &v) {
      return zeroExtend ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
    };
    if (splat)
      t.ints_.push_back(toInt(attr.getSplatValue<llvm::APInt>()));
    else
      for (const llvm::APInt &v : attr.getValues<llvm::APInt>())
        t.ints_.push_back(toInt(v));
  }
  return t;
}

double HostTensor::getDouble(int64_t i) const {
  if (isFloat())
    return floats_[floats_.size() == 1 ? 0 : i];
  int64_t v = ints_[ints_.size() == 1 ? 0 : i];
  return kind_ == ElemKind::U64 ? static_cast<double>(static_cast<uint64_t>(v))
                                : static_cast<double>(v);
}

int64_t HostTensor::getInt(int64_t i) const {
  if (isFloat())
    return floatToKind(floats_[floats_.size() == 1 ? 0 : i], ElemKind::I64);
  return ints_[ints_.size() == 1 ? 0 : i];
}

void HostTensor::setDouble(int64_t i, double v) {
  if (isFloat())
    floats_[i] = roundToKind(v, kind_);
  else
    ints_[i] = floatToKind(v, kind_);
}

void HostTensor::setInt(int64_t i, int64_t v) {
  if (isFloat())
    floats_[i] = roundToKind(static_cast<double>(v), kind_);
  else
    ints_[i] = wrapToKind(v, kind_);
}

llvm::SmallVector<int64_t> HostTensor::toInts() const {
  llvm::SmallVector<int64_t> out;
  for (int64_t i = 0, n = numElements(); i < n; ++i)
    out.push_back(getInt(i));
  return out;
}

HostTensor HostTensor::reshaped(llvm::ArrayRef<int64_t> shape) const {
  HostTensor t = *this;
  t.shape_.assign(shape.begin(), shape.end());
  if (t.numElements() == 0) {
    t.floats_.clear();
    t.ints_.clear();
  }
  return t;
}

HostTensor HostTensor::materialized() const {
  if (!isSplat())
    return *this;
  HostTensor t = *this;
  if (isFloat())
    t.floats_.assign(numElements(), floats_[0]);
  else
    t.ints_.assign(numElements(), ints_[0]);
  return t;
}

RankedTensorType HostTensor::type(MLIRContext *ctx) const {
  return RankedTensorType::get(shape_, toMlirType(kind_, ctx));
}

/// The attribute of `type` holding `ints` converted to T (each already in T's range).
template <typename T>
static DenseElementsAttr attrOf(RankedTensorType type, llvm::ArrayRef<int64_t> ints) {
  std::vector<T> v;
  v.reserve(ints.size());
  for (int64_t i : ints)
    v.push_back(static_cast<T>(i));
  return DenseElementsAttr::get(type, llvm::ArrayRef<T>(v));
}

DenseElementsAttr HostTensor::toAttr(MLIRContext *ctx) const {
  RankedTensorType type = this->type(ctx);
  switch (kind_) {
  case ElemKind::F32: {
    std::vector<float> v(floats_.begin(), floats_.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<float>(v));
  }
  case ElemKind::F64:
    return DenseElementsAttr::get(type, llvm::ArrayRef<double>(floats_));
  case ElemKind::F16:
  case ElemKind::BF16: {
    llvm::SmallVector<llvm::APFloat> v;
    for (double d : floats_) {
      llvm::APFloat f(d);
      bool lost;
      f.convert(semanticsOf(kind_), llvm::APFloat::rmNearestTiesToEven, &lost);
      v.push_back(f);
    }
    return DenseElementsAttr::get(type, v);
  }
  case ElemKind::I32: {
    std::vector<int32_t> v(ints_.begin(), ints_.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(v));
  }
  case ElemKind::I64:
    return DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(ints_));
  case ElemKind::Bool: {
    llvm::SmallVector<bool> v(ints_.begin(), ints_.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(v));
  }
  case ElemKind::I8:
    return attrOf<int8_t>(type, ints_);
  case ElemKind::U8:
    return attrOf<uint8_t>(type, ints_);
  case ElemKind::I16:
    return attrOf<int16_t>(type, ints_);
  case ElemKind::U16:
    return attrOf<uint16_t>(type, ints_);
  case ElemKind::U32:
    return attrOf<uint32_t>(type, ints_);
  case ElemKind::U64:
    return attrOf<uint64_t>(type, ints_);
  }
  llvm_unreachable("unknown element kind");
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

namespace {

llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Strides that read `in` broadcast (numpy rules) into a tensor of shape `out`.
llvm::SmallVector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> in,
                                            llvm::ArrayRef<int64_t> out) {
  llvm::SmallVector<int64_t> inStrides = stridesOf(in);
  llvm::SmallVector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  return strides;
}

/// Calls f(outIndex, multiIndex) for every element of `shape` in row-major order.
template <typename F>
void forEachIndex(llvm::ArrayRef<int64_t> shape, F f) {
  int64_t n = numElementsOf(shape);
  llvm::SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, llvm::ArrayRef<int64_t>(idx));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

int64_t dot(llvm::ArrayRef<int64_t> idx, llvm::ArrayRef<int64_t> strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d)
    off += idx[d] * strides[d];
  return off;
}

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

llvm::Error foldError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Applies `f` elementwise over the broadcast of `inputs`, producing kind `outKind`. When every
/// input is a splat (or a single element), the result is a splat.
template <typename F>
HostTensor mapBroadcast(llvm::ArrayRef<const HostTensor *> inputs,
                        llvm::ArrayRef<int64_t> outShape, ElemKind outKind, F f) {
  bool allSplat = llvm::all_of(inputs, [](const HostTensor *t) {
    return t->isSplat() || t->numElements() == 1;
  });
  int64_t n = numElementsOf(outShape);
  if (allSplat && n > 1) {
    HostTensor one(outKind, {});
    llvm::SmallVector<int64_t> zeros(inputs.size(), 0);
    f(one, 0, llvm::ArrayRef<int64_t>(zeros));
    HostTensor result = one.isFloat() ? HostTensor::splat(outKind, outShape, one.getDouble(0))
                                      : HostTensor::splatInt(outKind, outShape, one.getInt(0));
    return result;
  }
  HostTensor out(outKind, outShape);
  llvm::SmallVector<llvm::SmallVector<int64_t>> strides;
  for (const HostTensor *t : inputs)
    strides.push_back(broadcastStrides(t->shape(), outShape));
  llvm::SmallVector<int64_t> offsets(inputs.size());
  forEachIndex(outShape, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    for (size_t k = 0; k < inputs.size(); ++k)
      offsets[k] = dot(idx, strides[k]);
    f(out, i, llvm::ArrayRef<int64_t>(offsets));
  });
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> foldUnary(UnaryFn fn, const HostTensor &x) {
  bool isFloat = x.isFloat();
  if (fn == UnaryFn::Not && x.kind() != ElemKind::Bool)
    return foldError("Not needs a bool operand");
  bool floatOnly = fn == UnaryFn::Sqrt || fn == UnaryFn::Exp || fn == UnaryFn::Log ||
                   fn == UnaryFn::Reciprocal;
  if (floatOnly && !isFloat)
    return foldError("needs a floating-point operand");
  const HostTensor *in[] = {&x};
  return mapBroadcast(in, x.shape(), x.kind(),
                      [&](HostTensor &out, int64_t i, llvm::ArrayRef<int64_t> off) {
    if (isFloat) {
      double v = x.getDouble(off[0]), r = v;
      switch (fn) {
      case UnaryFn::Neg: r = -v; break;
      case UnaryFn::Abs: r = std::fabs(v); break;
      case UnaryFn::Sqrt: r = std::sqrt(v); break;
      case UnaryFn::Exp: r = std::exp(v); break;
      case UnaryFn::Log: r = std::log(v); break;
      case UnaryFn::Floor: r = std::floor(v); break;
      case UnaryFn::Ceil: r = std::ceil(v); break;
      case UnaryFn::Round: r = std::nearbyint(v); break;
      case UnaryFn::Sign: r = v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); break;
      case UnaryFn::Reciprocal: r = 1.0 / v; break;
      case UnaryFn::Relu: r = v > 0 ? v : 0.0; break;
      case UnaryFn::Not: break;
      }
      out.setDouble(i, r);
      return;
    }
    int64_t v = x.getInt(off[0]), r = v;
    // (uint64 values of 2^63 and more are held negative: unsigned kinds are never below 0.)
    bool negative = v < 0 && !isUnsignedKind(x.kind());
    switch (fn) {
    case UnaryFn::Neg: r = static_cast<int64_t>(0ULL - static_cast<uint64_t>(v)); break;
    case UnaryFn::Abs:
      r = negative ? static_cast<int64_t>(0ULL - static_cast<uint64_t>(v)) : v;
      break;
    case UnaryFn::Sign: r = negative ? -1 : (v != 0 ? 1 : 0); break;
    case UnaryFn::Relu: r = negative ? 0 : v; break;
    case UnaryFn::Not: r = !v; break;
    default: break; // Floor, Ceil, Round are the identity on integers.
    }
    out.setInt(i, r);
  });
}

static bool isComparison(BinaryFn fn) {
  return fn == BinaryFn::Equal || fn == BinaryFn::Less || fn == BinaryFn::LessEqual ||
         fn == BinaryFn::Greater || fn == BinaryFn::GreaterEqual;
}

static bool isLogical(BinaryFn fn) {
  return fn == BinaryFn::And || fn == BinaryFn::Or || fn == BinaryFn::Xor;
}

static int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0)
    return base == 1 ? 1 : (base == -1 ? (exp % 2 ? -1 : 1) : 0);
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  while (exp) {
    if (exp & 1)
      result *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<int64_t>(result);
}

llvm::Expected<HostTensor> foldBinary(BinaryFn fn, const HostTensor &a, const HostTensor &b) {
  // Pow may mix element types (ONNX's T and T1); everything else needs one element type.
  if (fn != BinaryFn::Pow && a.kind() != b.kind())
    return foldError(llvm::Twine("operands have different element types ") +
                     kindName(a.kind()) + " and " + kindName(b.kind()));
  if (isLogical(fn) && a.kind() != ElemKind::Bool)
    return foldError("logical ops need bool operands");
  auto shape = plait::broadcastShapes(a.shape(), b.shape());
  if (!shape)
    return foldError("shapes " + shapeStr(a.shape()) + " and " + shapeStr(b.shape()) +
                     " do not broadcast");
  bool useFloat = a.isFloat() || (fn == BinaryFn::Pow && b.isFloat());
  ElemKind outKind = isComparison(fn) ? ElemKind::Bool : a.kind();
  bool divByZero = false;
  const HostTensor *in[] = {&a, &b};
  HostTensor out = mapBroadcast(in, *shape, outKind,
                                [&](HostTensor &o, int64_t i, llvm::ArrayRef<int64_t> off) {
    if (useFloat) {
      double x = a.getDouble(off[0]), y = b.getDouble(off[1]);
      double r = 0;
      switch (fn) {
      case BinaryFn::Add: r = x + y; break;
      case BinaryFn::Sub: r = x - y; break;
      case BinaryFn::Mul: r = x * y; break;
      case BinaryFn::Div: r = x / y; break;
      case BinaryFn::Pow: r = std::pow(x, y); break;
      case BinaryFn::Max: r = (std::isnan(x) || std::isnan(y)) ? NAN : std::max(x, y); break;
      case BinaryFn::Min: r = (std::isnan(x) || std::isnan(y)) ? NAN : std::min(x, y); break;
      case BinaryFn::Mod:
      case BinaryFn::FMod: r = std::fmod(x, y); break;
      case BinaryFn::Equal: r = x == y; break;
      case BinaryFn::Less: r = x < y; break;
      case BinaryFn::LessEqual: r = x <= y; break;
      case BinaryFn::Greater: r = x > y; break;
      case BinaryFn::GreaterEqual: r = x >= y; break;
      default: break;
      }
      o.setDouble(i, r);
      return;
    }
    int64_t x = a.getInt(off[0]), y = b.getInt(off[1]);
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    int64_t r = 0;
    if (a.kind() == ElemKind::U64 && b.kind() == ElemKind::U64) {
      // Held as bit patterns: what reads the order (or divides) reads them unsigned.
      switch (fn) {
      case BinaryFn::Div:
      case BinaryFn::Mod:
      case BinaryFn::FMod:
        if (uy == 0)
          divByZero = true;
        else
          r = static_cast<int64_t>(fn == BinaryFn::Div ? ux / uy : ux % uy);
        o.setInt(i, r);
        return;
      case BinaryFn::Max: o.setInt(i, static_cast<int64_t>(std::max(ux, uy))); return;
      case BinaryFn::Min: o.setInt(i, static_cast<int64_t>(std::min(ux, uy))); return;
      case BinaryFn::Less: o.setInt(i, ux < uy); return;
      case BinaryFn::LessEqual: o.setInt(i, ux <= uy); return;
      case BinaryFn::Greater: o.setInt(i, ux > uy); return;
      case BinaryFn::GreaterEqual: o.setInt(i, ux >= uy); return;
      default: break; // the rest give the same bits as on int64
      }
    }
    switch (fn) {
    case BinaryFn::Add: r = static_cast<int64_t>(ux + uy); break;
    case BinaryFn::Sub: r = static_cast<int64_t>(ux - uy); break;
    case BinaryFn::Mul: r = static_cast<int64_t>(ux * uy); break;
    case BinaryFn::Div:
      if (y == 0)
        divByZero = true;
      else
        r = (x == std::numeric_limits<int64_t>::min() && y == -1) ? x : x / y;
      break;
    case BinaryFn::Mod:
    case BinaryFn::FMod:
      if (y == 0) {
        divByZero = true;
        break;
      }
      r = y == -1 ? 0 : x % y;
      if (fn == BinaryFn::Mod && r != 0 && ((r < 0) != (y < 0)))
        r += y;
      break;
    case BinaryFn::Pow: r = intPow(x, y); break;
    case BinaryFn::Max: r = std::max(x, y); break;
    case BinaryFn::Min: r = std::min(x, y); break;
    case BinaryFn::Equal: r = x == y; break;
    case BinaryFn::Less: r = x < y; break;
    case BinaryFn::LessEqual: r = x <= y; break;
    case BinaryFn::Greater: r = x > y; break;
    case BinaryFn::GreaterEqual: r = x >= y; break;
    case BinaryFn::And: r = x && y; break;
    case BinaryFn::Or: r = x || y; break;
    case BinaryFn::Xor: r = (x != 0) != (y != 0); break;
    case BinaryFn::ShiftLeft: // unsigned kinds only (the importer checks): 0 from the width on
    case BinaryFn::ShiftRight: {
      unsigned bits = integerKind(a.kind()).first;
      r = uy >= bits ? 0
                     : static_cast<int64_t>(fn == BinaryFn::ShiftLeft ? ux << uy : ux >> uy);
      break;
    }
    }
    o.setInt(i, r);
  });
  if (divByZero)
    return foldError("integer division by zero");
  return out;
}

llvm::Expected<HostTensor> foldWhere(const HostTensor &cond, const HostTensor &x,
                                     const HostTensor &y) {
  if (cond.kind() != ElemKind::Bool)
    return foldError("condition must be bool");
  if (x.kind() != y.kind())
    return foldError("x and y have different element types");
  auto xy = plait::broadcastShapes(x.shape(), y.shape());
  auto shape = xy ? plait::broadcastShapes(cond.shape(), *xy) : std::nullopt;
  if (!shape)
    return foldError("shapes of cond, x and y do not broadcast");
  const HostTensor *in[] = {&cond, &x, &y};
  return mapBroadcast(in, *shape, x.kind(),
                      [&](HostTensor &o, int64_t i, llvm::ArrayRef<int64_t> off) {
    const HostTensor &pick = cond.getInt(off[0]) ? x : y;
    int64_t at = cond.getInt(off[0]) ? off[1] : off[2];
    if (o.isFloat())
      o.setDouble(i, pick.getDouble(at));
    else
      o.setInt(i, pick.getInt(at));
  });
}

HostTensor foldCast(const HostTensor &x, ElemKind to) {
  const HostTensor *in[] = {&x};
  return mapBroadcast(in, x.shape(), to,
                      [&](HostTensor &o, int64_t i, llvm::ArrayRef<int64_t> off) {
    if (x.isFloat() || (x.kind() == ElemKind::U64 && isFloatKind(to)))
      o.setDouble(i, x.getDouble(off[0]));
    else
      o.setInt(i, x.getInt(off[0]));
  });
}

HostTensor foldBroadcastTo(const HostTensor &x, llvm::ArrayRef<int64_t> shape) {
  const HostTensor *in[] = {&x};
  return mapBroadcast(in, shape, x.kind(),
                      [&](HostTensor &o, int64_t i, llvm::ArrayRef<int64_t> off) {
    if (x.isFloat())
      o.setDouble(i, x.getDouble(off[0]));
    else
      o.setInt(i, x.getInt(off[0]));
  });
}

/// Copies element `from` of `x` into element `to` of `out` (same kind).
static void copyElement(const HostTensor &x, int64_t from, HostTensor &out, int64_t to) {
  if (x.isFloat())
    out.setDouble(to, x.getDouble(from));
  else
    out.setInt(to, x.getInt(from));
}

HostTensor foldTranspose(const HostTensor &x, llvm::ArrayRef<int64_t> perm) {
  llvm::SmallVector<int64_t> shape, strides;
  llvm::SmallVector<int64_t> inStrides = stridesOf(x.shape());
  for (int64_t p : perm) {
    shape.push_back(x.shape()[p]);
    strides.push_back(inStrides[p]);
  }
  if (x.isSplat())
    return x.reshaped(shape);
  HostTensor out(x.kind(), shape);
  forEachIndex(shape, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    copyElement(x, dot(idx, strides), out, i);
  });
  return out;
}

HostTensor foldSlice(const HostTensor &x, llvm::ArrayRef<int64_t> starts,
                     llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> steps) {
  llvm::SmallVector<int64_t> shape;
  for (size_t d = 0; d < starts.size(); ++d) {
    int64_t s = steps[d];
    shape.push_back(s > 0 ? (ends[d] - starts[d] + s - 1) / s
                          : (starts[d] - ends[d] + (-s) - 1) / (-s));
  }
  if (x.isSplat())
    return x.reshaped(shape);
  llvm::SmallVector<int64_t> inStrides = stridesOf(x.shape());
  HostTensor out(x.kind(), shape);
  forEachIndex(shape, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      off += (starts[d] + idx[d] * steps[d]) * inStrides[d];
    copyElement(x, off, out, i);
  });
  return out;
}

HostTensor foldConcat(llvm::ArrayRef<const HostTensor *> inputs, int64_t axis) {
  llvm::SmallVector<int64_t> shape(inputs[0]->shape());
  shape[axis] = 0;
  for (const HostTensor *t : inputs)
    shape[axis] += t->shape()[axis];
  HostTensor out(inputs[0]->kind(), shape);
  llvm::SmallVector<int64_t> outStrides = stridesOf(shape);
  int64_t base = 0;
  for (const HostTensor *t : inputs) {
    forEachIndex(t->shape(), [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
      int64_t off = dot(idx, outStrides) + base * outStrides[axis];
      copyElement(*t, i, out, off);
    });
    base += t->shape()[axis];
  }
  return out;
}

llvm::Expected<HostTensor> foldGather(const HostTensor &data, const HostTensor &indices,
                                      int64_t axis) {
  int64_t axisSize = data.shape()[axis];
  llvm::SmallVector<int64_t> shape(data.shape().take_front(axis));
  llvm::append_range(shape, indices.shape());
  llvm::append_range(shape, data.shape().drop_front(axis + 1));
  llvm::SmallVector<int64_t> inStrides = stridesOf(data.shape());
  HostTensor out(data.kind(), shape);
  int64_t outerRank = axis, indexRank = indices.rank();
  llvm::SmallVector<int64_t> indexStrides = stridesOf(indices.shape());
  std::optional<int64_t> bad;
  forEachIndex(shape, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    int64_t k = indices.getInt(dot(idx.slice(outerRank, indexRank), indexStrides));
    if (k < -axisSize || k >= axisSize) {
      bad = k;
      return;
    }
    if (k < 0)
      k += axisSize;
    int64_t off = dot(idx.take_front(outerRank), llvm::ArrayRef(inStrides).take_front(axis)) +
                  k * inStrides[axis] +
                  dot(idx.drop_front(outerRank + indexRank),
                      llvm::ArrayRef(inStrides).drop_front(axis + 1));
    copyElement(data, off, out, i);
  });
  if (bad)
    return foldError("index " + llvm::Twine(*bad) + " is out of range for a dimension of size " +
                     llvm::Twine(axisSize));
  return out;
}

HostTensor foldPad(const HostTensor &x, llvm::ArrayRef<int64_t> pads, double value) {
  int64_t rank = x.rank();
  llvm::SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(x.shape()[d] + pads[d] + pads[d + rank]);
  HostTensor out = HostTensor::splat(x.kind(), shape, value).materialized();
  llvm::SmallVector<int64_t> outStrides = stridesOf(shape);
  forEachIndex(x.shape(), [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d)
      off += (idx[d] + pads[d]) * outStrides[d];
    copyElement(x, i, out, off);
  });
  return out;
}

namespace {
/// Folds `v` into the reduction accumulator `acc` (the first value initialises it).
template <typename T> void accumulate(ReduceFn fn, T &acc, T v, bool seen) {
  if (!seen)
    acc = v;
  else if (fn == ReduceFn::Sum || fn == ReduceFn::Mean)
    acc += v;
  else if (fn == ReduceFn::Prod)
    acc *= v;
  else if (fn == ReduceFn::Max)
    acc = std::max(acc, v);
  else
    acc = std::min(acc, v);
}
} // namespace

HostTensor foldReduce(ReduceFn fn, const HostTensor &x, llvm::ArrayRef<int64_t> axes,
                      bool keepdims) {
  int64_t rank = x.rank();
  llvm::SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes)
    reduced[a] = true;
  llvm::SmallVector<int64_t> keptShape; // reduced dims as 1
  llvm::SmallVector<int64_t> outShape;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : x.shape()[d]);
    if (!reduced[d])
      outShape.push_back(x.shape()[d]);
    else if (keepdims)
      outShape.push_back(1);
  }
  int64_t outCount = numElementsOf(keptShape);
  int64_t groupSize = outCount ? x.numElements() / outCount : 0;
  bool isFloat = x.isFloat();
  std::vector<double> accF(outCount);
  std::vector<int64_t> accI(outCount);
  std::vector<bool> seen(outCount, false);
  llvm::SmallVector<int64_t> keptStrides = stridesOf(keptShape);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      keptStrides[d] = 0;
  forEachIndex(x.shape(), [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
    int64_t o = dot(idx, keptStrides);
    if (isFloat) {
      accumulate(fn, accF[o], x.getDouble(i), seen[o]);
    } else if (x.kind() == ElemKind::U64 || (fn != ReduceFn::Max && fn != ReduceFn::Min)) {
      // Sums and products wrap modulo 2^64, as the runtime's uint64 accumulator does (int64
      // overflow would be undefined); uint64 is held as its bit pattern and ordered unsigned.
      uint64_t acc = static_cast<uint64_t>(accI[o]);
      accumulate(fn, acc, static_cast<uint64_t>(x.getInt(i)), seen[o]);
      accI[o] = static_cast<int64_t>(acc);
    } else {
      accumulate(fn, accI[o], x.getInt(i), seen[o]);
    }
    seen[o] = true;
  });
  HostTensor out(x.kind(), outShape);
  for (int64_t o = 0; o < outCount; ++o) {
    if (!seen[o]) { // empty reduction: the identity of the op
      double identity = fn == ReduceFn::Prod ? 1.0
                        : fn == ReduceFn::Max ? -INFINITY
                        : fn == ReduceFn::Min ? INFINITY
                        : fn == ReduceFn::Mean ? NAN
                                               : 0.0;
      out.setDouble(o, identity);
    } else if (isFloat) {
      out.setDouble(o, fn == ReduceFn::Mean ? accF[o] / groupSize : accF[o]);
    } else if (fn == ReduceFn::Mean && x.kind() == ElemKind::U64) {
      out.setInt(o, static_cast<int64_t>(static_cast<uint64_t>(accI[o]) / uint64_t(groupSize)));
    } else {
      out.setInt(o, fn == ReduceFn::Mean ? accI[o] / groupSize : accI[o]);
    }
  }
  return out;
}

} // namespace plait::onnx_import
