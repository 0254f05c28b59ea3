// OpenBLAS kernel selection: BlasCore.h.
#include "runtime/cpu/BlasCore.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

#include <cblas.h>
#include <fmt/core.h>

namespace plait::rt {
namespace {

// Set by selectBlasCore() before it re-executes: the core OpenBLAS had detected.
constexpr const char *kDetectedVar = "PLAIT_BLAS_CORE_DETECTED";

bool hasFlag(const std::string &flags, const char *flag) {
  return flags.find(std::string(" ") + flag + " ") != std::string::npos;
}

} // namespace

std::string blasCoreName() {
  const char *name = openblas_get_corename();
  return name ? name : "";
}

std::string betterBlasCore(const std::string &core) {
  // OpenBLAS's choices for x86 CPUs it does not recognise.
  static const char *const kGeneric[] = {"Prescott", "Core2", "Penryn", "Nehalem", "Katmai",
                                         "Sandybridge"};
  bool generic = false;
  for (const char *g : kGeneric)
    generic = generic || core == g;
  if (!generic)
    return "";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::string flags = line.substr(line.find(':') + 1) + " ";
      if (hasFlag(flags, "avx512f") && hasFlag(flags, "avx512bw") &&
          hasFlag(flags, "avx512vl") && hasFlag(flags, "avx512dq"))
        return "SkylakeX";
      if (hasFlag(flags, "avx2") && hasFlag(flags, "fma"))
        return "Haswell";
      return "";
    }
  return "";
}

void selectBlasCore(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kDetectedVar))
    return;
  if (const char *mode = std::getenv("PLAIT_BLAS_CORETYPE"); mode && std::strcmp(mode, "keep") == 0)
    return;
  std::string detected = blasCoreName();
  std::string better = betterBlasCore(detected);
  if (better.empty())
    return;
  ::setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  ::setenv(kDetectedVar, detected.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc): carry on with the kernels OpenBLAS chose.
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv(kDetectedVar);
}

std::string blasCoreNote() {
  const char *detected = std::getenv(kDetectedVar);
  const char *set = std::getenv("OPENBLAS_CORETYPE");
  if (!detected || !set)
    return "";
  return fmt::format("blas: OpenBLAS {} kernels (plait set OPENBLAS_CORETYPE={}; OpenBLAS had "
                     "detected {}; PLAIT_BLAS_CORETYPE=keep turns this off)",
                     blasCoreName(), set, detected);
}

} // namespace plait::rt
