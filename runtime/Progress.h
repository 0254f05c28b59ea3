// Training progress on a stream (stderr, rank 0): a redrawn bar on a terminal, throttled plain
// lines elsewhere. Formatting is separate from timing so that tests can inject a clock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace plait::rt {

/// --progress: auto (bar when the stream is a terminal, else lines), bar, lines, none.
enum class ProgressMode { Auto, Bar, Lines, None };

/// Parses "auto", "bar", "lines" or "none"; false for anything else.
bool parseProgressMode(std::string_view text, ProgressMode &out);
/// Auto becomes Bar or Lines; the others stay as they are.
ProgressMode resolveProgressMode(ProgressMode mode, bool streamIsTerminal);

/// What one finished step reports.
struct StepProgress {
  int64_t step = 0;         // 1-based
  double loss = 0;          // meaningful when hasLoss
  bool hasLoss = false;
  double stepMs = 0;        // the step's wall time
  int64_t samples = 0;      // global samples the step processed
  uint64_t arenaHighWater = 0;
};

/// What a report shows, computed by ProgressReporter from the steps it has seen.
struct ProgressFields {
  int64_t step = 0, totalSteps = 0;
  bool hasLoss = false;
  double loss = 0;
  double samplesPerSecond = 0; // over the steps since the previous report
  double etaSeconds = -1;      // < 0: unknown
  uint64_t arenaHighWater = 0;
};

/// "0:00:31", "1:02:03", "27:46:40"; "-:--:--" for a negative (unknown) time.
std::string formatDuration(double seconds);
/// An integer with thousands separators: "3,410".
std::string formatThousands(uint64_t value);
/// "512 B", "1.2 KiB", "3.4 MiB", "1.0 GiB".
std::string formatBytes(uint64_t bytes);
/// One plain line, without a newline:
/// "step 12/100  loss 2.3012  3,410 samples/s  eta 0:00:31  mem 1.2 MiB".
std::string renderProgressLine(const ProgressFields &f);
/// The bar, without "\r" or a newline, a bar of `barWidth` cells between the step count and
/// the other fields: "step 12/100 [###.......]  12%  loss ...".
std::string renderProgressBar(const ProgressFields &f, int barWidth = 24);

/// Prints progress for a run of `totalSteps` steps. Lines: the first and the last step always,
/// others at most once per second. Bar: one line redrawn in place ("\r", clear to end of line)
/// at most ten times per second, and always for the last step; finish() ends it with a
/// newline. The ETA is the mean time of the steps after the first one reported (which warms
/// up; a resumed run's first step need not be step 1) times the steps left.
class ProgressReporter {
public:
  /// Seconds on a monotonic clock.
  using Clock = std::function<double()>;

  /// `mode` must be resolved (not Auto). `out` must outlive the reporter.
  ProgressReporter(ProgressMode mode, std::FILE *out, int64_t totalSteps,
                   Clock clock = steadySeconds);
  ~ProgressReporter() { finish(); }

  /// Reports a finished step (steps come in order).
  void step(const StepProgress &s);
  /// Ends a bar's line; does nothing otherwise or when called again.
  void finish();

  static double steadySeconds();

private:
  void emit(const ProgressFields &fields);

  ProgressMode mode_;
  std::FILE *out_;
  int64_t totalSteps_;
  Clock clock_;
  bool drawn_ = false;            // a bar is on screen, not yet ended by a newline
  double lastEmit_ = 0;           // clock time of the last report
  bool emitted_ = false;
  double windowMs_ = 0;           // steps since the last report: time and samples
  int64_t windowSamples_ = 0;
  int64_t firstStep_ = -1;        // the first step reported (1 unless the run resumed)
  double firstMs_ = 0;            // its time: the ETA until a second step ran
  double firstDone_ = 0;          // clock time it ended; the ETA's mean starts there
  int64_t afterFirstSteps_ = 0;
};

} // namespace plait::rt
