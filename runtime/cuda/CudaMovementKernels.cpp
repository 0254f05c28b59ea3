// Host side of the CUDA data-movement kernels (reshape, transpose, broadcast_to, slice, concat,
// split, local_shard, pad, trilu), gather / gather_grad and the pools. Copies of whole slabs are
// cudaMemcpy(2D)Async; strided views use kernels/Elementwise.cu's strided copy; the rest
// kernels/Indexing.cu and kernels/Pool.cu.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/PoolSupport.h"
#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt::cuda {

std::vector<SlabCopy> slabCopies(cpu::ShapeRef whole, int64_t axis, cpu::ShapeRef parts,
                                 size_t elementBytes) {
  int64_t rows = cpu::product(whole, 0, size_t(axis));
  int64_t inner = cpu::product(whole, size_t(axis) + 1, whole.size()) * int64_t(elementBytes);
  int64_t pitch = whole[size_t(axis)] * inner, column = 0;
  std::vector<SlabCopy> copies;
  for (int64_t part : parts) {
    copies.push_back({column, pitch, part * inner, rows});
    column += part * inner;
  }
  return copies;
}

PoolGeometry poolGeometry(const cpu::PoolShape &s, bool countPad) {
  PoolGeometry g;
  g.planes = s.planes;
  g.height = s.height;
  g.width = s.width;
  g.outHeight = s.outHeight;
  g.outWidth = s.outWidth;
  for (int d = 0; d < 2; ++d) {
    g.kernel[d] = s.window.kernel[d];
    g.stride[d] = s.window.stride[d];
    g.padBegin[d] = s.window.padBegin[d];
    g.padEnd[d] = s.window.padEnd[d];
    g.dilation[d] = s.window.dilation[d];
  }
  g.countIncludePad = countPad;
  return g;
}

} // namespace plait::rt::cuda

namespace plait::rt {
namespace {

using namespace cuda;
using cpu::checkArity;
using cpu::checkSameDtype;
using cpu::checkShape;

Status checkUnaryMove(const CudaKernelCall &call, std::string_view kernel) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kernel, 1, 1, 1));
  return checkSameDtype(kernel, call.inputs[0], call.outputs[0]);
}

Status copyBytes(const CudaKernelCall &call, std::string_view kernel, void *dst,
                 const void *src, size_t bytes) {
  if (dst == src || bytes == 0)
    return {};
  return launched(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, call.stream), kernel);
}

Status stridedCopy(const CudaKernelCall &call, std::string_view kernel, const void *src,
                   const TensorView &y, cpu::ShapeRef strides) {
  if (y.numel() == 0)
    return {};
  return launched(launchStridedCopy(int(dtypeSize(y.dtype)), src, y.data,
                                    stridedView(y.shape, strides), y.numel(), call.stream),
                  kernel);
}

Status reshapeKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "reshape"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  if (x.numel() != y.numel())
    return Status::errorf("reshape: cannot reshape {} to {}", shapeString(x.shape),
                          shapeString(y.shape));
  if (call.check)
    return {};
  return copyBytes(call, "reshape", y.data, x.data, x.bytes());
}

Status transposeKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "transpose"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  const std::vector<int64_t> &perm = call.attrs.getInts("perm");
  if (int64_t(perm.size()) != x.rank())
    return Status::errorf("transpose: perm has {} entries for rank {}", perm.size(), x.rank());
  std::array<bool, kMaxRank> seen{};
  cpu::Dims inStrides = cpu::contiguousStrides(x.shape), shape, strides;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[size_t(p)])
      return Status::errorf("transpose: perm is not a permutation of 0..{}", x.rank() - 1);
    seen[size_t(p)] = true;
    shape.push_back(x.shape[size_t(p)]);
    strides.push_back(inStrides[size_t(p)]);
  }
  PLAIT_RETURN_IF_ERROR(checkShape("transpose", "output", y.shape, shape));
  if (call.check)
    return {};
  return stridedCopy(call, "transpose", x.data, y, strides);
}

