// Progress display (runtime/Progress.h): field formatting, the line and the bar, and when a
// report is printed, with an injected clock.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/Progress.h"

namespace plait::testing {
namespace {

using rt::ProgressFields;
using rt::ProgressMode;
using rt::ProgressReporter;
using rt::StepProgress;

TEST(Progress, FormatsDurationsCountsAndBytes) {
  EXPECT_EQ(rt::formatDuration(0), "0:00:00");
  EXPECT_EQ(rt::formatDuration(31.4), "0:00:31");
  EXPECT_EQ(rt::formatDuration(3723), "1:02:03");
  EXPECT_EQ(rt::formatDuration(100000), "27:46:40");
  EXPECT_EQ(rt::formatDuration(-1), "-:--:--");
  EXPECT_EQ(rt::formatThousands(0), "0");
  EXPECT_EQ(rt::formatThousands(999), "999");
  EXPECT_EQ(rt::formatThousands(3410), "3,410");
  EXPECT_EQ(rt::formatThousands(1234567), "1,234,567");
  EXPECT_EQ(rt::formatBytes(512), "512 B");
  EXPECT_EQ(rt::formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(rt::formatBytes(1258291), "1.2 MiB");
  EXPECT_EQ(rt::formatBytes(uint64_t(3) << 30), "3.0 GiB");
}

TEST(Progress, ParsesAndResolvesModes) {
  ProgressMode m = ProgressMode::None;
  EXPECT_TRUE(rt::parseProgressMode("auto", m));
  EXPECT_EQ(m, ProgressMode::Auto);
  EXPECT_TRUE(rt::parseProgressMode("bar", m));
  EXPECT_EQ(m, ProgressMode::Bar);
  EXPECT_TRUE(rt::parseProgressMode("lines", m));
  EXPECT_EQ(m, ProgressMode::Lines);
  EXPECT_TRUE(rt::parseProgressMode("none", m));
  EXPECT_EQ(m, ProgressMode::None);
  EXPECT_FALSE(rt::parseProgressMode("fancy", m));
  EXPECT_EQ(rt::resolveProgressMode(ProgressMode::Auto, true), ProgressMode::Bar);
  EXPECT_EQ(rt::resolveProgressMode(ProgressMode::Auto, false), ProgressMode::Lines);
  EXPECT_EQ(rt::resolveProgressMode(ProgressMode::None, true), ProgressMode::None);
  EXPECT_EQ(rt::resolveProgressMode(ProgressMode::Lines, true), ProgressMode::Lines);
}

ProgressFields sampleFields() {
  ProgressFields f;
  f.step = 12;
  f.totalSteps = 100;
  f.hasLoss = true;
  f.loss = 2.30123;
  f.samplesPerSecond = 3410.4;
  f.etaSeconds = 31;
  f.arenaHighWater = 1258291;
  return f;
}

TEST(Progress, RendersLineAndBar) {
  ProgressFields f = sampleFields();
  EXPECT_EQ(rt::renderProgressLine(f),
            "step 12/100  loss 2.3012  3,410 samples/s  eta 0:00:31  mem 1.2 MiB");
  EXPECT_EQ(rt::renderProgressBar(f, 10),
            "step 12/100 [#.........]  12%  loss 2.3012  3,410 samples/s  eta 0:00:31  "
            "mem 1.2 MiB");
  f.step = 100;
  f.etaSeconds = 0;
  EXPECT_THAT(rt::renderProgressBar(f, 10), ::testing::StartsWith("step 100/100 [##########] 100%"));
  f.hasLoss = false; // an inference plan, or a loss that is not a float scalar
  f.etaSeconds = -1;
  EXPECT_EQ(rt::renderProgressLine(f),
            "step 100/100  loss -  3,410 samples/s  eta -:--:--  mem 1.2 MiB");
}

// A reporter writing into memory, driven by a clock the test advances.
class ReporterTest : public ::testing::Test {
protected:
  void SetUp() override { out_ = open_memstream(&buffer_, &size_); }
  void TearDown() override {
    if (out_)
      std::fclose(out_);
    std::free(buffer_);
  }
  std::string text() {
    std::fflush(out_);
    return std::string(buffer_, size_);
  }
  ProgressReporter::Clock clock() {
    return [this] { return now_; };
  }
  // Runs `steps` steps of `stepSeconds` each (the clock advances by as much), 8 samples each.
  void runSteps(ProgressReporter &r, int64_t steps, double stepSeconds) {
    for (int64_t s = 1; s <= steps; ++s) {
      now_ += stepSeconds;
      StepProgress p;
      p.step = s;
      p.hasLoss = true;
      p.loss = 1.0 / double(s);
      p.stepMs = stepSeconds * 1000;
      p.samples = 8;
      p.arenaHighWater = 4096;
      r.step(p);
    }
  }

  std::FILE *out_ = nullptr;
  char *buffer_ = nullptr;
  size_t size_ = 0;
  double now_ = 100; // any origin
};

TEST_F(ReporterTest, LinesAreThrottledToOneASecondWithFirstAndLast) {
  {
    ProgressReporter r(ProgressMode::Lines, out_, 20, clock());
    runSteps(r, 20, 0.25); // a line at most every 4 steps
  }
  // Step 5: the mean of steps 2..5 is 0.25 s, 15 steps left; 4 steps of 8 samples in 1 s.
  EXPECT_EQ(text(), "step 1/20  loss 1.0000  32 samples/s  eta 0:00:05  mem 4.0 KiB\n"
                    "step 5/20  loss 0.2000  32 samples/s  eta 0:00:04  mem 4.0 KiB\n"
                    "step 9/20  loss 0.1111  32 samples/s  eta 0:00:03  mem 4.0 KiB\n"
                    "step 13/20  loss 0.0769  32 samples/s  eta 0:00:02  mem 4.0 KiB\n"
                    "step 17/20  loss 0.0588  32 samples/s  eta 0:00:01  mem 4.0 KiB\n"
                    "step 20/20  loss 0.0500  32 samples/s  eta 0:00:00  mem 4.0 KiB\n");
}

TEST_F(ReporterTest, EtaUsesTheStepsAfterTheFirst) {
  ProgressReporter r(ProgressMode::Lines, out_, 10, clock());
  StepProgress p;
  p.samples = 1;
  p.step = 1;
  p.stepMs = 5000;
  now_ += 5; // a slow first step
  r.step(p);
  now_ += 2; // then 1 s per step
  p.step = 3;
  p.stepMs = 1000;
  r.step(p);
  EXPECT_EQ(text(), "step 1/10  loss -  0 samples/s  eta 0:00:45  mem 0 B\n"
                    "step 3/10  loss -  1 samples/s  eta 0:00:07  mem 0 B\n");
}

// A run resumed from a checkpoint starts at a later step: that one is the warm-up.
TEST_F(ReporterTest, ResumedRunCountsFromItsFirstStep) {
  ProgressReporter r(ProgressMode::Lines, out_, 100, clock());
  StepProgress p;
  p.samples = 2;
  p.stepMs = 3000;
  p.step = 51;
  now_ += 3;
  r.step(p);
  p.stepMs = 1000;
  p.step = 52;
  now_ += 1;
  r.step(p);
  EXPECT_EQ(text(), "step 51/100  loss -  1 samples/s  eta 0:02:27  mem 0 B\n"
                    "step 52/100  loss -  2 samples/s  eta 0:00:48  mem 0 B\n");
}

TEST_F(ReporterTest, BarRedrawsAtMostTenTimesASecondAndEndsWithANewline) {
  ProgressReporter r(ProgressMode::Bar, out_, 10, clock());
  runSteps(r, 10, 0.0625); // a redraw at most every second step
  r.finish();
  r.finish(); // once only
  std::string t = text();
  EXPECT_EQ(std::count(t.begin(), t.end(), '\r'), 6) << t; // steps 1, 3, 5, 7, 9, 10
  EXPECT_THAT(t, ::testing::StartsWith("\rstep 1/10 [##......................]  10%  loss "
                                       "1.0000"));
  EXPECT_THAT(t, ::testing::HasSubstr("\x1b[K\rstep 3/10 "));
  EXPECT_THAT(t, ::testing::EndsWith("\rstep 10/10 [########################] 100%  loss "
                                     "0.1000  128 samples/s  eta 0:00:00  mem 4.0 KiB\x1b[K\n"));
}

TEST_F(ReporterTest, NonePrintsNothing) {
  {
    ProgressReporter r(ProgressMode::None, out_, 5, clock());
    runSteps(r, 5, 1);
  }
  EXPECT_EQ(text(), "");
}

} // namespace
} // namespace plait::testing
