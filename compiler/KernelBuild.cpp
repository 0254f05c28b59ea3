// The compile-and-cache step of code generation: objects are published into the cache by
// rename, so concurrent compiles of the same source never see a partial file.
#include "compiler/KernelBuild.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace plait {
namespace {

namespace fs = std::filesystem;

/// Runs `command` through the shell; returns its exit status and its output's tail.
int runCommand(const std::string &command, std::string &output) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return -1;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  int status = pclose(pipe);
  if (output.size() > 400)
    output = output.substr(output.size() - 400);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

uint64_t fnv1a(const std::string &text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ULL;
  return h;
}

/// Which compiler runs for `command` (its first word): the file it resolves to (through $PATH
/// and symbolic links), its size and its modification time, as ccache's default compiler
/// check, so that an upgraded compiler at the same path misses the cache. Empty when it
/// cannot be found (the compile then fails, and nothing is cached).
std::string compilerIdentity(const std::string &command) {
  std::string program = command.substr(0, command.find(' '));
  fs::path path = program.find('/') == std::string::npos ? findOnPath(program) : program;
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (ec || path.empty())
    return "";
  uint64_t bytes = fs::file_size(real, ec);
  auto time = fs::last_write_time(real, ec).time_since_epoch().count();
  return ec ? "" : fmt::format("{} {} {}", real.string(), bytes, time);
}

bool readFile(const fs::path &path, std::vector<uint8_t> &bytes) {
  std::ifstream in(path, std::ios::binary);
  bytes.assign(std::istreambuf_iterator<char>(in), {});
  return (in.good() || in.eof()) && !bytes.empty();
}

} // namespace

std::string findOnPath(const std::string &program) {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir) / program;
    std::error_code ec;
    if (!dir.empty() && fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return "";
}

std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string codegenCacheDir() {
  if (const char *dir = std::getenv("PLAIT_CODEGEN_CACHE"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "plait" / "codegen").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "plait" / "codegen").string();
  return (fs::temp_directory_path() / "plait-codegen").string();
}

uint64_t codegenCacheLimit() {
  constexpr uint64_t kDefault = uint64_t(2) << 30;
  const char *text = std::getenv("PLAIT_CODEGEN_CACHE_BYTES");
  if (!text || !std::isdigit((unsigned char)*text))
    return kDefault;
  char *end = nullptr;
  unsigned long long bytes = std::strtoull(text, &end, 10);
  return (*end != '\0' || bytes == 0) ? kDefault : uint64_t(bytes);
}

size_t pruneCodegenCache(const std::string &dir, uint64_t limitBytes, const std::string &keep) {
  struct Entry {
    fs::path path;
    fs::file_time_type time;
    uint64_t bytes;
  };
  auto isObject = [](const std::string &name) {
    size_t dot = name.find('.');
    if (dot != 16 || name.find('.', dot + 1) != std::string::npos)
      return false; // <hash>.<ext> only: "<hash>.<ext>.<pid>" is still being published
    return std::all_of(name.begin(), name.begin() + 16,
                       [](char c) { return std::isxdigit((unsigned char)c); });
  };
  std::error_code ec;
  std::vector<Entry> entries;
  uint64_t total = 0;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::error_code fileError;
    if (!e.is_regular_file(fileError) || !isObject(e.path().filename().string()))
      continue;
    uint64_t bytes = e.file_size(fileError);
    fs::file_time_type time = e.last_write_time(fileError);
    if (fileError)
      continue;
    entries.push_back({e.path(), time, bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.time < b.time; });
  size_t removed = 0;
  for (const Entry &e : entries) {
    if (total <= limitBytes)
      break;
    if (e.path.filename() == keep)
      continue;
    if (fs::remove(e.path, ec)) {
      total -= e.bytes;
      ++removed;
    }
  }
  return removed;
}

std::string compileCached(const std::string &compiler, const std::string &flags,
                          const std::string &source, const std::string &sourceName,
                          const std::string &extension, std::vector<uint8_t> &object) {
  std::error_code ec;
  fs::path dir = codegenCacheDir();
  fs::create_directories(dir, ec);
  fs::path cached =
      dir / fmt::format("{:016x}{}",
                        fnv1a(compilerIdentity(compiler) + "\n" + compiler + " " + flags + "\n" +
                              source),
                        extension);
  if (fs::is_regular_file(cached, ec) && readFile(cached, object)) {
    fs::last_write_time(cached, fs::file_time_type::clock::now(), ec); // recently used
    return "";
  }
  // Compile into a private temporary directory, then publish into the cache by rename.
  std::string pattern = (fs::temp_directory_path() / "plait-codegen-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    return "cannot create a temporary directory";
  fs::path work = pattern;
  fs::path input = work / sourceName, output = work / ("kernels" + extension);
  {
    std::ofstream out(input);
    out << source;
  }
  std::string log;
  int status = runCommand(compiler + " " + flags + " -o " + shellQuote(output.string()) + " " +
                              shellQuote(input.string()),
                          log);
  if (status != 0 || !fs::is_regular_file(output, ec) || !readFile(output, object)) {
    for (char &c : log)
      if (c == '\n')
        c = ' ';
    fs::remove_all(work, ec);
    object.clear();
    return fmt::format("{} failed (exit {}): {}", compiler, status, log);
  }
  fs::path staged = dir / (cached.filename().string() + fmt::format(".{}", getpid()));
  if (fs::copy_file(output, staged, fs::copy_options::overwrite_existing, ec))
    fs::rename(staged, cached, ec);
  fs::remove_all(work, ec);
  pruneCodegenCache(dir.string(), codegenCacheLimit(), cached.filename().string());
  return "";
}

} // namespace plait
