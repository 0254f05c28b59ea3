// Data-movement kernels for every dtype: reshape, transpose, broadcast_to, slice, pad,
// concat, split and local_shard. They move elements as opaque bytes and never look at values
// (except pad, which writes its fill value). Transpose, broadcast_to, slice (StridedCopy.cpp),
// pad, concat and split split their rows across the kernels' threads (Parallel.h); every
// element is copied once, so the result is the same on any thread count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/StridedCopy.h"

namespace plait::rt::cpu {
namespace {

Status checkUnaryMove(const KernelCall &call, std::string_view kernel) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 1, 1, 1));
  return checkSameDtype(kernel, call.inputs[0], call.outputs[0]);
}

Status reshapeKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "reshape"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  if (x.numel() != y.numel())
    return Status::errorf("reshape: cannot reshape {} to {}", shapeString(x.shape),
                          shapeString(y.shape));
  if (x.data != y.data)
    std::memmove(y.data, x.data, x.bytes());
  return Status();
}

Status transposeKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "transpose"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  const std::vector<int64_t> &perm = call.attrs.getInts("perm");
  if ((int64_t)perm.size() != x.rank())
    return Status::errorf("transpose: perm has {} entries for rank {}", perm.size(), x.rank());
  std::array<bool, kMaxRank> seen{};
  Dims inStrides = contiguousStrides(x.shape), shape, strides;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p])
      return Status::errorf("transpose: perm is not a permutation of 0..{}", x.rank() - 1);
    seen[p] = true;
    shape.push_back(x.shape[p]);
    strides.push_back(inStrides[p]);
  }
  PLAIT_RETURN_IF_ERROR(checkShape("transpose", "output", y.shape, shape));
  stridedCopy(x.data, dtypeSize(x.dtype), shape, strides, y.data);
  return Status();
}

Status broadcastToKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "broadcast_to"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  if (!broadcastsTo(x.shape, y.shape))
    return Status::errorf("broadcast_to: cannot broadcast {} to {}", shapeString(x.shape),
                          shapeString(y.shape));
  Dims inStrides = contiguousStrides(x.shape);
  Dims strides(y.shape.size(), 0);
  size_t lead = y.shape.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d)
    strides[lead + d] = x.shape[d] == 1 ? 0 : inStrides[d];
  stridedCopy(x.data, dtypeSize(x.dtype), y.shape, strides, y.data);
  return Status();
}

/// Slices with normalised (start, end, step) per dimension: step > 0 needs
/// 0 <= start <= end <= n, step < 0 needs -1 <= end <= start <= n - 1.
Status sliceKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "slice"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  int64_t offset = 0;
  Dims strides;
  PLAIT_RETURN_IF_ERROR(sliceView(call.attrs, x, y, offset, strides));
  if (y.numel() == 0)
    return Status();
  const char *base = static_cast<const char *>(x.data) + offset * dtypeSize(x.dtype);
  stridedCopy(base, dtypeSize(x.dtype), y.shape, strides, y.data);
  return Status();
}

