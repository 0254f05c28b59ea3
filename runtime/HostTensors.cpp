#include "runtime/HostTensors.h"

#include <fmt/format.h>

namespace plait::rt {

Status HostTensors::pull(const Read &read) {
  bytes_.assign(plan_.tensors.size(), {});
  for (uint32_t t = 0; t < plan_.tensors.size(); ++t) {
    const PlanTensor &tensor = plan_.tensors[t];
    if (!isPersistent(tensor))
      continue;
    PLAIT_RETURN_IF_ERROR(read(t, bytes_[t]));
    if (bytes_[t].size() != tensor.bytes)
      return Status::internal(fmt::format("{}: tensor {} ('{}') read as {} bytes, planned {}",
                                          plan_.path, t, printable(tensor.name), bytes_[t].size(),
                                          tensor.bytes));
  }
  return {};
}

Status HostTensors::push(const Write &write) const {
  for (uint32_t t = 0; t < bytes_.size(); ++t)
    if (isPersistent(plan_.tensors[t]))
      PLAIT_RETURN_IF_ERROR(write(t, bytes_[t]));
  return {};
}

TensorView HostTensors::view(uint32_t tensor) const {
  const PlanTensor &t = plan_.tensors[tensor];
  TensorView v;
  v.dtype = t.dtype;
  v.shape = t.shape;
  if (tensor < bytes_.size() && isPersistent(t))
    v.data = bytes_[tensor].data();
  return v;
}

} // namespace plait::rt
