// What every fuzz target checks of a rejection (one line for the user, naming the file), and
// the pieces the targets that write their input to a file share.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace plait::fuzz {

/// Aborts (a finding for libFuzzer) after printing `what` and `detail`.
[[noreturn]] inline void finding(const char *what, const std::string &detail) {
  std::fprintf(stderr, "fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

/// A new private, otherwise empty temporary folder named after `prefix`, removed at exit
/// (a target makes one, once).
inline std::string privateDir(const std::string &prefix) {
  static std::vector<std::string> removeAtExit;
  std::string d = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(d.data())) {
    std::perror("fuzz: mkdtemp");
    std::abort();
  }
  if (removeAtExit.empty())
    std::atexit([] {
      for (const std::string &dir : removeAtExit)
        std::filesystem::remove_all(dir);
    });
  removeAtExit.push_back(d);
  return d;
}

/// Writes the input's bytes to `path` (for readers that take a path), or reports a finding.
inline void writeInput(const std::string &path, const uint8_t *data, size_t size) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  if (!file.flush())
    finding("cannot write the input file", path);
}

/// Aborts (a finding for libFuzzer) unless `message` is a non-empty single line that starts
/// with `path`: the readers promise users that every rejection says which file is bad.
inline void expectOneLineError(const std::string &message, const std::string &path) {
  const char *why = nullptr;
  if (message.rfind(path, 0) != 0)
    why = "does not start with the file name";
  else if (message.size() <= path.size())
    why = "says nothing after the file name";
  else if (message.find_first_of("\n\r") != std::string::npos)
    why = "is more than one line";
  if (why)
    finding((std::string("the error message ") + why + ":").c_str(), message);
}

} // namespace plait::fuzz
