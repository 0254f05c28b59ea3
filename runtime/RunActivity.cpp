// RunActivity.h: a signal handler that names what the rank was doing; it only reads plain
// values set before and during the run and writes with write(2), so it is async-signal-safe.
#include "runtime/RunActivity.h"

#include <unistd.h>

#include <csignal>
#include <cstring>

#include "runtime/Plan.h"

namespace plait::rt::activity {

namespace {

const Plan *gPlan = nullptr;
uint32_t gRank = 0;
volatile sig_atomic_t gStepLow = 0; // steps beyond 2^31 print modulo; messages only
volatile sig_atomic_t gWaiting = -1;

// Appends text to a fixed buffer, never past its end.
struct Line {
  char text[1024];
  size_t size = 0;
  void add(const char *s) {
    for (; *s && size + 1 < sizeof text; ++s)
      text[size++] = *s;
  }
  void add(int64_t v) {
    char digits[24];
    int n = 0;
    bool negative = v < 0;
    uint64_t u = negative ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
    do {
      digits[n++] = char('0' + u % 10);
      u /= 10;
    } while (u);
    if (negative)
      add("-");
    while (n)
      if (size + 1 < sizeof text)
        text[size++] = digits[--n];
      else
        --n;
  }
};

void onTermination(int signal) {
  if (!gPlan) // not running a plan (any more): nothing to add to what was reported
    ::_exit(128 + signal);
  Line line;
  line.add("plait-run: ");
  line.add(gPlan->path.c_str());
  line.add(": ");
  line.add("rank ");
  line.add(int64_t(gRank));
  line.add(": stopped by the launcher");
  if (gStepLow > 0) {
    line.add(" in step ");
    line.add(int64_t(gStepLow));
  }
  int64_t waiting = gWaiting;
  if (waiting >= 0 && size_t(waiting) < gPlan->instrs.size()) {
    const PlanInstr &in = gPlan->instrs[size_t(waiting)];
    line.add(" while waiting for ");
    line.add(gPlan->kernels[in.kernel].c_str());
    line.add(" '");
    line.add(in.name.c_str());
    line.add("' (instruction ");
    line.add(waiting);
    line.add(")");
  }
  line.add(": another rank failed or the job was cancelled\n");
  ssize_t ignored = ::write(STDERR_FILENO, line.text, line.size);
  (void)ignored;
  ::_exit(128 + signal);
}

} // namespace

void setRun(const Plan *plan, uint32_t rank) {
  gPlan = plan;
  gRank = rank;
}

void setStep(int64_t step) { gStepLow = sig_atomic_t(step & 0x7fffffff); }

void setWaiting(int64_t instruction) { gWaiting = sig_atomic_t(instruction); }

void installTerminationMessage() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = onTermination;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

} // namespace plait::rt::activity
