// Shape rules shared by the op verifiers, the importer and the runtime-facing passes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace plait {

/// numpy broadcasting of two shapes; nullopt when they are incompatible.
std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b);

/// True when `from` broadcasts (numpy rules) to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// Normalises a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// A reduction's `axes` normalised against `rank` and sorted (empty: every axis); nullopt
/// when one is out of range.
std::optional<llvm::SmallVector<int64_t>> normalizeAxes(llvm::ArrayRef<int64_t> axes,
                                                        int64_t rank);

/// Extent of a dilated window, dilation * (kernel - 1) + 1; nullopt when it overflows int64.
/// Expects kernel >= 1 and dilation >= 1.
std::optional<int64_t> windowSpan(int64_t kernel, int64_t dilation);

/// Output size of one spatial dimension of a convolution or pooling window:
/// floor((in + padBegin + padEnd - span) / stride) + 1 (ceil instead of floor with ceilMode,
/// dropping a last window that would start in the end padding), where span = windowSpan().
/// 0 when the window does not fit the padded input, or when the arithmetic overflows int64.
/// Expects kernel, stride, dilation >= 1 and pads >= 0.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                         int64_t padEnd, int64_t dilation, bool ceilMode);

/// Number of elements of a static shape; nullopt when it overflows int64.
std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape);

/// Prints a shape as "2x3x4" (scalars as "scalar") for diagnostics.
std::string shapeToString(llvm::ArrayRef<int64_t> shape);

} // namespace plait
