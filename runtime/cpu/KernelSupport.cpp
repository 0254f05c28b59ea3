// Argument checks and half-precision staging shared by the CPU kernels.
#include "runtime/cpu/KernelSupport.h"

#include <algorithm>
#include <memory>

namespace plait::rt::cpu {

Status checkArity(const KernelCall &call, std::string_view kernel, size_t minInputs,
                  size_t maxInputs, size_t outputs) {
  if (call.inputs.size() < minInputs || call.inputs.size() > maxInputs) {
    if (minInputs == maxInputs)
      return Status::errorf("{}: expected {} inputs, got {}", kernel, minInputs,
                            call.inputs.size());
    return Status::errorf("{}: expected {} to {} inputs, got {}", kernel, minInputs, maxInputs,
                          call.inputs.size());
  }
  if (call.outputs.size() != outputs)
    return Status::errorf("{}: expected {} outputs, got {}", kernel, outputs,
                          call.outputs.size());
  return Status();
}

Status normalizeAxis(std::string_view kernel, int64_t axis, int64_t rank, int64_t &out) {
  if (axis < -rank || axis >= rank)
    return Status::errorf("{}: axis {} is out of range for rank {}", kernel, axis, rank);
  out = axis < 0 ? axis + rank : axis;
  return Status();
}

Status unsupportedDtype(std::string_view kernel, DType a) {
  return Status::errorf("{}: unsupported dtype {}", kernel, dtypeName(a));
}

Status unsupportedDtype(std::string_view kernel, DType a, DType b) {
  return Status::errorf("{}: unsupported dtype {} x {}", kernel, dtypeName(a), dtypeName(b));
}

Status checkShape(std::string_view kernel, std::string_view what,
                  const std::vector<int64_t> &actual, const std::vector<int64_t> &expected) {
  if (actual != expected)
    return Status::errorf("{}: {} has shape {}, expected {}", kernel, what, shapeString(actual),
                          shapeString(expected));
  return Status();
}

Status checkSameDtype(std::string_view kernel, const TensorView &a, const TensorView &b) {
  if (a.dtype != b.dtype)
    return unsupportedDtype(kernel, a.dtype, b.dtype);
  return Status();
}

Status checkIndexDtype(std::string_view kernel, std::string_view what, const TensorView &t) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    return Status::errorf("{}: {} must be i64 or i32, got {}", kernel, what, dtypeName(t.dtype));
  return Status();
}

Status normalizeIndices(std::string_view kernel, const TensorView &indices, int64_t axis,
                        int64_t size, std::vector<int64_t> &rows) {
  int64_t count = indices.numel();
  rows.resize(count);
  for (int64_t q = 0; q < count; ++q) {
    int64_t v = indexAt(indices, q);
    int64_t r = v < 0 ? v + size : v;
    if (r < 0 || r >= size)
      return Status::errorf("{}: index {} is out of range for axis {} of size {}", kernel, v,
                            axis, size);
    rows[q] = r;
  }
  return Status();
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

void widenToF32(const void *src, DType srcType, float *dst, int64_t n) {
  const uint16_t *bits = static_cast<const uint16_t *>(src);
  if (srcType == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(bits[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f16ToFloat(bits[i]);
  }
}

void narrowFromF32(const float *src, void *dst, DType dstType, int64_t n) {
  uint16_t *bits = static_cast<uint16_t *>(dst);
  if (dstType == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      bits[i] = floatToBf16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      bits[i] = floatToF16(src[i]);
  }
}

bool hasHalfTensor(const KernelCall &call) {
  for (const TensorView &t : call.inputs)
    if (isHalf(t.dtype))
      return true;
  for (const TensorView &t : call.outputs)
    if (isHalf(t.dtype))
      return true;
  return false;
}

Status runStagedInF32(const KernelCall &call, KernelFn f32Kernel) {
  std::vector<std::unique_ptr<float[]>> buffers;
  auto widened = [&](const TensorView &t) {
    TensorView w = t;
    w.dtype = DType::F32;
    buffers.emplace_back(new float[std::max<int64_t>(t.numel(), 1)]);
    w.data = buffers.back().get();
    return w;
  };
  std::vector<TensorView> inputs = call.inputs;
  for (TensorView &t : inputs)
    if (isHalf(t.dtype)) {
      TensorView w = widened(t);
      widenToF32(t.data, t.dtype, w.as<float>(), t.numel());
      t = w;
    }
  std::vector<TensorView> outputs = call.outputs;
  for (TensorView &t : outputs)
    if (isHalf(t.dtype))
      t = widened(t);
  KernelCall staged{inputs, outputs, call.attrs};
  PLAIT_RETURN_IF_ERROR(f32Kernel(staged));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (isHalf(call.outputs[i].dtype))
      narrowFromF32(outputs[i].as<float>(), call.outputs[i].data, call.outputs[i].dtype,
                    call.outputs[i].numel());
  return Status();
}

} // namespace plait::rt::cpu
