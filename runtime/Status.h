// Status: how runtime errors travel up to a place that can report them and exit cleanly.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

namespace plait::rt {

/// Success, or a one-line message for the user. Runtime code returns Status rather than
/// exiting; plait-run prints the message and exits 1.
class [[nodiscard]] Status {
public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  template <typename... Args>
  static Status errorf(fmt::format_string<Args...> f, Args &&...args) {
    return Status(fmt::format(f, std::forward<Args>(args)...));
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }

private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

} // namespace plait::rt

/// Returns the status of `expr` from the enclosing function when it failed.
#define PLAIT_RETURN_IF_ERROR(expr)                                                             \
  do {                                                                                          \
    ::plait::rt::Status plait_status_ = (expr);                                                 \
    if (!plait_status_.ok())                                                                    \
      return plait_status_;                                                                     \
  } while (0)