/// Constant padding, by output rows split across the kernels' threads: a chunk of rows is
/// filled, then the input rows that fall in it are copied into place.
Status padKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "pad"));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  const std::vector<int64_t> &pads = call.attrs.getInts("pads");
  size_t rank = x.shape.size();
  if (pads.size() != 2 * rank)
    return Status::errorf("pad: 'pads' must have {} entries, got {}", 2 * rank, pads.size());
  Dims shape;
  for (size_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[d + rank] < 0)
      return Status::error("pad: 'pads' entries must be >= 0");
    shape.push_back(x.shape[d] + pads[d] + pads[d + rank]);
  }
  PLAIT_RETURN_IF_ERROR(checkShape("pad", "output", y.shape, shape));
  const double value = call.attrs.getFloat("value", 0.0);
  const size_t size = dtypeSize(x.dtype);
  if (y.numel() == 0)
    return Status();
  if (rank == 0) {
    std::memcpy(y.data, x.data, size);
    return Status();
  }
  const int64_t inRow = x.shape[rank - 1], outRow = shape[rank - 1];
  const int64_t before = pads[rank - 1];
  const bool empty = x.numel() == 0;
  const char *src = static_cast<const char *>(x.data);
  char *dst = static_cast<char *>(y.data);
  parallelFor(y.numel() / outRow, grainFor(kElementGrain, outRow),
              [&](int64_t, int64_t begin, int64_t end) {
    // The chunk's rows filled at once (one vectorised fill, not three calls a row), then the
    // input's rows copied into place.
    fillValue(dst + begin * outRow * int64_t(size), y.dtype, (end - begin) * outRow, value);
    if (empty)
      return;
    // The output row's index over the outer dimensions, advanced row by row.
    Dims index(rank - 1, 0);
    for (size_t d = rank - 1, rest = size_t(begin); d-- > 0;) {
      index[d] = int64_t(rest % size_t(shape[d]));
      rest /= size_t(shape[d]);
    }
    for (int64_t r = begin; r < end; ++r) {
      // The input row this output row holds, if any.
      bool inside = true;
      int64_t inIndex = 0;
      for (size_t d = 0; d + 1 < rank; ++d) {
        int64_t i = index[d] - pads[d];
        inside = inside && i >= 0 && i < x.shape[d];
        inIndex = inIndex * x.shape[d] + i;
      }
      if (inside)
        std::memcpy(dst + (r * outRow + before) * int64_t(size),
                    src + inIndex * inRow * int64_t(size), size_t(inRow) * size);
      for (size_t d = rank - 1; d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
  });
  return Status();
}

/// Concatenation: for each index of the dimensions before `axis`, the inputs' contiguous
/// slabs are laid end to end.
Status concatKernel(const KernelCall &call) {
  if (call.inputs.empty() || call.outputs.size() != 1)
    return Status::errorf("concat: expected at least 1 input and 1 output, got {} and {}",
                          call.inputs.size(), call.outputs.size());
  PLAIT_RETURN_IF_ERROR(checkOperandRanks(call, "concat"));
  TensorView &y = call.outputs[0];
  const TensorView &first = call.inputs[0];
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis("concat", call.attrs.getInt("axis", 0), first.rank(), axis));
  Dims shape(first.shape);
  shape[axis] = 0;
  for (const TensorView &t : call.inputs) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("concat", t, y));
    if (t.rank() != first.rank())
      return Status::error("concat: inputs differ in rank");
    for (int64_t d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape[d] != first.shape[d])
        return Status::errorf("concat: inputs differ in dimension {}", d);
    shape[axis] += t.shape[axis];
  }
  PLAIT_RETURN_IF_ERROR(checkShape("concat", "output", y.shape, shape));
  size_t size = dtypeSize(y.dtype);
  int64_t outer = product(shape, 0, axis);
  int64_t inner = product(shape, axis + 1, shape.size());
  int64_t innerBytes = inner * (int64_t)size;
  // Outer rows split across the kernels' threads, each the inputs' slabs end to end.
  parallelFor(outer, grainFor(kElementGrain, shape[axis] * inner),
              [&](int64_t, int64_t begin, int64_t end) {
    char *dst = static_cast<char *>(y.data) + begin * shape[axis] * innerBytes;
    for (int64_t o = begin; o < end; ++o)
      for (const TensorView &t : call.inputs) {
        int64_t slab = t.shape[axis] * innerBytes;
        if (slab > 0) // an empty input may have no bytes at all (a null view)
          std::memcpy(dst, static_cast<const char *>(t.data) + o * slab, slab);
        dst += slab;
      }
  });
  return Status();
}

