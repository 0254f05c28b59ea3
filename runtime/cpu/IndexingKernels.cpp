// Index-driven kernels for every dtype: gather (embedding lookup) and trilu (causal masks).
#include <algorithm>
#include <cstring>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

/// out[o, q, :] = data[o, indices[q], :] with o over data[:axis] and ':' over data[axis+1:].
Status gatherKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "gather", 2, 2, 1));
  const TensorView &data = call.inputs[0], &indices = call.inputs[1];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gather", data, out));
  PLAIT_RETURN_IF_ERROR(checkIndexDtype("gather", "indices", indices));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis("gather", call.attrs.getInt("axis", 0), data.rank(), axis));
  ShapeRef dataShape = data.shape;
  Dims shape(dataShape.slice(0, axis));
  shape.append(indices.shape);
  shape.append(dataShape.slice(axis + 1, data.shape.size()));
  if (shape.size() != data.shape.size() - 1 + indices.shape.size())
    return Status::errorf("gather: output would have more than {} dimensions", kMaxRank);
  PLAIT_RETURN_IF_ERROR(checkShape("gather", "output", out.shape, shape));
  int64_t count = indices.numel();
  Scratch scratch(call, "gather");
  int64_t *index; // workspace: the normalised indices
  PLAIT_RETURN_IF_ERROR(scratch.take(count, index));
  PLAIT_RETURN_IF_ERROR(normalizeIndices("gather", indices, axis, data.shape[axis], index));
  int64_t outer = product(data.shape, 0, axis), n = data.shape[axis];
  int64_t inner = product(data.shape, axis + 1, data.shape.size());
  return dispatchBySize(data.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *src = data.as<T>();
    T *dst = out.as<T>();
    // Rows (o, q) of `inner` elements, split across the kernels' threads.
    parallelFor(outer * count, grainFor(kElementGrain, inner),
                [&](int64_t, int64_t begin, int64_t end) {
      const T *block = src + (begin / count) * n * inner;
      for (int64_t row = begin, q = begin % count; row < end; ++row) {
        if (inner == 1)
          dst[row] = block[index[q]];
        else
          std::memcpy(dst + row * inner, block + index[q] * inner, inner * sizeof(T));
        if (++q == count) {
          q = 0;
          block += n * inner;
        }
      }
    });
    return Status();
  });
}

/// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each trailing matrix and
/// zeroes the rest; zero is the all-zero bit pattern in every dtype.
Status triluKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "trilu", 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("trilu", x, y));
  PLAIT_RETURN_IF_ERROR(checkShape("trilu", "output", y.shape, x.shape));
  if (x.rank() < 2)
    return Status::errorf("trilu: needs rank >= 2, got {}", x.rank());
  bool upper = call.attrs.getBool("upper", true);
  int64_t k = call.attrs.getInt("k", 0);
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  size_t size = dtypeSize(x.dtype);
  const char *src = static_cast<const char *>(x.data);
  char *dst = static_cast<char *>(y.data);
  // Rows of every matrix, split across the kernels' threads; a row reads only its own bytes,
  // so the result may alias the input.
  parallelFor(matrices * rows, grainFor(kElementGrain, cols),
              [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t i = r % rows, row = r * cols;
      // Columns [keepBegin, keepEnd) survive; clamp i + k into [0, cols] without overflow.
      int64_t edge = std::clamp<int64_t>(k, -cols - i, cols) + i;
      int64_t keepBegin = upper ? std::clamp<int64_t>(edge, 0, cols) : 0;
      int64_t keepEnd = upper ? cols : std::clamp<int64_t>(edge + 1, 0, cols);
      std::memset(dst + row * size, 0, keepBegin * size);
      std::memmove(dst + (row + keepBegin) * size, src + (row + keepBegin) * size,
                   std::max<int64_t>(keepEnd - keepBegin, 0) * size);
      if (keepEnd < cols)
        std::memset(dst + (row + keepEnd) * size, 0, (cols - keepEnd) * size);
    }
  });
  return Status();
}

} // namespace

void registerIndexingKernels() {
  registerKernel("gather", &gatherKernel);
  registerKernel("trilu", &triluKernel);
}

} // namespace plait::rt::cpu
