// Quantities in cluster specs: every unit family, the errors, and printing back exactly.
#include "runtime/cluster/Units.h"

#include <gtest/gtest.h>

namespace plait::cluster {
namespace {

double parsed(const std::string &text, Quantity kind) {
  double value = -1;
  std::string error;
  EXPECT_TRUE(parseQuantity(text, kind, value, error)) << text << ": " << error;
  return value;
}

std::string errorOf(const std::string &text, Quantity kind) {
  double value = 0;
  std::string error;
  EXPECT_FALSE(parseQuantity(text, kind, value, error)) << text;
  return error;
}

TEST(Units, Bytes) {
  EXPECT_EQ(parsed("80 GiB", Quantity::Bytes), 80.0 * (1ull << 30));
  EXPECT_EQ(parsed("141 GB", Quantity::Bytes), 141e9);
  EXPECT_EQ(parsed("1.5KiB", Quantity::Bytes), 1536.0);
  EXPECT_EQ(parsed("2 TiB", Quantity::Bytes), 2.0 * (1ull << 40));
  EXPECT_EQ(parsed("7 B", Quantity::Bytes), 7.0);
  EXPECT_EQ(parsed("3 MB", Quantity::Bytes), 3e6);
}

TEST(Units, Rates) {
  EXPECT_DOUBLE_EQ(parsed("3.35 TB/s", Quantity::Rate), 3.35e12);
  EXPECT_EQ(parsed("450 GB/s", Quantity::Rate), 450e9);
  EXPECT_EQ(parsed("400 Gbit/s", Quantity::Rate), 50e9);
  EXPECT_EQ(parsed("1 Tbit/s", Quantity::Rate), 125e9);
  EXPECT_EQ(parsed("2 GiB/s", Quantity::Rate), 2.0 * (1ull << 30));
  EXPECT_EQ(parsed("100 B/s", Quantity::Rate), 100.0);
}

TEST(Units, FlopsAndTime) {
  EXPECT_EQ(parsed("989.5 TFLOPS", Quantity::FlopRate), 989.5e12);
  EXPECT_EQ(parsed("2 PFLOPS", Quantity::FlopRate), 2e15);
  EXPECT_EQ(parsed("8.9 GFLOPS", Quantity::FlopRate), 8.9e9);
  EXPECT_EQ(parsed("5 us", Quantity::Time), 5e-6);
  EXPECT_EQ(parsed("5 µs", Quantity::Time), 5e-6);
  EXPECT_EQ(parsed("177.5 ns", Quantity::Time), 177.5e-9);
  EXPECT_EQ(parsed("2 ms", Quantity::Time), 2e-3);
  EXPECT_EQ(parsed("1 s", Quantity::Time), 1.0);
}

TEST(Units, Errors) {
  EXPECT_EQ(errorOf("80", Quantity::Bytes),
            "missing unit (one of TiB, TB, GiB, GB, MiB, MB, KiB, KB, B)");
  EXPECT_EQ(errorOf("80 GIB", Quantity::Bytes),
            "unknown unit 'GIB' (expected one of TiB, TB, GiB, GB, MiB, MB, KiB, KB, B)");
  EXPECT_EQ(errorOf("fast", Quantity::Rate),
            "expected a number and a unit (TiB/s, TB/s, Tbit/s, GiB/s, GB/s, Gbit/s, MiB/s, "
            "MB/s, Mbit/s, KiB/s, KB/s, B/s)");
  EXPECT_EQ(errorOf("400 Gb/s", Quantity::Rate),
            "unknown unit 'Gb/s' (expected one of TiB/s, TB/s, Tbit/s, GiB/s, GB/s, Gbit/s, "
            "MiB/s, MB/s, Mbit/s, KiB/s, KB/s, B/s)");
  EXPECT_EQ(errorOf("5 GB/s", Quantity::Time),
            "unknown unit 'GB/s' (expected one of s, ms, us, ns)");
  EXPECT_EQ(errorOf("1e999 TFLOPS", Quantity::FlopRate), "the number is out of range");
  EXPECT_EQ(errorOf("nan TFLOPS", Quantity::FlopRate), "the number is out of range");
}

TEST(Units, FormatPicksAReadableUnit) {
  EXPECT_EQ(formatQuantity(80.0 * (1ull << 30), Quantity::Bytes), "80 GiB");
  EXPECT_EQ(formatQuantity(141e9, Quantity::Bytes), "141 GB");
  EXPECT_EQ(formatQuantity(1536, Quantity::Bytes), "1.5 KiB");
  EXPECT_EQ(formatQuantity(1000, Quantity::Bytes), "1 KB");
  EXPECT_EQ(formatQuantity(12032.0 * (1 << 20), Quantity::Bytes), "11.75 GiB");
  EXPECT_EQ(formatQuantity(12345678901, Quantity::Bytes), "12.345678901 GB");
  EXPECT_EQ(formatQuantity(3.35e12, Quantity::Rate), "3.35 TB/s");
  EXPECT_EQ(formatQuantity(50e9, Quantity::Rate), "50 GB/s");
  EXPECT_EQ(formatQuantity(989.5e12, Quantity::FlopRate), "989.5 TFLOPS");
  EXPECT_EQ(formatQuantity(5e-6, Quantity::Time), "5 us");
  EXPECT_EQ(formatQuantity(177.5e-9, Quantity::Time), "177.5 ns");
  EXPECT_EQ(formatQuantity(0.25, Quantity::Time), "250 ms");
  // Measured values rounded to 4 digits print as those digits.
  EXPECT_EQ(formatQuantity(1.993e-7, Quantity::Time), "199.3 ns");
  EXPECT_EQ(formatQuantity(8.515e-7, Quantity::Time), "851.5 ns");
  EXPECT_EQ(formatQuantity(1.631e10, Quantity::FlopRate), "16.31 GFLOPS");
  EXPECT_EQ(formatQuantity(4.095e9, Quantity::Rate), "4.095 GB/s");
}

TEST(Units, FormatParsesBackExactly) {
  const double values[] = {1.0 / 3, 6.052e9, 123456789.123, 8.899e9, 4.2e-7, 12345.678e12};
  for (Quantity kind : {Quantity::Rate, Quantity::FlopRate, Quantity::Time}) {
    for (double v : values) {
      std::string text = formatQuantity(v, kind);
      EXPECT_EQ(parsed(text, kind), v) << text;
    }
  }
  for (double v : {12032.0 * (1 << 20), 1.0, 999.0, 123456789.0}) {
    std::string text = formatQuantity(v, Quantity::Bytes);
    EXPECT_EQ(parsed(text, Quantity::Bytes), v) << text;
  }
}

} // namespace
} // namespace plait::cluster
