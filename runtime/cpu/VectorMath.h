// Branch-free f32 math that the compiler can vectorise (libm's expf/erff are scalar calls),
// and blocked float sums that are both vectorisable and accurate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Function multiversioning for hot elementwise loops: GCC compiles the function for AVX-512,
// for AVX2 and for the baseline, and the loader picks one for the CPU it runs on (the kernel
// sources build with -ffp-contract=off, so all three round alike). Clang does not clone
// templates (the sanitizer build): it gets the baseline.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PLAIT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PLAIT_SIMD_CLONES
#endif
// The helpers below are always inlined, so that a cloned caller runs them with its own
// instruction set (an out-of-line call would run the baseline build).
#define PLAIT_VECTOR_INLINE inline __attribute__((always_inline))

namespace plait::rt::cpu {

inline float bitsToFloat(int32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline int32_t floatToBits(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// A bf16 element's f32 value (bf16 is the top half of an f32: exact), as bf16ToFloat
/// (runtime/Tensor.h) computes it, inline so that loops over bf16 elements vectorise.
PLAIT_VECTOR_INLINE float widenBf16(uint16_t bits) {
  return bitsToFloat(int32_t(uint32_t(bits) << 16));
}

/// x rounded to bf16 and widened back, as floatToBf16 / bf16ToFloat (runtime/Tensor.h) round
/// it: to nearest even, NaN stays a (quiet) NaN. Branch-free, so that loops vectorise; a
/// fused kernel rounds with it where the unfused bf16 kernels store their results.
PLAIT_VECTOR_INLINE float roundToBf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  uint32_t quiet = (b | 0x00400000u) & 0xffff0000u;
  uint32_t r = (b & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
  float y;
  std::memcpy(&y, &r, sizeof y);
  return y;
}

/// x's bf16 bits, rounded as floatToBf16 (runtime/Tensor.h) rounds it (roundToBf16), inline
/// and branch-free so that loops storing bf16 vectorise.
PLAIT_VECTOR_INLINE uint16_t narrowBf16(float x) {
  return uint16_t(uint32_t(floatToBits(roundToBf16(x))) >> 16);
}

/// An f16 element's f32 value (exact), as f16ToFloat (runtime/Tensor.h) computes it,
/// branch-free so that loops vectorise: a finite half's exponent and mantissa shifted into an
/// f32 are its value times 2^-112 (a subnormal half lands on an f32 subnormal), and the
/// product by 2^112 is exact; infinities and NaNs keep their payload.
PLAIT_VECTOR_INLINE float widenF16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, shifted = uint32_t(h & 0x7fffu) << 13;
  const float finite = bitsToFloat(int32_t(shifted)) * 0x1p112f;
  const uint32_t special = shifted | 0x7f800000u; // exponent 31: inf or NaN
  const uint32_t bits = shifted >= (0x7c00u << 13) ? special : uint32_t(floatToBits(finite));
  return bitsToFloat(int32_t(bits | sign));
}

/// x's f16 bits, rounded to nearest even as floatToF16 (runtime/Tensor.h) rounds it,
/// branch-free so that loops vectorise: NaN keeps the top of its payload (quiet), 65,520 and
/// above round to inf, a subnormal result is rounded by the FPU (x + 0.5 has an ulp of 2^-24,
/// the subnormal half's unit), a normal one by rebiasing the exponent and rounding the
/// mantissa's low 13 bits.
PLAIT_VECTOR_INLINE uint16_t narrowF16(float x) {
  const uint32_t b = uint32_t(floatToBits(x));
  const uint32_t sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  const uint32_t magic = 0x3f000000u; // 0.5f
  const uint32_t subnormal =
      uint32_t(floatToBits(bitsToFloat(int32_t(a)) + bitsToFloat(int32_t(magic)))) - magic;
  const uint32_t rebased = a - (112u << 23);
  const uint32_t normal = (rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13;
  const uint32_t r = a > 0x7f800000u   ? nan
                     : a >= 0x477ff000u ? 0x7c00u
                     : a < 0x38800000u  ? subnormal
                                        : normal;
  return uint16_t(sign | r);
}

/// e^x for f32 to about 1 ulp (Cephes expf: range reduction by ln 2, degree-6 polynomial).
/// Overflows to inf, underflows through the denormals to 0, NaN stays NaN.
PLAIT_VECTOR_INLINE float expApprox(float x) {
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float kRound = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  // Below -104, e^x rounds to 0. Those lanes (a masked softmax's -inf, half of every causal
  // attention row) compute e^0 and select 0: computing a result that underflows costs a
  // microcode assist per element on x86 (about 100 cycles), and here they would be most
  // lanes. Ternaries, not std::min/max: those block if-conversion (and these keep NaN).
  bool underflows = x < -104.0f;
  float xc = underflows ? 0.0f : x;
  xc = xc > 88.8f ? 88.8f : xc;
  float t = xc * kLog2e + kRound;
  float n = t - kRound;
  int32_t ni = floatToBits(t) - floatToBits(kRound);
  float r = xc - n * kLn2Hi - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n is in [-150, 128]: apply 2^n as 2^(n/2) * 2^(n - n/2), two factors whose exponents
  // are always representable, so that results overflow to inf and underflow through the
  // denormals (e^-104 rounds to 0) exactly as a correctly rounded exp would.
  // (Shifted as unsigned: for a NaN input n is garbage, and so harmlessly is the scale.)
  int32_t half = ni >> 1;
  float scaleA = bitsToFloat(int32_t(uint32_t(half + 127) << 23));
  float scaleB = bitsToFloat(int32_t(uint32_t(ni - half + 127) << 23));
  float result = p * scaleA * scaleB;
  return underflows ? 0.0f : result;
}

/// 1 / (1 + e^-x) for f32; exact limits 0 and 1 at the extremes.
PLAIT_VECTOR_INLINE float sigmoidApprox(float x) { return 1.0f / (1.0f + expApprox(-x)); }

/// erf for f32: the Taylor series x * P(x^2) (ten terms) below |x| = 0.9, which keeps the
/// relative error near zero small, and Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7, the
/// approximation PyTorch's vectorised CPU erf uses) above. Both are evaluated and one is
/// selected, so the loop stays branch-free.
PLAIT_VECTOR_INLINE float erfApprox(float x) {
  float x2 = x * x;
  float series = -1.6365844691234924e-07f;
  series = series * x2 + 1.6462114365889246e-06f;
  series = series * x2 - 1.492565035840625e-05f;
  series = series * x2 + 0.00012055332981789664f;
  series = series * x2 - 0.0008548327023450852f;
  series = series * x2 + 0.005223977625442188f;
  series = series * x2 - 0.026866170645131252f;
  series = series * x2 + 0.11283791670955126f;
  series = series * x2 - 0.37612638903183754f;
  series = series * x2 + 1.1283791670955126f;
  series *= x;
  const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f,
              a4 = -1.453152027f, a5 = 1.061405429f;
  float ax = x < 0 ? -x : x;
  float t = 1.0f / (1.0f + p * ax);
  float poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t;
  float tail = 1.0f - poly * expApprox(-x2);
  tail = x < 0 ? -tail : tail;
  return ax < 0.9f ? series : tail;
}

/// Whether powBySmallInteger computes x^e: an exponent of 1, 2 or 3.
template <typename T> PLAIT_VECTOR_INLINE bool isSmallIntegerExponent(T e) {
  return e == T(1) || e == T(2) || e == T(3);
}

/// y = x^e for an exponent of 1, 2 or 3, as products (x * x is the correctly rounded square,
/// at a fraction of std::pow's cost); returns false, having written nothing, for any other
/// exponent. The pow kernel and the fused kernels both use it for a one-element exponent
/// over a whole base, so they round alike.
template <typename T>
PLAIT_VECTOR_INLINE bool powBySmallInteger(const T *x, T e, T *y, int64_t n) {
  if (e == T(1)) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i];
  } else if (e == T(2)) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * x[i];
  } else if (e == T(3)) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * x[i] * x[i];
  } else {
    return false;
  }
  return true;
}

