// Sanitizer settings compiled into every executable of a PLAIT_SANITIZE build, so that a test
// or tool run by hand reports the same as under CTest. An environment's ASAN_OPTIONS,
// LSAN_OPTIONS and UBSAN_OPTIONS still override these.
#include <cstdlib>

extern "C" {

// OpenMPI's plugins leak at exit and are unloaded (dlclose) before LeakSanitizer looks, so
// their stacks name no module a suppression could match. Leak checking is therefore off in
// MPI ranks (mpirun sets OMPI_COMM_WORLD_SIZE in each); plait's code is leak-checked in the
// single-process tests, which run the same readers, planner and kernels. (Asked at exit:
// the *_default_options hooks run before the environment can be read.)
int __lsan_is_turned_off() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

// Leaks of libraries plait does not own, kept for the life of the process.
const char *__lsan_default_suppressions() {
  return "leak:libgfortran.so\n"; // OpenBLAS's Fortran runtime: its unit names, at start-up
}

const char *__ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

} // extern "C"