Status broadcastToKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "broadcast_to"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  if (!cpu::broadcastsTo(x.shape, y.shape))
    return Status::errorf("broadcast_to: cannot broadcast {} to {}", shapeString(x.shape),
                          shapeString(y.shape));
  if (call.check)
    return {};
  cpu::Dims inStrides = cpu::contiguousStrides(x.shape);
  cpu::Dims strides(y.shape.size(), 0);
  size_t lead = y.shape.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d)
    strides[lead + d] = x.shape[d] == 1 ? 0 : inStrides[d];
  return stridedCopy(call, "broadcast_to", x.data, y, strides);
}

/// MovementKernels.cpp's slice: normalised (start, end, step) per dimension.
Status sliceKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "slice"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  int64_t offset = 0;
  cpu::Dims strides;
  PLAIT_RETURN_IF_ERROR(cpu::sliceView(call.attrs, x, y, offset, strides));
  if (call.check || y.numel() == 0)
    return {};
  const char *base = static_cast<const char *>(x.data) + offset * int64_t(dtypeSize(x.dtype));
  return stridedCopy(call, "slice", base, y, strides);
}

/// concat: for each index before `axis`, the inputs' slabs end to end (one 2-D copy per input:
/// `outer` rows of its slab, at the output's pitch).
Status concatKernel(const CudaKernelCall &call) {
  if (call.inputs.empty() || call.outputs.size() != 1)
    return Status::errorf("concat: expected at least 1 input and 1 output, got {} and {}",
                          call.inputs.size(), call.outputs.size());
  PLAIT_RETURN_IF_ERROR(cpu::checkOperandRanks(call.asHostCall(), "concat"));
  const TensorView &y = call.outputs[0];
  const TensorView &first = call.inputs[0];
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis("concat", call.attrs.getInt("axis", 0), first.rank(),
                                           axis));
  cpu::Dims shape(first.shape);
  shape[size_t(axis)] = 0;
  for (const TensorView &t : call.inputs) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("concat", t, y));
    if (t.rank() != first.rank())
      return Status::error("concat: inputs differ in rank");
    for (int64_t d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape[size_t(d)] != first.shape[size_t(d)])
        return Status::errorf("concat: inputs differ in dimension {}", d);
    shape[size_t(axis)] += t.shape[size_t(axis)];
  }
  PLAIT_RETURN_IF_ERROR(checkShape("concat", "output", y.shape, shape));
  if (call.check)
    return {};
  // One part per input, however many (cpu::Dims holds kMaxRank entries and would drop the
  // parts after the 16th: a DDP bucket's concat of more gradients left them uncopied).
  std::vector<int64_t> parts;
  for (const TensorView &t : call.inputs)
    parts.push_back(t.shape[size_t(axis)]);
  std::vector<SlabCopy> copies = slabCopies(shape, axis, parts, dtypeSize(y.dtype));
  for (size_t i = 0; i < copies.size(); ++i) {
    const SlabCopy &c = copies[i];
    if (c.width > 0 && c.rows > 0)
      PLAIT_RETURN_IF_ERROR(launched(
          cudaMemcpy2DAsync(static_cast<char *>(y.data) + c.offset, size_t(c.pitch),
                            call.inputs[i].data, size_t(c.width), size_t(c.width),
                            size_t(c.rows), cudaMemcpyDeviceToDevice, call.stream),
          "concat"));
  }
  return {};
}

