// Unit tables and the quantity parser/printer of cluster specs.
#include "runtime/cluster/Units.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace plait::cluster {

namespace {

// A unit is 10^exp10 · binary base units, binary being a power of two (1 KiB = 2^10 B,
// 1 Gbit/s = 10^9 · 2^-3 B/s). The decimal part is applied by strtod itself ("177.5 ns" is
// read as "177.5e-9"), so that a value parses to the double nearest its decimal, exactly as
// a literal would, and a printed value parses back to the same double.
struct Unit {
  std::string_view name;
  int exp10;
  double binary = 1.0;

  // `number` (the digits as written, e.g. "177.5") in base units.
  double toBase(const std::string &number) const {
    bool plain = number.find_first_of("eExXpPnNiI") == std::string::npos;
    double value = plain ? std::strtod((number + "e" + std::to_string(exp10)).c_str(), nullptr)
                         : std::strtod(number.c_str(), nullptr) * std::pow(10.0, exp10);
    return value * binary;
  }
  double fromBase(double value) const { return value / binary / std::pow(10.0, exp10); }
  double size() const { return std::pow(10.0, exp10) * binary; }
};

// Largest first: formatQuantity picks the first unit that keeps the number at least 1.
const std::vector<Unit> kByteUnits = {
    {"TiB", 0, 1099511627776.0},
    {"TB", 12},
    {"GiB", 0, 1073741824.0},
    {"GB", 9},
    {"MiB", 0, 1048576.0},
    {"MB", 6},
    {"KiB", 0, 1024.0},
    {"KB", 3},
    {"B", 0},
};
const std::vector<Unit> kRateUnits = {
    {"TiB/s", 0, 1099511627776.0}, {"TB/s", 12}, {"Tbit/s", 12, 0.125},
    {"GiB/s", 0, 1073741824.0},    {"GB/s", 9},  {"Gbit/s", 9, 0.125},
    {"MiB/s", 0, 1048576.0},       {"MB/s", 6},  {"Mbit/s", 6, 0.125},
    {"KiB/s", 0, 1024.0},          {"KB/s", 3},  {"B/s", 0},
};
const std::vector<Unit> kFlopUnits = {
    {"PFLOPS", 15}, {"TFLOPS", 12}, {"GFLOPS", 9}, {"MFLOPS", 6}, {"FLOPS", 0},
};
const std::vector<Unit> kTimeUnits = {
    {"s", 0}, {"ms", -3}, {"us", -6}, {"µs", -6}, {"ns", -9},
};

const std::vector<Unit> &unitsOf(Quantity kind) {
  switch (kind) {
  case Quantity::Bytes:
    return kByteUnits;
  case Quantity::Rate:
    return kRateUnits;
  case Quantity::FlopRate:
    return kFlopUnits;
  case Quantity::Time:
    return kTimeUnits;
  }
  return kByteUnits;
}

// Units formatQuantity may print: rates in decimal bytes/s only (no bits, no KiB/s), and
// ASCII only ("us", not "µs").
bool printable(Quantity kind, const Unit &unit) {
  if (kind == Quantity::Rate)
    return unit.name.find("bit") == std::string_view::npos &&
           unit.name.find("iB") == std::string_view::npos;
  return unit.name != "µs";
}

bool isSpace(char c) { return c == ' ' || c == '\t'; }

// Shortest decimal that parses back to exactly `x`.
std::string shortest(double x) { return fmt::format("{}", x); }

} // namespace

std::string acceptedUnits(Quantity kind) {
  std::string out;
  for (const Unit &unit : unitsOf(kind)) {
    if (unit.name == "µs")
      continue;
    if (!out.empty())
      out += ", ";
    out += unit.name;
  }
  return out;
}

bool parseQuantity(std::string_view text, Quantity kind, double &value, std::string &error) {
  std::string owned(text);
  const char *begin = owned.c_str();
  char *end = nullptr;
  errno = 0;
  double number = std::strtod(begin, &end);
  if (end == begin || isSpace(*begin)) {
    error = fmt::format("expected a number and a unit ({})", acceptedUnits(kind));
    return false;
  }
  if (errno == ERANGE || !std::isfinite(number)) {
    error = "the number is out of range";
    return false;
  }
  std::string_view rest(end);
  while (!rest.empty() && isSpace(rest.front()))
    rest.remove_prefix(1);
  if (rest.empty()) {
    error = fmt::format("missing unit (one of {})", acceptedUnits(kind));
    return false;
  }
  for (const Unit &unit : unitsOf(kind)) {
    if (rest == unit.name) {
      value = unit.toBase(std::string(begin, size_t(end - begin)));
      if (!std::isfinite(value)) {
        error = "the number is out of range";
        return false;
      }
      return true;
    }
  }
  error = fmt::format("unknown unit '{}' (expected one of {})", rest, acceptedUnits(kind));
  return false;
}

std::string formatQuantity(double value, Quantity kind) {
  const std::vector<Unit> &units = unitsOf(kind);
  // The fewest digits (without an exponent) that parse back to exactly `value`.
  auto digitsFor = [&](const Unit &unit, std::string &out) {
    double scaled = unit.fromBase(value);
    for (int precision = 1; precision <= 17; ++precision) {
      std::string number = fmt::format("{:.{}g}", scaled, precision);
      if (number.find('e') != std::string::npos && precision < 17)
        continue;
      if (unit.toBase(number) == value) {
        out = fmt::format("{} {}", number, unit.name);
        return true;
      }
    }
    return false;
  };
  // Digits of a number as printed, without sign, point and leading zeros.
  auto significantDigits = [](const std::string &text) {
    size_t digits = 0;
    bool leading = true;
    for (char ch : text.substr(0, text.find(' '))) {
      if (ch < '0' || ch > '9' || (leading && ch == '0'))
        continue;
      leading = false;
      ++digits;
    }
    return digits;
  };
  // Byte counts take the unit that says them in the fewest digits (80 GiB, 141 GB, 1.5 KiB,
  // 11.75 GiB; 141 GB is 131.32... GiB); other quantities the largest unit.
  std::string best, out;
  for (const Unit &unit : units) {
    if (!printable(kind, unit) || std::fabs(value) < unit.size() || !digitsFor(unit, out))
      continue;
    if (kind != Quantity::Bytes)
      return out;
    if (best.empty() || significantDigits(out) < significantDigits(best))
      best = out;
  }
  if (!best.empty())
    return best;
  const Unit &base = kind == Quantity::Time ? units[0] : units.back();
  return fmt::format("{} {}", shortest(value), base.name);
}

} // namespace plait::cluster
