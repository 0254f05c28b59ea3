// Sliding-window geometry (kernel, strides, pads, dilations) shared by conv2d and the pools.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/Kernel.h"

namespace plait::rt::cpu {

/// The geometry of a 2-D window over NCHW; index 0 is height, 1 is width.
struct Window2d {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padBegin[2] = {0, 0}; // pads[0] (top), pads[1] (left)
  int64_t padEnd[2] = {0, 0};   // pads[2] (bottom), pads[3] (right)
  int64_t dilation[2] = {1, 1};
  bool ceilMode = false;

  /// Output extent along `dim` for an input extent `in`, as the compiler's shape rule has it.
  int64_t outputSize(int dim, int64_t in) const;
};

/// Reads strides, pads, dilations (when `hasDilations`; else 1) and ceil_mode from `attrs`
/// and checks their lengths and ranges. `kernel` comes from the weight shape (conv2d) or
/// from the `kernel` attribute (pools) and must be set by the caller first.
Status parseWindow(std::string_view kernelName, const Attrs &attrs, bool hasDilations,
                   Window2d &window);

} // namespace plait::rt::cpu