Status splitKernel(const CudaKernelCall &call) {
  if (call.inputs.size() != 1)
    return Status::errorf("split: expected 1 input, got {}", call.inputs.size());
  PLAIT_RETURN_IF_ERROR(cpu::checkOperandRanks(call.asHostCall(), "split"));
  const TensorView &x = call.inputs[0];
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis("split", call.attrs.getInt("axis", 0), x.rank(), axis));
  const std::vector<int64_t> &sizes = call.attrs.getInts("sizes");
  if (sizes.size() != call.outputs.size())
    return Status::errorf("split: {} sizes for {} outputs", sizes.size(), call.outputs.size());
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      return Status::error("split: sizes must be >= 0");
    total += sizes[i];
    cpu::Dims shape(x.shape);
    shape[size_t(axis)] = sizes[i];
    PLAIT_RETURN_IF_ERROR(checkSameDtype("split", x, call.outputs[i]));
    PLAIT_RETURN_IF_ERROR(checkShape("split", "output", call.outputs[i].shape, shape));
  }
  if (total != x.shape[size_t(axis)])
    return Status::errorf("split: sizes add up to {}, dimension {} is {}", total, axis,
                          x.shape[size_t(axis)]);
  if (call.check)
    return {};
  std::vector<SlabCopy> copies = slabCopies(x.shape, axis, sizes, dtypeSize(x.dtype));
  for (size_t i = 0; i < copies.size(); ++i) {
    const SlabCopy &c = copies[i];
    if (c.width > 0 && c.rows > 0)
      PLAIT_RETURN_IF_ERROR(launched(
          cudaMemcpy2DAsync(call.outputs[i].data, size_t(c.width),
                            static_cast<const char *>(x.data) + c.offset, size_t(c.pitch),
                            size_t(c.width), size_t(c.rows), cudaMemcpyDeviceToDevice,
                            call.stream),
          "split"));
  }
  return {};
}

Status localShardKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "local_shard";
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, kName));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  const std::vector<int64_t> &groups = call.attrs.getInts("groups");
  int64_t groupSize = call.attrs.getInt("group_size", 0);
  if (groupSize < 1 || x.numel() != y.numel() * groupSize)
    return Status::errorf("{}: input {} is not {} chunks of output {}", kName,
                          shapeString(x.shape), groupSize, shapeString(y.shape));
  auto it = std::find(groups.begin(), groups.end(), int64_t(call.rank));
  if (it == groups.end())
    return Status::errorf("{}: rank {} is in none of the groups", kName, call.rank);
  if (call.check)
    return {};
  int64_t index = (it - groups.begin()) % groupSize;
  return copyBytes(call, kName, y.data,
                   static_cast<const char *>(x.data) + index * int64_t(y.bytes()), y.bytes());
}

/// The fill value stored in `dtype`, as the CPU pad converts it (cpu::fillValue).
uint64_t fillBitsOf(DType dtype, double value) {
  uint64_t bits = 0;
  cpu::fillValue(&bits, dtype, 1, value);
  return bits;
}

Status padKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "pad"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  const std::vector<int64_t> &pads = call.attrs.getInts("pads");
  size_t rank = x.shape.size();
  if (pads.size() != 2 * rank)
    return Status::errorf("pad: 'pads' must have {} entries, got {}", 2 * rank, pads.size());
  cpu::Dims shape;
  for (size_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[d + rank] < 0)
      return Status::error("pad: 'pads' entries must be >= 0");
    shape.push_back(x.shape[d] + pads[d] + pads[d + rank]);
  }
  PLAIT_RETURN_IF_ERROR(checkShape("pad", "output", y.shape, shape));
  if (call.check)
    return {};
  PadGeometry g;
  g.rank = int32_t(rank);
  for (size_t d = 0; d < rank; ++d) {
    g.outShape[d] = y.shape[d];
    g.inShape[d] = x.shape[d];
    g.padBegin[d] = pads[d];
  }
  return launched(launchPad(int(dtypeSize(y.dtype)), x.data, y.data, g,
                            fillBitsOf(y.dtype, call.attrs.getFloat("value", 0.0)), y.numel(),
                            call.stream),
                  "pad");
}

