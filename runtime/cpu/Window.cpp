// Sliding-window geometry shared by conv2d and the pools.
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {

int64_t Window2d::outputSize(int dim, int64_t in) const {
  int64_t span = dilation[dim] * (kernel[dim] - 1) + 1;
  int64_t numer = in + padBegin[dim] + padEnd[dim] - span;
  if (numer < 0)
    return 0;
  int64_t s = stride[dim];
  int64_t out = (ceilMode ? (numer + s - 1) / s : numer / s) + 1;
  // With ceil_mode, the last window must start inside the input or the begin padding
  // (PyTorch and ONNX drop a window that would start in the end padding).
  if (ceilMode && (out - 1) * s >= in + padBegin[dim])
    --out;
  return out;
}

namespace {
Status readArray(std::string_view kernelName, const Attrs &attrs, const char *name, size_t count,
                 int64_t minValue, int64_t *dst) {
  const std::vector<int64_t> &values = attrs.getInts(name);
  if (values.size() != count)
    return Status::errorf("{}: '{}' must have {} entries, got {}", kernelName, name, count,
                          values.size());
  for (size_t i = 0; i < count; ++i) {
    if (values[i] < minValue)
      return Status::errorf("{}: '{}' entries must be >= {}", kernelName, name, minValue);
    dst[i] = values[i];
  }
  return Status();
}
} // namespace

Status parseWindow(std::string_view kernelName, const Attrs &attrs, bool hasDilations,
                   Window2d &window) {
  for (int64_t k : window.kernel)
    if (k < 1)
      return Status::errorf("{}: kernel extents must be >= 1", kernelName);
  PLAIT_RETURN_IF_ERROR(readArray(kernelName, attrs, "strides", 2, 1, window.stride));
  int64_t pads[4];
  PLAIT_RETURN_IF_ERROR(readArray(kernelName, attrs, "pads", 4, 0, pads));
  window.padBegin[0] = pads[0];
  window.padBegin[1] = pads[1];
  window.padEnd[0] = pads[2];
  window.padEnd[1] = pads[3];
  // Dilations default to 1 when absent; a plan writer may drop an all-ones array.
  if (hasDilations && attrs.has("dilations"))
    PLAIT_RETURN_IF_ERROR(readArray(kernelName, attrs, "dilations", 2, 1, window.dilation));
  window.ceilMode = attrs.getBool("ceil_mode", false);
  return Status();
}

} // namespace plait::rt::cpu