/// Split: the inverse of concat, with output i taking sizes[i] entries along `axis`.
Status splitKernel(const KernelCall &call) {
  if (call.inputs.size() != 1)
    return Status::errorf("split: expected 1 input, got {}", call.inputs.size());
  PLAIT_RETURN_IF_ERROR(checkOperandRanks(call, "split"));
  const TensorView &x = call.inputs[0];
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis("split", call.attrs.getInt("axis", 0), x.rank(), axis));
  const std::vector<int64_t> &sizes = call.attrs.getInts("sizes");
  if (sizes.size() != call.outputs.size())
    return Status::errorf("split: {} sizes for {} outputs", sizes.size(), call.outputs.size());
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      return Status::error("split: sizes must be >= 0");
    total += sizes[i];
    Dims shape(x.shape);
    shape[axis] = sizes[i];
    PLAIT_RETURN_IF_ERROR(checkSameDtype("split", x, call.outputs[i]));
    PLAIT_RETURN_IF_ERROR(checkShape("split", "output", call.outputs[i].shape, shape));
  }
  if (total != x.shape[axis])
    return Status::errorf("split: sizes add up to {}, dimension {} is {}", total, axis,
                          x.shape[axis]);
  size_t size = dtypeSize(x.dtype);
  int64_t outer = product(x.shape, 0, axis);
  int64_t inner = product(x.shape, axis + 1, x.shape.size());
  int64_t innerBytes = inner * (int64_t)size;
  // Outer rows split across the kernels' threads, each cut into the outputs' slabs.
  parallelFor(outer, grainFor(kElementGrain, x.shape[axis] * inner),
              [&](int64_t, int64_t begin, int64_t end) {
    const char *src = static_cast<const char *>(x.data) + begin * x.shape[axis] * innerBytes;
    for (int64_t o = begin; o < end; ++o)
      for (size_t i = 0; i < sizes.size(); ++i) {
        int64_t slab = sizes[i] * innerBytes;
        if (slab > 0) // an empty part may have no bytes at all (a null view)
          std::memcpy(static_cast<char *>(call.outputs[i].data) + o * slab, src, slab);
        src += slab;
      }
  });
  return Status();
}

/// local_shard(x) -> chunk i of x's elements, i = this rank's index within its group in
/// attr `groups` (group-major, `group_size` ranks each): how a rank keeps its shard of a
/// replicated value without communicating.
Status localShardKernel(const KernelCall &call) {
  constexpr std::string_view kName = "local_shard";
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, kName));
  const TensorView &x = call.inputs[0];
  TensorView &y = call.outputs[0];
  const std::vector<int64_t> &groups = call.attrs.getInts("groups");
  int64_t groupSize = call.attrs.getInt("group_size", 0);
  if (groupSize < 1 || x.numel() != y.numel() * groupSize)
    return Status::errorf("{}: input {} is not {} chunks of output {}", kName,
                          shapeString(x.shape), groupSize, shapeString(y.shape));
  auto it = std::find(groups.begin(), groups.end(), int64_t(call.rank));
  if (it == groups.end())
    return Status::errorf("{}: rank {} is in none of the groups", kName, call.rank);
  int64_t index = (it - groups.begin()) % groupSize;
  std::memmove(y.data, static_cast<const char *>(x.data) + index * y.bytes(), y.bytes());
  return Status();
}

} // namespace

void fillValue(void *dst, DType dtype, int64_t n, double value) {
  auto fill = [&](auto v) {
    auto *p = static_cast<decltype(v) *>(dst);
    std::fill(p, p + n, v);
  };
  switch (dtype) {
  case DType::BF16:
    return fill(floatToBf16(float(value)));
  case DType::F16:
    return fill(floatToF16(float(value)));
  case DType::I1:
    return fill(uint8_t(value != 0));
  default:
    (void)dispatchNumeric("pad", dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>)
        fill(T(value));
      else
        fill(truncateToInteger<T>(value));
      return Status();
    });
  }
}

void registerMovementKernels() {
  registerKernel("reshape", &reshapeKernel);
  registerKernel("transpose", &transposeKernel);
  registerKernel("broadcast_to", &broadcastToKernel);
  registerKernel("slice", &sliceKernel);
  registerKernel("pad", &padKernel);
  registerKernel("concat", &concatKernel);
  registerKernel("split", &splitKernel);
  registerKernel("local_shard", &localShardKernel);
}

} // namespace plait::rt::cpu