/// Sum of term(i) over i in [0, n): eight lanes of T over blocks of 1024 (vectorisable,
/// short dependency chains), blocks added in double, so long sums keep their precision.
/// `term` maps an index to the T added; it is inlined into both the lanes and the tail.
template <typename T, typename Term>
PLAIT_VECTOR_INLINE double blockedIndexSum(int64_t n, Term term) {
  double total = 0;
  for (int64_t begin = 0; begin < n; begin += 1024) {
    int64_t end = std::min(n, begin + 1024);
    T lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = begin;
    for (; i + 8 <= end; i += 8)
      for (int j = 0; j < 8; ++j)
        lanes[j] += term(i + j);
    T block = 0;
    for (; i < end; ++i)
      block += term(i);
    for (int j = 0; j < 8; ++j)
      block += lanes[j];
    total += double(block);
  }
  return total;
}

/// Sum of term(x[i]) over n floats in float lanes (blockedIndexSum).
template <typename Term> PLAIT_VECTOR_INLINE double blockedSum(const float *x, int64_t n, Term term) {
  return blockedIndexSum<float>(n, [&](int64_t i) { return term(x[i]); });
}

/// Sum of n floats.
PLAIT_VECTOR_INLINE double sumFloats(const float *x, int64_t n) {
  return blockedSum(x, n, [](float v) { return v; });
}

/// Sum of (x[i] - mean)^2.
PLAIT_VECTOR_INLINE double sumSquaredDeviations(const float *x, int64_t n, float mean) {
  return blockedSum(x, n, [mean](float v) {
    float d = v - mean;
    return d * d;
  });
}

/// Largest of n >= 1 floats, in eight lanes (NaN handling is left to the caller: a NaN
/// input poisons whatever the caller computes from it next).
PLAIT_VECTOR_INLINE float maxFloats(const float *x, int64_t n) {
  float lanes[8];
  for (int j = 0; j < 8; ++j)
    lanes[j] = x[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      lanes[j] = lanes[j] > x[i + j] ? lanes[j] : x[i + j];
  float m = x[0];
  for (; i < n; ++i)
    m = m > x[i] ? m : x[i];
  for (int j = 0; j < 8; ++j)
    m = m > lanes[j] ? m : lanes[j];
  return m;
}

/// Sum of e^(x[i] - shift).
PLAIT_VECTOR_INLINE double sumExpShifted(const float *x, int64_t n, float shift) {
  return blockedSum(x, n, [shift](float v) { return expApprox(v - shift); });
}

} // namespace plait::rt::cpu
