// Loading a plan's generated kernels: the shared object is written to an anonymous memory
// file (memfd) and opened from /proc/self/fd, so nothing lands on disk and no path is shared
// between ranks; it stays loaded as long as the executor that loaded it.
#include "runtime/GeneratedKernels.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace plait::rt {

GeneratedKernels loadGeneratedKernels(const Plan &plan) {
  GeneratedKernels out;
  out.byInstr.assign(plan.instrs.size(), nullptr);
  for (const PlanInstr &in : plan.instrs)
    out.fused += plan.kernels[in.kernel] == "fused_elementwise";
  if (plan.generatedCpu.empty()) {
    if (out.fused > 0)
      out.note = fmt::format("generated kernels: none in the plan; {} fused kernels interpreted",
                             out.fused);
    return out;
  }
  if (const char *env = std::getenv("PLAIT_GENERATED_KERNELS");
      env && std::strcmp(env, "off") == 0) {
    out.note = fmt::format("generated kernels: off (PLAIT_GENERATED_KERNELS=off); {} fused "
                           "kernels interpreted", out.fused);
    return out;
  }
  auto failed = [&](const std::string &why) {
    out.note = fmt::format("generated kernels: not loaded ({}); {} fused kernels interpreted",
                           why, out.fused);
    return out;
  };
  int fd = memfd_create("plait-generated-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return failed(fmt::format("memfd_create: {}", std::strerror(errno)));
  const uint8_t *data = plan.generatedCpu.data();
  size_t left = plan.generatedCpu.size();
  while (left > 0) {
    ssize_t n = write(fd, data, left);
    if (n <= 0) {
      close(fd);
      return failed(fmt::format("writing the library: {}", std::strerror(errno)));
    }
    data += n;
    left -= size_t(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    close(fd);
    const char *error = dlerror();
    return failed(error ? std::string(error) : "dlopen failed");
  }
  out.library = std::shared_ptr<void>(library, [fd](void *handle) {
    dlclose(handle);
    close(fd);
  });
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const PlanInstr &in = plan.instrs[i];
    if (plan.kernels[in.kernel] != "fused_elementwise" || !in.attrs.has("symbol"))
      continue;
    std::string symbol(in.attrs.getStrView("symbol", ""));
    if (void *fn = dlsym(library, symbol.c_str())) {
      out.byInstr[i] = reinterpret_cast<GeneratedKernelFn>(fn);
      ++out.bound;
    }
  }
  out.note = fmt::format("generated kernels: {} of {} fused kernels run generated code "
                         "(off: PLAIT_GENERATED_KERNELS=off)", out.bound, out.fused);
  return out;
}

} // namespace plait::rt
