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

/// The best OpenBLAS core type this CPU's vector units run, from /proc/cpuinfo: "SkylakeX"
/// with AVX-512 (F, BW, VL, DQ), "Haswell" with AVX2 and FMA, "" otherwise.
std::string cpuBlasCore();

/// 2 for OpenBLAS's AVX-512 core types (SkylakeX, Cooperlake, SapphireRapids), 1 for its AVX2
/// ones (Haswell, Zen, Excavator), 0 for the rest.
int blasCoreTier(const std::string &core);

/// `cpu` (cpuBlasCore()) when `core` is one of OpenBLAS's generic choices for x86 CPUs it does
/// not recognise (Prescott, Core2, ..., Sandybridge); "" otherwise.
std::string betterBlasCore(const std::string &core, const std::string &cpu);

/// `cpu` when its tier is above `core`'s, "" otherwise: OpenBLAS held below what the CPU runs
/// (a generic choice, or an OPENBLAS_CORETYPE naming older kernels).
std::string strongerBlasCore(const std::string &core, const std::string &cpu);

/// Called first thing in main() by the tools that run kernels (plait-run, plait-calibrate).
/// When OpenBLAS chose generic kernels and betterBlasCore() names a better one, sets
/// OPENBLAS_CORETYPE and re-executes /proc/self/exe with the same arguments. Does nothing when
/// OPENBLAS_CORETYPE is already set (the user's choice), when PLAIT_BLAS_CORETYPE=keep (the
/// off switch), or after the re-exec; returns only when it did not exec.
void selectBlasCore(char **argv);

/// One line for the tools' output, or "" when there is nothing to say:
/// - what selectBlasCore() did in this process: "blas: OpenBLAS SkylakeX kernels (plait set
///   OPENBLAS_CORETYPE=SkylakeX; OpenBLAS had detected Prescott; PLAIT_BLAS_CORETYPE=keep turns
///   this off)";
/// - or, when the environment's own OPENBLAS_CORETYPE (kept as it is) holds OpenBLAS below what
///   the CPU runs: "blas: OpenBLAS Haswell kernels, as this environment's
///   OPENBLAS_CORETYPE=Haswell asks, on a CPU that runs AVX-512 ones: unsetting it may make
///   GEMMs faster (PLAIT_BLAS_CORETYPE=keep silences this)".
std::string blasCoreNote();

} // namespace plait::rt
