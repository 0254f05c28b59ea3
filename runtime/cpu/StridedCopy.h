// Gathers a strided view of a tensor into dense memory: the engine of transpose, slice and
// broadcast_to.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/cpu/Dims.h"

namespace plait::rt::cpu {

/// Writes the dense row-major tensor of `shape` whose element at index (i0, i1, ...) is
/// in[sum_d i_d * strides[d]] (strides in elements; 0 repeats, negative walks backwards).
/// Elements are copied as opaque `elementSize`-byte values, so every dtype shares this code.
void stridedCopy(const void *in, size_t elementSize, ShapeRef shape, ShapeRef strides,
                 void *out);

} // namespace plait::rt::cpu
