// OpenBLAS core-type tiers: which choices plait corrects (generic ones, by re-executing) and
// which it only names (an OPENBLAS_CORETYPE from the environment below what the CPU runs).
#include <gtest/gtest.h>

#include "runtime/cpu/BlasCore.h"

namespace plait::rt {
namespace {

TEST(BlasCore, TiersFollowTheVectorUnits) {
  EXPECT_EQ(blasCoreTier("SkylakeX"), 2);
  EXPECT_EQ(blasCoreTier("Cooperlake"), 2);
  EXPECT_EQ(blasCoreTier("SapphireRapids"), 2);
  EXPECT_EQ(blasCoreTier("Haswell"), 1);
  EXPECT_EQ(blasCoreTier("Zen"), 1);
  EXPECT_EQ(blasCoreTier("Prescott"), 0);
  EXPECT_EQ(blasCoreTier("Sandybridge"), 0);
  EXPECT_EQ(blasCoreTier(""), 0);
}

TEST(BlasCore, OnlyGenericChoicesAreReplaced) {
  EXPECT_EQ(betterBlasCore("Prescott", "SkylakeX"), "SkylakeX");
  EXPECT_EQ(betterBlasCore("Sandybridge", "Haswell"), "Haswell");
  EXPECT_EQ(betterBlasCore("Prescott", ""), ""); // a CPU with neither AVX2 nor AVX-512
  // A specific choice is OpenBLAS's (or the user's) to make, even below the CPU.
  EXPECT_EQ(betterBlasCore("Haswell", "SkylakeX"), "");
  EXPECT_EQ(betterBlasCore("Zen", "Haswell"), "");
}

TEST(BlasCore, StrongerNamesKernelsBelowTheCpu) {
  EXPECT_EQ(strongerBlasCore("Haswell", "SkylakeX"), "SkylakeX");
  EXPECT_EQ(strongerBlasCore("Prescott", "Haswell"), "Haswell");
  EXPECT_EQ(strongerBlasCore("Cooperlake", "SkylakeX"), ""); // same tier
  EXPECT_EQ(strongerBlasCore("Haswell", "Haswell"), "");
  EXPECT_EQ(strongerBlasCore("Zen", "Haswell"), "");
  EXPECT_EQ(strongerBlasCore("SkylakeX", "Haswell"), ""); // above the CPU: OpenBLAS's call
  EXPECT_EQ(strongerBlasCore("Prescott", ""), "");
}

TEST(BlasCore, CpuCoreIsATierOrNothing) {
  std::string cpu = cpuBlasCore();
  EXPECT_TRUE(cpu.empty() || cpu == "SkylakeX" || cpu == "Haswell") << cpu;
}

} // namespace
} // namespace plait::rt
