// OpenBLAS kernel selection. OpenBLAS 0.3.21 (Debian 12) does not know every CPU model,
// virtualised ones especially, and falls back to its generic "Prescott" kernels on CPUs with
// AVX2 or AVX-512, where sgemm is then about 13x slower. OpenBLAS reads OPENBLAS_CORETYPE
// once, when the library loads, so the only way to correct it from inside a process is to
// set the variable and exec the program again before it does any work.
#pragma once

#include <string>

namespace plait::rt {

/// The kernels OpenBLAS chose in this process ("SkylakeX", "Haswell", "Prescott", ...).
std::string blasCoreName();

/// The core type this CPU supports when `core` is one of OpenBLAS's generic choices:
/// "SkylakeX" with AVX-512 (F, BW, VL, DQ), "Haswell" with AVX2 and FMA; "" otherwise
/// (`core` is already specific, or the CPU has neither).
std::string betterBlasCore(const std::string &core);

/// Called first thing in main() by the tools that run kernels (plait-run, plait-calibrate).
/// When OpenBLAS chose generic kernels and betterBlasCore() names a better one, sets
/// OPENBLAS_CORETYPE and re-executes /proc/self/exe with the same arguments. Does nothing when
/// OPENBLAS_CORETYPE is already set (the user's choice), when PLAIT_BLAS_CORETYPE=keep (the
/// off switch), or after the re-exec; returns only when it did not exec.
void selectBlasCore(char **argv);

/// One line describing what selectBlasCore() did in this process, for the tools' output:
/// "blas: OpenBLAS SkylakeX kernels (plait set OPENBLAS_CORETYPE=SkylakeX; OpenBLAS had
/// detected Prescott; PLAIT_BLAS_CORETYPE=keep turns this off)", or "" when it did nothing.
std::string blasCoreNote();

} // namespace plait::rt
