// What every fuzz target checks of a rejection: one line for the user, naming the file.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace plait::fuzz {

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
  if (!why)
    return;
  std::fprintf(stderr, "fuzz: the error message %s:\n%s\n", why, message.c_str());
  std::abort();
}

} // namespace plait::fuzz
