// Deterministic, counter-based parameter initialisation (no hidden RNG state).
#include "runtime/ParamInit.h"
#include "runtime/cpu/KernelSupport.h"

#include <cmath>
#include <cstring>

namespace plait::rt {

namespace {

bool parseNonNegative(std::string_view text, double &out) {
  if (text.empty())
    return false;
  std::string s(text);
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out) && out >= 0;
}

// SplitMix64's finaliser: a bijective mix with good avalanche, enough to turn a
// (key, counter) pair into independent-looking 64-bit values.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Uniform in (0, 1]: never 0, so that log() in Box-Muller stays finite.
double unitInterval(uint64_t bits) { return (static_cast<double>(bits >> 11) + 1.0) * 0x1p-53; }

double sample(const ParamInit &init, uint64_t key, uint64_t element) {
  switch (init.kind) {
  case ParamInit::Kind::Zeros:
  case ParamInit::Kind::None:
    return 0.0;
  case ParamInit::Kind::Ones:
    return 1.0;
  case ParamInit::Kind::Uniform: {
    double u = unitInterval(mix64(key ^ mix64(2 * element)));
    return init.scale * (2.0 * u - 1.0);
  }
  case ParamInit::Kind::Normal: {
    // Box-Muller, cosine branch only, so each element depends on its own counter alone.
    double u1 = unitInterval(mix64(key ^ mix64(2 * element)));
    double u2 = unitInterval(mix64(key ^ mix64(2 * element + 1)));
    return init.scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  }
  return 0.0;
}

template <typename T, typename Convert>
void fillAs(void *dst, int64_t numel, Convert convert) {
  T *out = static_cast<T *>(dst);
  for (int64_t i = 0; i < numel; ++i)
    out[i] = convert(i);
}

} // namespace

Status parseParamInit(std::string_view spec, ParamInit &out) {
  out = ParamInit{};
  double scale = 0;
  if (spec == "zeros") {
    out.kind = ParamInit::Kind::Zeros;
  } else if (spec == "ones") {
    out.kind = ParamInit::Kind::Ones;
  } else if (spec.substr(0, 7) == "normal:" && parseNonNegative(spec.substr(7), scale)) {
    out = {ParamInit::Kind::Normal, scale};
  } else if (spec.substr(0, 8) == "uniform:" && parseNonNegative(spec.substr(8), scale)) {
    out = {ParamInit::Kind::Uniform, scale};
  } else {
    return Status::errorf("bad initializer '{}' (expected zeros, ones, normal:STD or "
                          "uniform:BOUND with a non-negative number)",
                          printable(spec));
  }
  return {};
}

Status fillParam(const ParamInit &init, DType dtype, int64_t numel, void *dst, uint64_t seed,
                 std::string_view paramName, int64_t firstElement) {
  bool random = init.kind == ParamInit::Kind::Normal || init.kind == ParamInit::Kind::Uniform;
  if (random && !isFloat(dtype))
    return Status::errorf("initializer needs a float dtype, tensor is {}", dtypeName(dtype));
  uint64_t key = mix64(seed) ^ fnv1a(paramName);
  auto value = [&](int64_t i) { return sample(init, key, static_cast<uint64_t>(firstElement + i)); };
  switch (dtype) {
  case DType::BF16:
    fillAs<uint16_t>(dst, numel,
                     [&](int64_t i) { return floatToBf16(static_cast<float>(value(i))); });
    return {};
  case DType::F16:
    fillAs<uint16_t>(dst, numel,
                     [&](int64_t i) { return floatToF16(static_cast<float>(value(i))); });
    return {};
  case DType::I1:
    fillAs<uint8_t>(dst, numel, [&](int64_t i) { return static_cast<uint8_t>(value(i) != 0); });
    return {};
  default: // the integers take zeros or ones only (random initializers need a float dtype)
    return cpu::dispatchNumeric("initializer", dtype, [&](auto tag) -> Status {
      using T = decltype(tag);
      fillAs<T>(dst, numel, [&](int64_t i) { return static_cast<T>(value(i)); });
      return {};
    });
  }
}

} // namespace plait::rt