Status triluKernel(const CudaKernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkUnaryMove(call, "trilu"));
  const TensorView &x = call.inputs[0];
  const TensorView &y = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkShape("trilu", "output", y.shape, x.shape));
  if (x.rank() < 2)
    return Status::errorf("trilu: needs rank >= 2, got {}", x.rank());
  if (call.check)
    return {};
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape[x.shape.size() - 1];
  int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  return launched(launchTrilu(int(dtypeSize(x.dtype)), x.data, y.data, matrices, rows, cols,
                              call.attrs.getBool("upper", true), call.attrs.getInt("k", 0),
                              call.stream),
                  "trilu");
}

//===--- gather ---------------------------------------------------------------------------===//

/// gather / gather_grad's shape: data (or the gradient's result) `table` with `axis`, indices.
Status checkGatherShape(std::string_view kernel, const TensorView &table, int64_t axis,
                        const TensorView &indices, const TensorView &gathered,
                        std::string_view what) {
  cpu::ShapeRef tableShape = table.shape;
  cpu::Dims shape(tableShape.slice(0, size_t(axis)));
  shape.append(indices.shape);
  shape.append(tableShape.slice(size_t(axis) + 1, table.shape.size()));
  if (shape.size() != table.shape.size() - 1 + indices.shape.size())
    return Status::errorf("{}: {} would have more than {} dimensions", kernel, what, kMaxRank);
  return checkShape(kernel, what, gathered.shape, shape);
}

Status gatherKernel(const CudaKernelCall &call) {
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, "gather", 2, 2, 1));
  const TensorView &data = call.inputs[0], &indices = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("gather", data, out));
  PLAIT_RETURN_IF_ERROR(cpu::checkIndexDtype("gather", "indices", indices));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(
      cpu::normalizeAxis("gather", call.attrs.getInt("axis", 0), data.rank(), axis));
  PLAIT_RETURN_IF_ERROR(checkGatherShape("gather", data, axis, indices, out, "output"));
  if (call.check)
    return {};
  int64_t outer = cpu::product(data.shape, 0, size_t(axis)), n = data.shape[size_t(axis)];
  int64_t inner = cpu::product(data.shape, size_t(axis) + 1, data.shape.size());
  return launched(launchGather(int(dtypeSize(data.dtype)), code(indices.dtype), data.data,
                               indices.data, out.data, outer, n, inner, indices.numel(),
                               call.deviceError, call.errorTag, call.stream),
                  "gather");
}

Status gatherGradKernel(const CudaKernelCall &call) {
  constexpr std::string_view kName = "gather_grad";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 2, 2, 1));
  const TensorView &grad = call.inputs[0], &indices = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, grad, out));
  PLAIT_RETURN_IF_ERROR(cpu::checkIndexDtype(kName, "indices", indices));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(cpu::normalizeAxis(kName, call.attrs.getInt("axis", 0), out.rank(), axis));
  PLAIT_RETURN_IF_ERROR(checkGatherShape(kName, out, axis, indices, grad, "grad"));
  if (out.dtype != DType::F32 && out.dtype != DType::BF16 && out.dtype != DType::F16)
    return noCudaDtype(kName, out.dtype);
  // f32 results accumulate in place unless they overlap the gradient; others through f32.
  bool inPlace = out.dtype == DType::F32 &&
                 (call.check || !overlaps(out.data, out.bytes(), grad.data, grad.bytes()));
  uint64_t used = 0;
  void *acc = nullptr;
  if (!inPlace || call.check) // the check reserves it whatever the pointers turn out to be
    PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kName, uint64_t(out.numel()) * 4, used, acc));
  if (call.check)
    return {};
  int64_t outer = cpu::product(out.shape, 0, size_t(axis)), size = out.shape[size_t(axis)];
  int64_t inner = cpu::product(out.shape, size_t(axis) + 1, out.shape.size());
  float *accumulator = inPlace ? static_cast<float *>(out.data) : static_cast<float *>(acc);
  PLAIT_RETURN_IF_ERROR(launched(
      launchGatherGrad(code(out.dtype), code(indices.dtype), grad.data, indices.data, out.data,
                       accumulator, outer, size, inner, indices.numel(), call.deviceError,
                       call.errorTag, call.stream),
      kName));
  if (!inPlace && out.dtype == DType::F32) // overlapping f32: copy the sums into place
    return copyBytes(call, kName, out.data, accumulator, out.bytes());
  return {};
}

