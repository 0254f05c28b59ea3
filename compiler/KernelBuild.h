// Building generated kernel source with an external compiler (the host C++ compiler, nvcc),
// cached by a hash of the command and the source: shared by the CPU and CUDA code generators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plait {

/// A shell word: `s` in single quotes.
std::string shellQuote(const std::string &s);

/// The first executable regular file `program` in a folder of $PATH, or "" when none is.
std::string findOnPath(const std::string &program);

/// The directory of compiled kernels: $PLAIT_CODEGEN_CACHE, else
/// $XDG_CACHE_HOME/plait/codegen, else ~/.cache/plait/codegen.
std::string codegenCacheDir();

/// How many bytes of objects the cache keeps: $PLAIT_CODEGEN_CACHE_BYTES (a plain number of
/// bytes; 0 or an unreadable value: the default), else 2 GiB.
uint64_t codegenCacheLimit();

/// Removes the least recently used objects of the cache directory `dir` (oldest modification
/// time first; a hit refreshes it) until the objects take at most `limitBytes`, never `keep`.
/// Only finished objects (<16 hex digits><extension>) count and go; files being published
/// (<object>.<pid>) and anything else are left alone. Returns how many files it removed.
size_t pruneCodegenCache(const std::string &dir, uint64_t limitBytes, const std::string &keep);

/// Compiles `source` (written to a private temporary directory as `sourceName`) by running
/// `compiler flags -o OBJECT SOURCE` through the shell, and reads the object into `object`.
/// The object is cached as <cache>/<hash of compiler, flags and source><extension>, the
/// compiler identified by the file its first word resolves to, that file's size and its
/// modification time (an upgraded compiler misses the cache), so the same source compiles
/// once; after publishing a new object the cache is pruned to
/// codegenCacheLimit(). Returns "" or why there is no object ("COMPILER failed (exit N): the
/// end of its output").
std::string compileCached(const std::string &compiler, const std::string &flags,
                          const std::string &source, const std::string &sourceName,
                          const std::string &extension, std::vector<uint8_t> &object);

} // namespace plait
