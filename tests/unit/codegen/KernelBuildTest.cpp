// compiler/KernelBuild: the codegen cache publishes each object once, refreshes it on a hit,
// and is pruned to its size limit, least recently used first.
#include "compiler/KernelBuild.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace {

/// A fresh directory, removed with its files at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "plait-kb-test-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// A file of `bytes` bytes whose modification time is `age` seconds ago.
void writeFile(const fs::path &path, size_t bytes, int age) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(age));
}

/// Sets an environment variable for the test's duration.
/// Sets an environment variable for a scope, then restores it (or unsets it).
struct ScopedEnv {
  std::string name;
  bool had;
  std::string old;
  ScopedEnv(const char *n, const std::string &value) : name(n), had(getenv(n) != nullptr) {
    if (had)
      old = getenv(n);
    setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(CodegenCache, PrunesLeastRecentlyUsedObjectsToTheLimit) {
  TempDir dir;
  writeFile(dir.path / "000000000000000a.so", 100, 400); // oldest
  writeFile(dir.path / "000000000000000b.so", 100, 300);
  writeFile(dir.path / "000000000000000c.fatbin", 100, 200);
  writeFile(dir.path / "000000000000000d.so", 100, 100); // newest
  writeFile(dir.path / "000000000000000e.so.1234", 500, 500); // being published: not counted
  writeFile(dir.path / "notes.txt", 500, 500);                // not an object
  EXPECT_EQ(plait::pruneCodegenCache(dir.path.string(), 250, "000000000000000d.so"), 2u);
  EXPECT_FALSE(fs::exists(dir.path / "000000000000000a.so"));
  EXPECT_FALSE(fs::exists(dir.path / "000000000000000b.so"));
  EXPECT_TRUE(fs::exists(dir.path / "000000000000000c.fatbin"));
  EXPECT_TRUE(fs::exists(dir.path / "000000000000000d.so"));
  EXPECT_TRUE(fs::exists(dir.path / "000000000000000e.so.1234"));
  EXPECT_TRUE(fs::exists(dir.path / "notes.txt"));
  // Under the limit: nothing goes.
  EXPECT_EQ(plait::pruneCodegenCache(dir.path.string(), 250, ""), 0u);
}

TEST(CodegenCache, NeverRemovesTheObjectJustPublished) {
  TempDir dir;
  writeFile(dir.path / "00000000000000aa.so", 100, 10);
  writeFile(dir.path / "00000000000000bb.so", 100, 500); // old, but the one just published
  EXPECT_EQ(plait::pruneCodegenCache(dir.path.string(), 50, "00000000000000bb.so"), 1u);
  EXPECT_TRUE(fs::exists(dir.path / "00000000000000bb.so"));
  EXPECT_FALSE(fs::exists(dir.path / "00000000000000aa.so"));
}

TEST(CodegenCache, LimitComesFromTheEnvironment) {
  {
    ScopedEnv env("PLAIT_CODEGEN_CACHE_BYTES", "12345");
    EXPECT_EQ(plait::codegenCacheLimit(), 12345u);
  }
  for (const char *bad : {"", "0", "12k", "-5"}) {
    ScopedEnv env("PLAIT_CODEGEN_CACHE_BYTES", bad);
    EXPECT_EQ(plait::codegenCacheLimit(), uint64_t(2) << 30) << "'" << bad << "'";
  }
}

// compileCached with a "compiler" that copies its source: a second compile of the same source
// is a hit that refreshes the object's time; a new object prunes the cache to its limit.
TEST(CodegenCache, CompileCachedHitsRefreshesAndPrunes) {
  TempDir dir;
  ScopedEnv cache("PLAIT_CODEGEN_CACHE", dir.path.string());
  ScopedEnv limit("PLAIT_CODEGEN_CACHE_BYTES", "150");
  const std::string copy = "sh -c 'cp \"$3\" \"$2\"' copy";
  std::vector<uint8_t> object;
  ASSERT_EQ(plait::compileCached(copy, "", std::string(100, 'a'), "a.cpp", ".so", object), "");
  EXPECT_EQ(object.size(), 100u);
  std::vector<fs::path> first;
  for (const auto &e : fs::directory_iterator(dir.path))
    first.push_back(e.path());
  ASSERT_EQ(first.size(), 1u);
  // Age it, then hit it: the hit makes it the most recently used again.
  fs::last_write_time(first[0], fs::file_time_type::clock::now() - std::chrono::hours(1));
  ASSERT_EQ(plait::compileCached(copy, "", std::string(100, 'a'), "a.cpp", ".so", object), "");
  EXPECT_GT(fs::last_write_time(first[0]),
            fs::file_time_type::clock::now() - std::chrono::minutes(1));
  // A second object takes the cache to 200 bytes, over 150: the older first goes.
  fs::last_write_time(first[0], fs::file_time_type::clock::now() - std::chrono::hours(1));
  ASSERT_EQ(plait::compileCached(copy, "", std::string(100, 'b'), "b.cpp", ".so", object), "");
  EXPECT_FALSE(fs::exists(first[0]));
  size_t left = 0;
  for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir.path))
    ++left;
  EXPECT_EQ(left, 1u);
}

// The cache key names the compiler's file: the same command and source after the compiler
// changed (here a script rewritten in place, as a package upgrade does) compile again.
TEST(CodegenCache, AChangedCompilerMissesTheCache) {
  TempDir dir;
  ScopedEnv cache("PLAIT_CODEGEN_CACHE", (dir.path / "cache").string());
  fs::path compiler = dir.path / "cc";
  auto writeCompiler = [&](const std::string &comment) {
    std::ofstream(compiler) << "#!/bin/sh\n# " << comment << "\ncp \"$3\" \"$2\"\n";
    fs::permissions(compiler, fs::perms::owner_all);
  };
  auto objects = [&] {
    size_t n = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir.path / "cache"))
      ++n;
    return n;
  };
  writeCompiler("version 1");
  std::vector<uint8_t> object;
  ASSERT_EQ(plait::compileCached(compiler.string(), "", "int x;", "a.cpp", ".so", object), "");
  ASSERT_EQ(plait::compileCached(compiler.string(), "", "int x;", "a.cpp", ".so", object), "");
  EXPECT_EQ(objects(), 1u); // a hit
  writeCompiler("version 2, longer");
  ASSERT_EQ(plait::compileCached(compiler.string(), "", "int x;", "a.cpp", ".so", object), "");
  EXPECT_EQ(objects(), 2u); // a miss: compiled again
  // A command whose program is found through $PATH is identified the same way.
  ScopedEnv path("PATH", dir.path.string() + ":" + std::getenv("PATH"));
  ASSERT_EQ(plait::compileCached("cc", "", "int y;", "b.cpp", ".so", object), "");
  EXPECT_EQ(objects(), 3u);
}

} // namespace
