// Element-type facts and the bf16 / IEEE half conversions used by kernels and file readers.
#include "runtime/Tensor.h"

#include <cstring>

#include <fmt/format.h>

namespace plait::rt {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "ui8";
  case DType::I16:
    return "i16";
  case DType::U16:
    return "ui16";
  case DType::U32:
    return "ui32";
  case DType::U64:
    return "ui64";
  }
  return "unknown";
}

bool parseDTypeName(const std::string &name, DType &out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (DType t = DType(i); name == dtypeName(t)) {
      out = t;
      return true;
    }
  return false;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16;
}

bool isUnsigned(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return shapeString(shape.data(), shape.size());
}

std::string shapeString(const int64_t *dims, size_t rank) {
  return fmt::format("[{}]", fmt::join(dims, dims + rank, ", "));
}

namespace {
uint32_t floatBits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float bitsFloat(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
} // namespace

float bf16ToFloat(uint16_t v) { return bitsFloat(static_cast<uint32_t>(v) << 16); }

uint16_t floatToBf16(float v) {
  uint32_t b = floatBits(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a (quiet) NaN, never round to inf
    return static_cast<uint16_t>((b >> 16) | 0x0040u);
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // inf / NaN
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitsFloat(sign);
    // Subnormal half: value = mant * 2^-24, exactly representable as a float.
    float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t floatToF16(float v) {
  uint32_t b = floatBits(v);
  uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  uint32_t absBits = b & 0x7fffffffu;
  if (absBits > 0x7f800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((absBits >> 13) & 0x3ffu));
  if (absBits >= 0x477ff000u) // >= 65520 rounds to inf (65504 is the largest half)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absBits < 0x38800000u) { // below the smallest normal half (2^-14): subnormal or zero
    if (absBits < 0x33000000u) // below half the smallest subnormal (2^-25): rounds to zero
      return sign;
    uint32_t exp = absBits >> 23;
    uint32_t mant = (absBits & 0x7fffffu) | 0x800000u; // restore the implicit bit
    // value = mant * 2^(exp-150) and the half subnormal unit is 2^-24, so the value in units
    // is mant >> (126 - exp); the shift is 14..24 here.
    uint32_t shift = 126u - exp;
    uint32_t units = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (units & 1u)))
      ++units;
    return static_cast<uint16_t>(sign | units);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  uint32_t rebased = absBits - (112u << 23);
  uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

} // namespace plait::rt
