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

// PLAIT_BLAS_CORETYPE=keep: OpenBLAS's (or the user's) choice as it is, without a note.
bool keepBlasCore() {
  const char *mode = std::getenv("PLAIT_BLAS_CORETYPE");
  return mode && std::strcmp(mode, "keep") == 0;
}

} // namespace

std::string blasCoreName() {
  const char *name = openblas_get_corename();
  return name ? name : "";
}

std::string cpuBlasCore() {
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

int blasCoreTier(const std::string &core) {
  static const char *const kAvx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const char *const kAvx2[] = {"Haswell", "Zen", "Excavator"};
  for (const char *c : kAvx512)
    if (core == c)
      return 2;
  for (const char *c : kAvx2)
    if (core == c)
      return 1;
  return 0;
}

std::string betterBlasCore(const std::string &core, const std::string &cpu) {
  // OpenBLAS's choices for x86 CPUs it does not recognise.
  static const char *const kGeneric[] = {"Prescott", "Core2",  "Penryn",
                                         "Nehalem",  "Katmai", "Sandybridge"};
  for (const char *g : kGeneric)
    if (core == g)
      return cpu;
  return "";
}

std::string strongerBlasCore(const std::string &core, const std::string &cpu) {
  return blasCoreTier(core) < blasCoreTier(cpu) ? cpu : "";
}

void selectBlasCore(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kDetectedVar))
    return;
  if (keepBlasCore())
    return;
  std::string detected = blasCoreName();
  std::string better = betterBlasCore(detected, cpuBlasCore());
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
  if (detected && set)
    return fmt::format("blas: OpenBLAS {} kernels (plait set OPENBLAS_CORETYPE={}; OpenBLAS had "
                       "detected {}; PLAIT_BLAS_CORETYPE=keep turns this off)",
                       blasCoreName(), set, detected);
  if (!set || keepBlasCore())
    return "";
  // The user's (or the environment's) own setting, kept as it is: say so when it holds
  // OpenBLAS below what this CPU runs.
  std::string core = blasCoreName();
  std::string stronger = strongerBlasCore(core, cpuBlasCore());
  if (stronger.empty())
    return "";
  return fmt::format("blas: OpenBLAS {} kernels, as this environment's OPENBLAS_CORETYPE={} asks, "
                     "on a CPU that runs {} ones: unsetting it may make GEMMs faster "
                     "(PLAIT_BLAS_CORETYPE=keep silences this)",
                     core, set, blasCoreTier(stronger) == 2 ? "AVX-512" : "AVX2");
}

} // namespace plait::rt
