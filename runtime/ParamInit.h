// Initialisers for parameters that the plan gives as a spec (zeros, ones, normal:STD,
// uniform:BOUND) instead of data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

struct ParamInit {
  enum class Kind : uint8_t { None, Zeros, Ones, Normal, Uniform };
  Kind kind = Kind::None;
  double scale = 0; // standard deviation (Normal) or bound (Uniform)
};

/// Parses "zeros", "ones", "normal:STD" (STD >= 0) or "uniform:BOUND" (BOUND >= 0).
/// On failure the message says what was expected, without naming the tensor.
Status parseParamInit(std::string_view spec, ParamInit &out);

/// Writes `numel` elements of `dtype` at `dst`. Random values are a pure function of
/// (seed, paramName, element index): the same seed gives the same parameters on every
/// rank and under every sharding, and a shard holding elements [firstElement,
/// firstElement + numel) of the full tensor gets exactly that slice of it.
Status fillParam(const ParamInit &init, DType dtype, int64_t numel, void *dst, uint64_t seed,
                 std::string_view paramName, int64_t firstElement = 0);

} // namespace plait::rt
