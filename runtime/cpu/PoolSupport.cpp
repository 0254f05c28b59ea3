// Pooling window geometry shared by the pools and their adjoints.
#include "runtime/cpu/PoolSupport.h"

#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::cpu {

Status planPoolShape(std::string_view kernel, const Attrs &attrs, bool hasDilations,
                     const TensorView &x, const TensorView &pooled, std::string_view pooledName,
                     PoolShape &s) {
  if (x.rank() != 4)
    return Status::errorf("{}: x must be 4-D (NCHW), got {}", kernel, shapeString(x.shape));
  const std::vector<int64_t> &extent = attrs.getInts("kernel");
  if (extent.size() != 2)
    return Status::errorf("{}: 'kernel' must have 2 entries, got {}", kernel, extent.size());
  s.window.kernel[0] = extent[0];
  s.window.kernel[1] = extent[1];
  PLAIT_RETURN_IF_ERROR(parseWindow(kernel, attrs, hasDilations, s.window));
  s.planes = x.shape[0] * x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  return checkShape(kernel, pooledName, pooled.shape,
                    {x.shape[0], x.shape[1], s.outHeight, s.outWidth});
}

} // namespace plait::rt::cpu
