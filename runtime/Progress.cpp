// Progress bar and throttled progress lines for plait-run's step loop.
#include "runtime/Progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace plait::rt {

namespace {

constexpr double kLineInterval = 1.0; // seconds between plain lines
constexpr double kBarInterval = 0.1;  // seconds between bar redraws

} // namespace

bool parseProgressMode(std::string_view text, ProgressMode &out) {
  if (text == "auto")
    out = ProgressMode::Auto;
  else if (text == "bar")
    out = ProgressMode::Bar;
  else if (text == "lines")
    out = ProgressMode::Lines;
  else if (text == "none")
    out = ProgressMode::None;
  else
    return false;
  return true;
}

ProgressMode resolveProgressMode(ProgressMode mode, bool streamIsTerminal) {
  if (mode != ProgressMode::Auto)
    return mode;
  return streamIsTerminal ? ProgressMode::Bar : ProgressMode::Lines;
}

std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    return "-:--:--";
  uint64_t s = uint64_t(std::llround(seconds));
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string formatThousands(uint64_t value) {
  std::string digits = fmt::format("{}", value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1024)
    return fmt::format("{} B", bytes);
  static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

namespace {

// Everything after the step count: loss, throughput, ETA, memory.
std::string fieldsTail(const ProgressFields &f) {
  std::string loss = !f.hasLoss           ? "-"
                     : std::isnan(f.loss) ? std::string("nan") // whatever its sign bit
                                          : fmt::format("{:.4f}", f.loss);
  return fmt::format("loss {}  {} samples/s  eta {}  mem {}", loss,
                     formatThousands(uint64_t(std::llround(std::max(0.0, f.samplesPerSecond)))),
                     formatDuration(f.etaSeconds), formatBytes(f.arenaHighWater));
}

} // namespace

std::string renderProgressLine(const ProgressFields &f) {
  return fmt::format("step {}/{}  {}", f.step, f.totalSteps, fieldsTail(f));
}

std::string renderProgressBar(const ProgressFields &f, int barWidth) {
  double fraction = f.totalSteps > 0 ? std::clamp(double(f.step) / double(f.totalSteps), 0.0, 1.0)
                                     : 0.0;
  int filled = int(fraction * barWidth); // a full bar only when every step ran
  std::string bar(size_t(filled), '#');
  bar.append(size_t(barWidth - filled), '.');
  return fmt::format("step {}/{} [{}] {:3}%  {}", f.step, f.totalSteps, bar,
                     int(fraction * 100), fieldsTail(f));
}

double ProgressReporter::steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ProgressReporter::ProgressReporter(ProgressMode mode, std::FILE *out, int64_t totalSteps,
                                   Clock clock)
    : mode_(mode), out_(out), totalSteps_(totalSteps), clock_(std::move(clock)) {}

void ProgressReporter::step(const StepProgress &s) {
  if (mode_ == ProgressMode::None || mode_ == ProgressMode::Auto)
    return;
  double now = clock_();
  windowMs_ += s.stepMs;
  windowSamples_ += s.samples;
  if (firstStep_ < 0) { // a resumed run starts after step 1
    firstStep_ = s.step;
    firstMs_ = s.stepMs;
    firstDone_ = now;
  } else {
    afterFirstSteps_ = s.step - firstStep_;
  }
  bool last = s.step >= totalSteps_;
  double interval = mode_ == ProgressMode::Bar ? kBarInterval : kLineInterval;
  if (emitted_ && !last && now - lastEmit_ < interval)
    return;

  ProgressFields f;
  f.step = s.step;
  f.totalSteps = totalSteps_;
  f.hasLoss = s.hasLoss;
  f.loss = s.loss;
  f.samplesPerSecond = windowMs_ > 0 ? double(windowSamples_) * 1000.0 / windowMs_ : 0.0;
  int64_t left = std::max<int64_t>(0, totalSteps_ - s.step);
  double meanSeconds = afterFirstSteps_ > 0 ? (now - firstDone_) / double(afterFirstSteps_)
                                            : firstMs_ / 1000.0;
  f.etaSeconds = meanSeconds * double(left);
  f.arenaHighWater = s.arenaHighWater;
  emit(f);
  lastEmit_ = now;
  emitted_ = true;
  windowMs_ = 0;
  windowSamples_ = 0;
}

void ProgressReporter::emit(const ProgressFields &f) {
  if (mode_ == ProgressMode::Bar) {
    fmt::print(out_, "\r{}\x1b[K", renderProgressBar(f));
    drawn_ = true;
  } else {
    fmt::print(out_, "{}\n", renderProgressLine(f));
  }
  std::fflush(out_);
}

void ProgressReporter::finish() {
  if (!drawn_)
    return;
  fmt::print(out_, "\n");
  std::fflush(out_);
  drawn_ = false;
}

} // namespace plait::rt
