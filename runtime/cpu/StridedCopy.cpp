// Strided gather into dense memory, with merged dimensions and tiled 2-D transposes, split
// across the kernels' threads (Parallel.h) by pieces of rows or bands of tiles.
#include "runtime/cpu/StridedCopy.h"

#include <algorithm>
#include <cstring>

#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

/// Drops size-1 dimensions and merges neighbours that are contiguous in the source, so a
/// plain copy becomes one row and a batched transpose becomes [batch, rows, cols].
void collapse(ShapeRef shape, ShapeRef strides, Dims &outShape, Dims &outStrides) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!outShape.empty() && outStrides.back() == strides[d] * shape[d]) {
      outShape.back() *= shape[d];
      outStrides.back() = strides[d];
    } else {
      outShape.push_back(shape[d]);
      outStrides.push_back(strides[d]);
    }
  }
  if (outShape.empty()) {
    outShape.push_back(1);
    outStrides.push_back(0);
  }
}

constexpr int64_t kTile = 32;

/// A collapsed copy as blocks (an innermost row, or for a transpose a 2-D [rows, cols]
/// matrix) over the outer dimensions, each block cut into units that one thread copies: a
/// piece of a row of at most kElementGrain elements, or a band of kTile rows of tiles.
struct CopyUnits {
  ShapeRef shape, strides;
  bool transposed = false;
  size_t loopRank = 0;    // the dimensions the blocks walk
  int64_t blockSize = 0;  // elements of one block
  int64_t perBlock = 1;   // units in a block
  int64_t unitWork = 0;   // elements of a whole unit

  CopyUnits(ShapeRef s, ShapeRef st) : shape(s), strides(st) {
    size_t rank = shape.size();
    // A source that is contiguous along the second-to-last output dimension but strided along
    // the last is a transpose: copy it in square tiles so that both sides stay in cache.
    transposed = rank >= 2 && strides[rank - 1] != 1 && strides[rank - 2] == 1;
    loopRank = transposed ? rank - 2 : rank - 1;
    if (transposed) {
      blockSize = shape[rank - 2] * shape[rank - 1];
      perBlock = (shape[rank - 2] + kTile - 1) / kTile;
      unitWork = kTile * shape[rank - 1];
    } else {
      blockSize = shape[rank - 1];
      perBlock = std::max<int64_t>(1, (blockSize + kElementGrain - 1) / kElementGrain);
      unitWork = std::min(blockSize, kElementGrain);
    }
  }
};

/// Copies units [begin, end) of `u` (block-major).
template <typename T>
void copyUnits(const T *in, const CopyUnits &u, T *out, int64_t begin, int64_t end) {
  ShapeRef shape = u.shape, strides = u.strides;
  size_t rank = shape.size();
  int64_t block = begin / u.perBlock, part = begin % u.perBlock;
  // The first block's index over the looped dimensions, and its source offset.
  Dims index(u.loopRank, 0);
  int64_t offset = 0;
  for (size_t d = u.loopRank, rest = size_t(block); d-- > 0;) {
    index[d] = int64_t(rest % size_t(shape[d]));
    rest /= size_t(shape[d]);
    offset += index[d] * strides[d];
  }
  for (int64_t unit = begin; unit < end; ++unit) {
    T *blockOut = out + block * u.blockSize;
    if (u.transposed) {
      int64_t rows = shape[rank - 2], cols = shape[rank - 1], colStride = strides[rank - 1];
      int64_t r0 = part * kTile, r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            blockOut[r * cols + c] = in[offset + r + c * colStride];
      }
    } else {
      int64_t stride = strides[rank - 1];
      int64_t i0 = part * kElementGrain, i1 = std::min(u.blockSize, i0 + kElementGrain);
      const T *src = in + offset;
      if (stride == 1)
        std::memcpy(blockOut + i0, src + i0, size_t(i1 - i0) * sizeof(T));
      else if (stride == 0)
        std::fill(blockOut + i0, blockOut + i1, *src);
      else
        for (int64_t i = i0; i < i1; ++i)
          blockOut[i] = src[i * stride];
    }
    if (++part < u.perBlock)
      continue;
    part = 0;
    ++block;
    for (size_t d = u.loopRank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

template <typename T> void copyAll(const T *in, ShapeRef shape, ShapeRef strides, T *out) {
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  CopyUnits u(shape, strides);
  int64_t units = total / u.blockSize * u.perBlock;
  parallelFor(units, grainFor(kElementGrain, u.unitWork),
              [&](int64_t, int64_t begin, int64_t end) { copyUnits(in, u, out, begin, end); });
}

} // namespace

void stridedCopy(const void *in, size_t elementSize, ShapeRef shape, ShapeRef strides,
                 void *out) {
  Dims s, st;
  collapse(shape, strides, s, st);
  switch (elementSize) {
  case 1:
    return copyAll(static_cast<const uint8_t *>(in), s, st, static_cast<uint8_t *>(out));
  case 2:
    return copyAll(static_cast<const uint16_t *>(in), s, st, static_cast<uint16_t *>(out));
  case 4:
    return copyAll(static_cast<const uint32_t *>(in), s, st, static_cast<uint32_t *>(out));
  default:
    return copyAll(static_cast<const uint64_t *>(in), s, st, static_cast<uint64_t *>(out));
  }
}

} // namespace plait::rt::cpu
