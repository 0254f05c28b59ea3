// Human-readable quantities in cluster specs ("80 GiB", "3.35 TB/s", "989 TFLOPS", "5 us"):
// parsing them into SI base units and printing them back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace plait::cluster {

/// What a quantity measures; each kind has its own table of units.
enum class Quantity {
  Bytes,    ///< B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024)
  Rate,     ///< bytes/s: B/s, KB/s, MB/s, GB/s, TB/s, KiB/s ... TiB/s, and Mbit/s, Gbit/s, Tbit/s
  FlopRate, ///< FLOP/s: FLOPS, MFLOPS, GFLOPS, TFLOPS, PFLOPS
  Time,     ///< seconds: s, ms, us (or µs), ns
};

/// The units accepted for `kind`, as one comma-separated line for error messages.
std::string acceptedUnits(Quantity kind);

/// Parses "NUMBER UNIT" (space optional) into the base unit of `kind` (bytes, bytes/s,
/// FLOP/s, seconds). A bare number, an unknown unit, trailing text or a non-finite number is
/// refused: `error` then says what was expected (the caller adds the field and line).
bool parseQuantity(std::string_view text, Quantity kind, double &value, std::string &error);

/// `value` (in the base unit of `kind`) in the largest unit that keeps it at least 1, with
/// the shortest decimal that parses back to the same double ("3.35 TB/s", "80 GiB", "5 us").
/// Byte counts take the unit that says them in the fewest digits (80 GiB, 141 GB, 1.5 KiB).
std::string formatQuantity(double value, Quantity kind);

} // namespace plait::cluster