//===--- pools ----------------------------------------------------------------------------===//


Status checkPoolDtype(std::string_view kernel, DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 ? Status() : noCudaDtype(kernel, t);
}

template <bool kMax> Status poolKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kMax ? "max_pool2d" : "avg_pool2d";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0], &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, out));
  cpu::PoolShape s;
  PLAIT_RETURN_IF_ERROR(cpu::planPoolShape(kName, call.attrs, kMax, x, out, "output", s));
  PLAIT_RETURN_IF_ERROR(checkPoolDtype(kName, x.dtype));
  if (call.check)
    return {};
  PoolGeometry g = poolGeometry(s, call.attrs.getBool("count_include_pad", false));
  return launched(kMax ? launchMaxPool(code(x.dtype), x.data, out.data, g, call.stream)
                       : launchAvgPool(code(x.dtype), x.data, out.data, g, call.stream),
                  kName);
}

/// max_pool2d_grad(x, grad) -> dx; avg_pool2d_grad(grad) -> dx.
template <bool kMax> Status poolGradKernel(const CudaKernelCall &call) {
  constexpr const char *kName = kMax ? "max_pool2d_grad" : "avg_pool2d_grad";
  KernelCall host = call.asHostCall();
  PLAIT_RETURN_IF_ERROR(checkArity(host, kName, kMax ? 2 : 1, kMax ? 2 : 1, 1));
  const TensorView &x = kMax ? call.inputs[0] : call.outputs[0];
  const TensorView &grad = kMax ? call.inputs[1] : call.inputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, grad));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, call.outputs[0]));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", call.outputs[0].shape, x.shape));
  cpu::PoolShape s;
  PLAIT_RETURN_IF_ERROR(cpu::planPoolShape(kName, call.attrs, kMax, x, grad, "grad", s));
  PLAIT_RETURN_IF_ERROR(checkPoolDtype(kName, x.dtype));
  uint64_t used = 0;
  void *acc = nullptr;
  PLAIT_RETURN_IF_ERROR(takeWorkspace(call, kName, uint64_t(x.numel()) * 4, used, acc));
  if (call.check)
    return {};
  PoolGeometry g = poolGeometry(s, call.attrs.getBool("count_include_pad", false));
  float *accumulator = static_cast<float *>(acc);
  void *dx = call.outputs[0].data;
  return launched(kMax ? launchMaxPoolGrad(code(x.dtype), x.data, grad.data, dx, accumulator, g,
                                           call.stream)
                       : launchAvgPoolGrad(code(x.dtype), grad.data, dx, accumulator, g,
                                           call.stream),
                  kName);
}

} // namespace

void registerCudaMovementKernels() {
  registerCudaKernel("reshape", &reshapeKernel);
  registerCudaKernel("transpose", &transposeKernel);
  registerCudaKernel("broadcast_to", &broadcastToKernel);
  registerCudaKernel("slice", &sliceKernel);
  registerCudaKernel("concat", &concatKernel);
  registerCudaKernel("split", &splitKernel);
  registerCudaKernel("local_shard", &localShardKernel);
  registerCudaKernel("pad", &padKernel);
  registerCudaKernel("trilu", &triluKernel);
  registerCudaKernel("gather", &gatherKernel);
  registerCudaKernel("gather_grad", &gatherGradKernel);
  registerCudaKernel("max_pool2d", &poolKernel<true>);
  registerCudaKernel("avg_pool2d", &poolKernel<false>);
  registerCudaKernel("max_pool2d_grad", &poolGradKernel<true>);
  registerCudaKernel("avg_pool2d_grad", &poolGradKernel<false>);
}

} // namespace plait::rt
