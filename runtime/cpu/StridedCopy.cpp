// Strided gather into dense memory, with merged dimensions and tiled 2-D transposes.
#include "runtime/cpu/StridedCopy.h"

#include <algorithm>
#include <cstring>

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

template <typename T>
void copyRows(const T *in, ShapeRef shape, ShapeRef strides, T *out) {
  size_t rank = shape.size();
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  // A source that is contiguous along the second-to-last output dimension but strided along
  // the last is a transpose: copy it in square tiles so that both sides stay in cache.
  bool transposed = rank >= 2 && strides[rank - 1] != 1 && strides[rank - 2] == 1;
  size_t loopRank = transposed ? rank - 2 : rank - 1;
  int64_t blockSize = transposed ? shape[rank - 2] * shape[rank - 1] : shape[rank - 1];
  Dims index(loopRank, 0);
  int64_t offset = 0;
  for (int64_t done = 0; done < total; done += blockSize) {
    if (transposed) {
      int64_t rows = shape[rank - 2], cols = shape[rank - 1], colStride = strides[rank - 1];
      for (int64_t r0 = 0; r0 < rows; r0 += kTile)
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
          int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c)
              out[r * cols + c] = in[offset + r + c * colStride];
        }
    } else {
      int64_t n = shape[rank - 1], stride = strides[rank - 1];
      const T *src = in + offset;
      if (stride == 1)
        std::memcpy(out, src, n * sizeof(T));
      else if (stride == 0)
        std::fill(out, out + n, *src);
      else
        for (int64_t i = 0; i < n; ++i)
          out[i] = src[i * stride];
    }
    out += blockSize;
    for (size_t d = loopRank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

} // namespace

void stridedCopy(const void *in, size_t elementSize, ShapeRef shape, ShapeRef strides,
                 void *out) {
  Dims s, st;
  collapse(shape, strides, s, st);
  switch (elementSize) {
  case 1:
    return copyRows(static_cast<const uint8_t *>(in), s, st, static_cast<uint8_t *>(out));
  case 2:
    return copyRows(static_cast<const uint16_t *>(in), s, st, static_cast<uint16_t *>(out));
  case 4:
    return copyRows(static_cast<const uint32_t *>(in), s, st, static_cast<uint32_t *>(out));
  default:
    return copyRows(static_cast<const uint64_t *>(in), s, st, static_cast<uint64_t *>(out));
  }
}

} // namespace plait::rt::cpu
