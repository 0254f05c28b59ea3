// Status: how runtime errors travel up to a place that can report them and exit cleanly.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace plait::rt {

/// Success, or a one-line message for the user. Runtime code returns Status rather than
/// exiting; plait-run prints the message and exits 1 (2 for an internal error: a bug or
/// an environment failure, not something the user's plan or inputs caused; 3 when training
/// diverged: a non-finite loss or gradient norm, which a restart would meet again).
class [[nodiscard]] Status {
public:
  enum class Kind { User, Internal, Diverged };
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message), Kind::User); }
  template <typename... Args>
  static Status errorf(fmt::format_string<Args...> f, Args &&...args) {
    return Status(fmt::format(f, std::forward<Args>(args)...), Kind::User);
  }
  static Status internal(std::string message) {
    return Status(std::move(message), Kind::Internal);
  }
  static Status diverged(std::string message) {
    return Status(std::move(message), Kind::Diverged);
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  bool isInternal() const { return kind_ == Kind::Internal; }
  bool isDiverged() const { return kind_ == Kind::Diverged; }
  const std::string &message() const { return message_; }
  /// The same kind of error with `prefix` in front of the message (adds context on the way up).
  Status withPrefix(const std::string &prefix) const {
    return ok() ? *this : Status(prefix + message_, kind_);
  }

private:
  Status(std::string message, Kind kind)
      : failed_(true), kind_(kind), message_(std::move(message)) {}
  bool failed_ = false;
  Kind kind_ = Kind::User;
  std::string message_;
};

/// `text` with control characters escaped as \xNN, so that a name taken from a file can
/// never break a one-line message.
inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

} // namespace plait::rt

/// Returns the status of `expr` from the enclosing function when it failed.
#define PLAIT_RETURN_IF_ERROR(expr)                                                             \
  do {                                                                                          \
    ::plait::rt::Status plait_status_ = (expr);                                                 \
    if (!plait_status_.ok())                                                                    \
      return plait_status_;                                                                     \
  } while (0)
