// Building generated kernel source with an external compiler (the host C++ compiler, nvcc),
// cached by a hash of the command and the source: shared by the CPU and CUDA code generators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plait {

/// A shell word: `s` in single quotes.
std::string shellQuote(const std::string &s);

/// The directory of compiled kernels: $PLAIT_CODEGEN_CACHE, else
/// $XDG_CACHE_HOME/plait/codegen, else ~/.cache/plait/codegen.
std::string codegenCacheDir();

/// Compiles `source` (written to a private temporary directory as `sourceName`) by running
/// `compiler flags -o OBJECT SOURCE` through the shell, and reads the object into `object`.
/// The object is cached as <cache>/<hash of compiler, flags and source><extension>, so the
/// same source compiles once. Returns "" or why there is no object ("COMPILER failed (exit
/// N): the end of its output").
std::string compileCached(const std::string &compiler, const std::string &flags,
                          const std::string &source, const std::string &sourceName,
                          const std::string &extension, std::vector<uint8_t> &object);

} // namespace plait
