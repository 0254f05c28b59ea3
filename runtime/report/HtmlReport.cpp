// plait-report's page: the compiler's report and a plait-run step log as one self-contained
// HTML file (inline CSS and SVG, no network).
#include "runtime/report/HtmlReport.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "runtime/report/Svg.h"

namespace plait::report {
namespace {

using json = nlohmann::json;

// The report's keys are read leniently past checkReport: an absent or mistyped optional
// key shows as 0 or "", never as an exception.
const json &field(const json &j, const char *key) {
  static const json absent;
  if (!j.is_object())
    return absent;
  auto it = j.find(key);
  return it == j.end() ? absent : *it;
}
double number(const json &j, const char *key) {
  const json &v = field(j, key);
  return v.is_number() ? v.get<double>() : 0;
}
std::string text(const json &j, const char *key) {
  const json &v = field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}
bool hasNumber(const json &j, const char *key) { return field(j, key).is_number(); }

std::string esc(std::string_view s) { return htmlEscape(s); }
std::string bytesText(double b) { return esc(formatBytes(b)); }
/// A table cell with bytes for people and the exact count on hover.
std::string bytesCell(double b) {
  return fmt::format("<td class=\"num\" title=\"{} bytes\">{}</td>", formatNumber(b), bytesText(b));
}
std::string numberCell(double v) {
  return fmt::format("<td class=\"num\">{}</td>", formatNumber(v));
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *const kCommKinds[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast"};

bool logHas(const std::vector<json> &log, const char *key) {
  return std::any_of(log.begin(), log.end(), [&](const json &r) { return r.contains(key); });
}
const json &units(const json &report) { return field(report, "units"); }
const json &candidates(const json &report) { return field(report, "candidates"); }
bool nonEmptyArray(const json &j) { return j.is_array() && !j.empty(); }

std::string stat(const std::string &name, const std::string &value, const std::string &note = "") {
  return fmt::format(
      "<div class=\"stat\"><div class=\"k\">{}</div><div class=\"v\">{}</div>{}</div>", esc(name),
      value, note.empty() ? "" : "<div class=\"n\">" + note + "</div>");
}

std::string headline(const json &report, const std::vector<json> &log) {
  const json &m = field(report, "memory");
  int world = (int)number(report, "world_size");
  std::string out = "<section id=\"headline\" class=\"headline\">";
  out += stat("model", "<code>" + esc(text(report, "model")) + "</code>");
  out +=
      stat("world size", fmt::format("{}", world), world > 1 ? "ranks, one SPMD plan" : "one rank");
  if (field(report, "training").is_boolean() && field(report, "training").get<bool>())
    out += stat("step", "training",
                fmt::format("{} tensors updated per step",
                            formatNumber(number(report, "optimizer_updates"))));
  else
    out += stat("step", "inference");
  if (hasNumber(report, "global_batch"))
    out += stat("global batch", formatNumber(number(report, "global_batch")),
                fmt::format("{} per rank", formatNumber(number(report, "batch_per_rank"))));
  out += stat("peak per rank", bytesText(number(m, "total")),
              fmt::format("arena {} + workspace {}", bytesText(number(m, "peak")),
                          bytesText(number(m, "workspace"))));
  out += stat("kernels per step", formatNumber(number(report, "kernels_per_step")));
  if (world > 1)
    out += stat("sent per rank per step", bytesText(number(field(report, "comm"), "total")),
                "by the collectives");
  if (!log.empty()) {
    std::vector<double> ms;
    for (const json &r : log)
      if (hasNumber(r, "step_ms"))
        ms.push_back(number(r, "step_ms"));
    out += stat("loss",
                fmt::format("{} &rarr; {}", formatNumber(number(log.front(), "loss")),
                            formatNumber(number(log.back(), "loss"))),
                fmt::format("over {} logged steps", log.size()));
    if (!ms.empty())
      out += stat("step time",
                  fmt::format("{} ms", formatNumber(std::round(median(ms) * 1000) / 1000)),
                  "median of the log");
  }
  return out + "</section>";
}

/// Live arena bytes of each buffer kind at each program position, from memory_timeline.
struct Timeline {
  std::vector<std::string> kinds;
  std::vector<double> positions;
  std::vector<std::vector<double>> bytes; // [kind][position]
  double peak = 0, peakAt = 0, end = 0;
};

Timeline liveBytes(const json &entries) {
  // Model state first (always live), then the step's transient buffers.
  std::vector<std::string> kinds{"param", "state", "constant", "hyper", "input", "activation"};
  int64_t end = 0;
  for (const json &e : entries) {
    const json &live = field(e, "live");
    if (live.is_array() && live.size() == 2 && live[1].is_number_integer())
      end = std::max<int64_t>(end, live[1].get<int64_t>());
  }
  end = std::min<int64_t>(end, 10'000'000); // a corrupt entry must not allocate the world
  std::map<std::string, std::vector<double>> delta;
  for (const json &e : entries) {
    const json &live = field(e, "live");
    if (field(e, "in_place_of").is_number() || !live.is_array() || live.size() != 2 ||
        !live[0].is_number_integer() || !live[1].is_number_integer())
      continue; // an in-place result shares its target's bytes
    int64_t a = std::clamp<int64_t>(live[0].get<int64_t>(), 0, end);
    int64_t b = std::clamp<int64_t>(live[1].get<int64_t>(), a, end);
    std::string kind = text(e, "kind");
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      kinds.push_back(kind);
    auto &d = delta[kind];
    d.resize(end + 2, 0);
    d[a] += number(e, "size");
    d[b + 1] -= number(e, "size");
  }
  Timeline t;
  t.end = (double)end;
  std::vector<std::vector<double>> full;
  for (const std::string &kind : kinds) {
    auto it = delta.find(kind);
    if (it == delta.end())
      continue;
    std::vector<double> live(end + 1);
    double running = 0;
    for (int64_t p = 0; p <= end; ++p)
      live[p] = running += it->second[p];
    t.kinds.push_back(kind);
    full.push_back(std::move(live));
  }
  // At most ~2000 columns: each bucket of positions keeps its fullest one, so peaks survive.
  int64_t bucket = std::max<int64_t>(1, (end + 1 + 1999) / 2000);
  t.bytes.resize(full.size());
  for (int64_t start = 0; start <= end; start += bucket) {
    int64_t best = start;
    double bestSum = -1;
    for (int64_t p = start; p <= std::min(end, start + bucket - 1); ++p) {
      double sum = 0;
      for (const auto &k : full)
        sum += k[p];
      if (sum > bestSum) {
        bestSum = sum;
        best = p;
      }
    }
    t.positions.push_back((double)best);
    for (size_t k = 0; k < full.size(); ++k)
      t.bytes[k].push_back(full[k][best]);
    if (bestSum > t.peak) {
      t.peak = bestSum;
      t.peakAt = (double)best;
    }
  }
  return t;
}

std::string memorySection(const json &report, const std::vector<json> &log,
                          const ReportSources &sources) {
  const json &m = field(report, "memory");
  int world = (int)number(report, "world_size");
  std::string out = "<section id=\"memory\"><h2>Memory per rank</h2>";
  bool ranksDiffer = false;
  for (const auto *v : {&sources.arenaBytes, &sources.workspaceBytes})
    ranksDiffer |= std::adjacent_find(v->begin(), v->end(), std::not_equal_to<>()) != v->end();
  if (world > 1)
    out += ranksDiffer
               ? "<p>The plan's ranks have different arena sizes (see the table below); the "
                 "timeline is rank 0's.</p>"
               : fmt::format("<p>One SPMD plan: all {} ranks run the same program over shards of "
                             "the same size, so this timeline (rank 0's) is every rank's.</p>",
                             world);
  const json &entries = field(report, "memory_timeline");
  if (nonEmptyArray(entries)) {
    Timeline t = liveBytes(entries);
    LineChart chart;
    chart.id = "chart-memory-timeline";
    chart.title = "Live arena bytes per rank at each program position, by kind";
    chart.xLabel = "program position (0 = step start; one per op)";
    chart.yLabel = "live bytes per rank";
    chart.yBytes = true;
    chart.integerX = true;
    chart.stacked = true;
    for (size_t k = 0; k < t.kinds.size(); ++k) {
      Series s{t.kinds[k], {}};
      for (size_t p = 0; p < t.positions.size(); ++p)
        s.points.emplace_back(t.positions[p], t.bytes[k][p]);
      chart.series.push_back(std::move(s));
    }
    chart.refLines.push_back({number(m, "peak"), "arena " + formatBytes(number(m, "peak"))});
    if (hasNumber(report, "mem_limit") && number(report, "mem_limit") > 0)
      chart.refLines.push_back(
          {number(report, "mem_limit"),
           "--mem-limit " + formatBytes(number(report, "mem_limit")) + " (arena + workspace)"});
    out += renderLineChart(chart);
    out += fmt::format("<p class=\"caption\">Most bytes live at once: {} at position {} of {} "
                       "(the liveness lower bound); the planned arena holds them in {} "
                       "(\"activation\" includes gradients). Kernel workspace ({}) is beside "
                       "the arena.</p>",
                       bytesText(t.peak), formatNumber(t.peakAt), formatNumber(t.end),
                       bytesText(number(m, "peak")), bytesText(number(m, "workspace")));
  } else {
    out += "<p class=\"none\">This report has no memory timeline.</p>";
  }
  out += "<table><thead><tr><th>per rank</th><th>bytes</th></tr></thead><tbody>";
  const std::pair<const char *, const char *> rows[] = {
      {"params", "parameters"},
      {"grads", "gradients kept for the optimizer step"},
      {"optimizer", "optimizer state"},
      {"constants", "constants"},
      {"inputs", "batch inputs"},
      {"activations", "activations and gradients (arena less model state)"},
      {"peak", "arena (planned offsets)"},
      {"lower_bound", "liveness lower bound"},
      {"high_water", "arena high water (bytes ever written)"},
      {"workspace", "kernel workspace"},
      {"total", "total: arena + workspace"}};
  for (auto [key, name] : rows)
    if (hasNumber(m, key))
      out += fmt::format("<tr><td>{}</td>{}</tr>", esc(name), bytesCell(number(m, key)));
  if (!log.empty() && hasNumber(log.back(), "arena_high_water"))
    out += fmt::format("<tr><td>measured arena high water (last logged step)</td>{}</tr>",
                       bytesCell(number(log.back(), "arena_high_water")));
  out += "</tbody></table>";
  if (!sources.arenaBytes.empty()) {
    out += "<h3>Per rank, from the plan's header</h3><table><thead><tr><th>rank</th>"
           "<th>arena</th><th>workspace</th><th>high water</th></tr></thead><tbody>";
    for (size_t r = 0; r < sources.arenaBytes.size(); ++r)
      out += fmt::format(
          "<tr><td class=\"num\">{}</td>{}{}{}</tr>", r, bytesCell((double)sources.arenaBytes[r]),
          bytesCell(r < sources.workspaceBytes.size() ? (double)sources.workspaceBytes[r] : 0),
          r < sources.peakBytes.size() ? bytesCell((double)sources.peakBytes[r])
                                       : std::string("<td>&mdash;</td>"));
    out += "</tbody></table>";
  }
  return out + "</section>";
}

std::string placementSection(const json &report) {
  std::string out = "<section id=\"placement\"><h2>Placement per unit</h2>";
  const json &list = units(report);
  if (!nonEmptyArray(list))
    return out + "<p class=\"none\">This plan has no sharding units (an inference plan: "
                 "nothing is placed).</p></section>";
  out += "<p>A unit is a group of parameters placed, sharded and gathered together. Bytes "
         "are what each rank keeps at rest.</p>";
  BarChart chart;
  chart.id = "chart-unit-bytes";
  chart.title = "Model state each rank keeps per unit: parameters, gradients, optimizer state";
  chart.xLabel = "unit";
  chart.yLabel = "bytes per rank";
  chart.yBytes = true;
  chart.seriesNames = {"params", "grads", "optimizer state"};
  chart.values.resize(3);
  std::string rows;
  for (const json &u : list) {
    std::string name = text(u, "name"), placement = text(u, "placement");
    chart.categories.push_back(name + " (" + placement + ")");
    chart.values[0].push_back(number(u, "params_bytes"));
    chart.values[1].push_back(number(u, "grads_bytes"));
    chart.values[2].push_back(number(u, "optimizer_bytes"));
    std::string params;
    const json &names = field(u, "params");
    if (names.is_array()) {
      size_t shown = 0;
      for (const json &p : names) {
        if (shown == 4) {
          params += fmt::format(" and {} more", names.size() - shown);
          break;
        }
        if (p.is_string())
          params += (shown++ ? ", " : "") + ("<code>" + esc(p.get<std::string>()) + "</code>");
      }
    }
    rows += fmt::format("<tr><td><code>{}</code></td><td><span class=\"placement\">{}</span></td>"
                        "{}{}{}{}{}<td>{}</td></tr>",
                        esc(name), esc(placement), numberCell(number(u, "numel")),
                        bytesCell(number(u, "bytes")), bytesCell(number(u, "params_bytes")),
                        bytesCell(number(u, "grads_bytes")),
                        bytesCell(number(u, "optimizer_bytes")), params);
  }
  out += renderBarChart(chart);
  out += "<table><thead><tr><th>unit</th><th>placement</th><th>elements</th><th>unit bytes</th>"
         "<th>params / rank</th><th>grads / rank</th><th>optimizer / rank</th><th>parameters</th>"
         "</tr></thead><tbody>" +
         rows + "</tbody></table>";
  return out + "</section>";
}

std::string commSection(const json &report, const std::vector<json> &log) {
  std::string out = "<section id=\"communication\"><h2>Communication per step</h2>";
  if (number(report, "world_size") <= 1)
    return out + "<p class=\"none\">One rank: the plan runs no collectives.</p></section>";
  const json &comm = field(report, "comm");
  const json &counts = field(report, "collectives_per_step");
  out += "<p>Bytes each rank sends per step, under the ring model the runtime's counters use "
         "(every rank sends the same in an SPMD plan).</p>";
  BarChart planned;
  planned.id = "chart-comm-planned";
  planned.title = "Planned bytes sent per rank per step, by collective";
  planned.xLabel = "collective";
  planned.yLabel = "bytes sent per rank per step";
  planned.yBytes = true;
  planned.seriesNames = {"planned"};
  planned.values.resize(1);
  std::string rows;
  for (const char *kind : kCommKinds) {
    planned.categories.push_back(kind);
    planned.values[0].push_back(number(comm, kind));
    rows += fmt::format("<tr><td>{}</td>{}{}</tr>", kind, numberCell(number(counts, kind)),
                        bytesCell(number(comm, kind)));
  }
  rows += fmt::format("<tr class=\"total\"><td>total</td><td></td>{}</tr>",
                      bytesCell(number(comm, "total")));
  out += renderBarChart(planned);
  out += "<table><thead><tr><th>collective</th><th>per step</th><th>bytes sent per rank</th>"
         "</tr></thead><tbody>" +
         rows + "</tbody></table>";
  if (!logHas(log, "comm_bytes"))
    return out + "</section>";
  BarChart measured;
  measured.id = "chart-comm-measured";
  measured.title = "Measured bytes sent per rank at each logged step, by collective";
  measured.xLabel = "step";
  measured.yLabel = "bytes sent per rank";
  measured.yBytes = true;
  measured.values.resize(std::size(kCommKinds));
  for (const char *kind : kCommKinds)
    measured.seriesNames.push_back(kind);
  std::vector<std::string> differ;
  for (const json &r : log) {
    const json &c = field(r, "comm_bytes");
    measured.categories.push_back(formatNumber(number(r, "step")));
    for (size_t k = 0; k < std::size(kCommKinds); ++k)
      measured.values[k].push_back(number(c, kCommKinds[k]));
    if (number(c, "total") != number(comm, "total"))
      differ.push_back(formatNumber(number(r, "step")));
  }
  measured.refLines.push_back(
      {number(comm, "total"), "planned " + formatBytes(number(comm, "total"))});
  out += "<h3>Measured (from the log)</h3>" + renderBarChart(measured);
  if (differ.empty())
    out += "<p class=\"caption ok\">Every logged step sent exactly the planned bytes.</p>";
  else {
    size_t total = differ.size();
    if (total > 10)
      differ.resize(10);
    out += fmt::format("<p class=\"caption warn\">{} of {} logged steps sent other than the "
                       "planned {} (steps {}{}).</p>",
                       total, log.size(), bytesText(number(comm, "total")),
                       esc(fmt::format("{}", fmt::join(differ, ", "))), total > 10 ? ", ..." : "");
  }
  return out + "</section>";
}

std::string candidateLabel(const json &c, size_t i) {
  std::string recompute = text(c, "recompute");
  if (recompute == "auto")
    recompute += fmt::format(" ({} seg.)", formatNumber(number(c, "recomputed_segments")));
  return fmt::format("{}. {} / {}", i + 1, text(c, "strategy"), recompute);
}

std::string candidatesSection(const json &report) {
  std::string out = "<section id=\"candidates\"><h2>The planner's candidates</h2>";
  const json &list = candidates(report);
  if (!nonEmptyArray(list))
    return out + "<p class=\"none\">The planner compared no candidates for this plan (only "
                 "plait-compile --strategy auto and --mem-limit search over strategies and "
                 "recomputation).</p></section>";
  double limit = number(report, "mem_limit");
  bool predicted = false;
  for (const json &c : list)
    predicted |= field(c, "predicted_step_ms").is_number();
  const json &search = field(report, "auto");
  if (search.is_object()) {
    out += fmt::format(
        "<p>The choices <code>--strategy auto</code> ranked on {}, fastest predicted step "
        "first, against the limit of {} per rank (arena + workspace). A peak marked &ge; is "
        "the liveness lower bound of a choice that was only screened; the kept one was "
        "compiled exactly. {}</p>",
        esc(text(search, "cluster")), bytesText(limit), esc(text(search, "reason")));
  } else {
    out += fmt::format("<p>The plans the --mem-limit search compiled, in the order tried, "
                       "against the limit of {} per rank (arena + workspace); it keeps the "
                       "first that fits. {}</p>",
                       bytesText(limit),
                       predicted ? "Step times are the cost model's prediction on the cluster "
                                   "given with --cluster."
                                 : "The plan was compiled without --cluster, so no candidate "
                                   "has a predicted step time.");
  }
  BarChart chart;
  chart.id = "chart-candidates";
  chart.title = search.is_object() ? "Per-rank peak of each choice --strategy auto ranked"
                                   : "Per-rank peak of each candidate the planner compiled";
  chart.xLabel = "candidate (strategy / recompute)";
  chart.yLabel = "peak bytes per rank";
  chart.yBytes = true;
  chart.seriesNames = {"fits", "over the limit"};
  chart.values.resize(2);
  std::string rows;
  for (size_t i = 0; i < list.size(); ++i) {
    const json &c = list[i];
    bool fits = field(c, "fits").is_boolean() && field(c, "fits").get<bool>();
    bool chosen = field(c, "chosen").is_boolean() && field(c, "chosen").get<bool>();
    chart.categories.push_back(candidateLabel(c, i));
    chart.values[0].push_back(fits ? number(c, "peak") : 0);
    chart.values[1].push_back(fits ? 0 : number(c, "peak"));
    const json &ms = field(c, "predicted_step_ms");
    bool lowerBound = field(c, "peak_exact").is_boolean() && !field(c, "peak_exact").get<bool>();
    std::string status = field(c, "status").is_string() ? text(c, "status")
                                                         : std::string(fits ? "fits" : "over");
    rows += fmt::format(
        "<tr{}><td class=\"num\">{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td><td>{}</td></tr>",
        chosen ? " class=\"chosen\"" : "", i + 1, esc(text(c, "strategy")),
        esc(text(c, "recompute")), numberCell(number(c, "recomputed_segments")),
        lowerBound ? "<td class=\"num\">&ge; " + esc(formatBytes(number(c, "peak"))) + "</td>"
                   : bytesCell(number(c, "peak")),
        esc(status),
        ms.is_number()         ? formatNumber(ms.get<double>()) + " ms"
        : search.is_object()   ? std::string("&mdash; (not compiled: params and optimizer "
                                             "state alone are over)")
                               : std::string("&mdash; (no --cluster)"));
  }
  if (limit > 0)
    chart.refLines.push_back({limit, "--mem-limit " + formatBytes(limit)});
  out += renderBarChart(chart);
  out += "<table><thead><tr><th>#</th><th>strategy</th><th>recompute</th><th>segments "
         "recomputed</th><th>peak per rank</th><th></th><th>predicted step</th></tr></thead>"
         "<tbody>" +
         rows +
         "</tbody></table><p class=\"caption\">The highlighted row is the "
         "plan that was kept.</p>";
  return out + "</section>";
}

/// The gradients' global norm at each step (logged by plans compiled with --clip-grad-norm or
/// --log-grad-norm), with the clip as a reference line where the plan clips.
std::string gradNormChart(const json &report, const std::vector<json> &log) {
  LineChart chart;
  chart.id = "chart-grad-norm";
  chart.title = "Global gradient norm at each step, before clipping";
  chart.xLabel = "step";
  chart.yLabel = "gradient norm";
  chart.integerX = true;
  Series series{"grad_norm", {}};
  for (const json &r : log)
    if (hasNumber(r, "grad_norm"))
      series.points.emplace_back(number(r, "step"), number(r, "grad_norm"));
  chart.series.push_back(std::move(series));
  const json &train = field(report, "train");
  if (double clip = number(train, "clip_grad_norm"); clip > 0)
    chart.refLines.push_back({clip, "clip " + formatNumber(clip)});
  return renderLineChart(chart);
}

std::string trainingSection(const json &report, const std::vector<json> &log,
                            const ReportSources &sources) {
  std::string out = "<section id=\"training\"><h2>Training</h2>";
  if (log.empty())
    return out + "<p class=\"none\">No step log: pass <code>--log FILE.jsonl</code> (written "
                 "by <code>plait-run --log-jsonl</code>) to see the loss curve and step "
                 "times.</p></section>";
  out += fmt::format("<p>{} steps from <code>{}</code> (rank 0).</p>", log.size(),
                     esc(sources.logPath));
  LineChart loss;
  loss.id = "chart-loss";
  loss.title = "Training loss at each step";
  loss.xLabel = "step";
  loss.yLabel = "loss";
  loss.yFromZero = false;
  loss.integerX = true;
  Series series{"loss", {}};
  for (const json &r : log)
    series.points.emplace_back(number(r, "step"), number(r, "loss"));
  loss.series.push_back(std::move(series));
  out += renderLineChart(loss);
  if (logHas(log, "grad_norm"))
    out += gradNormChart(report, log);
  if (!logHas(log, "step_ms"))
    return out + "</section>";
  LineChart time;
  time.id = "chart-step-time";
  time.title = "Wall time of each step";
  time.xLabel = "step";
  time.yLabel = "step time (ms)";
  time.integerX = true;
  Series ms{"step time", {}};
  std::vector<double> all;
  for (const json &r : log)
    if (hasNumber(r, "step_ms")) {
      ms.points.emplace_back(number(r, "step"), number(r, "step_ms"));
      all.push_back(number(r, "step_ms"));
    }
  time.series.push_back(std::move(ms));
  double med = median(all);
  time.refLines.push_back({med, "median " + formatNumber(std::round(med * 1000) / 1000) + " ms"});
  return out + renderLineChart(time) + "</section>";
}

std::string optimizationsSection(const json &report) {
  const json &o = field(report, "optimizations");
  if (!o.is_object() || o.empty())
    return "";
  std::string out = "<section id=\"optimizations\"><h2>What the compiler did</h2><dl>";
  for (auto &[name, line] : o.items())
    if (line.is_string())
      out += fmt::format("<dt>{}</dt><dd>{}</dd>", esc(name), esc(line.get<std::string>()));
  return out + "</dl></section>";
}

constexpr const char *kStyle = R"css(
:root { --ink:#1f2933; --muted:#52606d; --line:#d9e2ec; --bg:#f5f7fa; --card:#fff; --accent:#0072B2; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header h1 { margin: 0 0 2px; font-size: 22px; }
header p { margin: 0 0 16px; color: var(--muted); }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 0 0 18px; max-width: 1040px; }
h2 { margin: 0 0 8px; font-size: 17px; } h3 { font-size: 14px; margin: 16px 0 6px; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; background: #eef2f7; padding: 1px 4px; border-radius: 3px; }
.headline { display: flex; flex-wrap: wrap; gap: 10px; }
.stat { min-width: 150px; padding: 8px 12px; border-left: 3px solid var(--accent); background: #f8fafc; }
.stat .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
.stat .v { font-size: 18px; font-weight: 600; word-break: break-all; } .stat .n { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; } th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td, tr.chosen td { font-weight: 600; } tr.chosen { background: #e6f4ea; }
.placement { display: inline-block; padding: 0 6px; border-radius: 9px; background: #e3f0fb; color: #034e7b; font-size: 12px; }
.none { color: var(--muted); font-style: italic; } .caption { color: var(--muted); font-size: 12px; }
.ok { color: #1e6b3a; } .warn { color: #a0410d; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0; } dt { font-weight: 600; } dd { margin: 0; }
svg.plait-chart { display: block; max-width: 100%; height: auto; margin: 6px 0; font: 12px system-ui, sans-serif; }
svg .grid { stroke: #e4e7eb; } svg .axis { stroke: #7b8794; } svg .tick { fill: #3e4c59; font-size: 11px; }
svg .label { fill: #3e4c59; } svg .line { fill: none; stroke-width: 2; } svg .area { stroke: none; opacity: .85; }
svg .ref { stroke: #b42318; stroke-dasharray: 5 4; } svg .ref-label { fill: #b42318; font-size: 11px; }
)css";

// Proves a browser laid the charts out: counts the charts with a drawn mark of non-zero size.
constexpr const char *kScript = R"js(
(function () {
  var rendered = 0;
  document.querySelectorAll('svg.plait-chart').forEach(function (svg) {
    var box = svg.getBoundingClientRect(), marks = svg.querySelectorAll('.mark'), drawn = false;
    for (var i = 0; i < marks.length && !drawn; ++i) {
      var b = marks[i].getBBox();
      drawn = b.width > 0 || b.height > 0;
    }
    if (drawn && box.width > 0 && box.height > 0) {
      svg.setAttribute('data-rendered', 'true');
      ++rendered;
    }
  });
  document.body.setAttribute('data-charts-rendered', String(rendered));
})();
)js";

} // namespace

std::string checkReport(const json &report) {
  if (!report.is_object())
    return "not a plait report: expected a JSON object";
  for (const char *key : {"memory", "comm"})
    if (!field(report, key).is_object())
      return fmt::format("not a plait report: no \"{}\" object", key);
  for (const char *key : {"world_size", "kernels_per_step"})
    if (!hasNumber(report, key))
      return fmt::format("not a plait report: no number \"{}\"", key);
  if (!field(report, "model").is_string())
    return "not a plait report: no string \"model\"";
  for (const char *key : {"peak", "total"})
    if (!hasNumber(field(report, "memory"), key))
      return fmt::format("not a plait report: no number \"memory.{}\"", key);
  for (const char *key : {"units", "memory_timeline", "candidates"})
    if (report.contains(key) && !report[key].is_array())
      return fmt::format("malformed report: \"{}\" is not an array", key);
  return "";
}

std::string parseStepLog(std::string_view text, std::vector<json> &records) {
  size_t lineNumber = 0;
  while (!text.empty()) {
    ++lineNumber;
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded())
      return fmt::format("line {}: not JSON", lineNumber);
    if (!record.is_object() || !hasNumber(record, "step") || !hasNumber(record, "loss"))
      return fmt::format("line {}: expected an object with numbers \"step\" and \"loss\"",
                         lineNumber);
    records.push_back(std::move(record));
  }
  return "";
}

std::vector<std::string> chartIds(const json &report, const std::vector<json> &log) {
  std::vector<std::string> ids;
  if (nonEmptyArray(field(report, "memory_timeline")))
    ids.push_back("chart-memory-timeline");
  if (nonEmptyArray(units(report)))
    ids.push_back("chart-unit-bytes");
  if (number(report, "world_size") > 1) {
    ids.push_back("chart-comm-planned");
    if (logHas(log, "comm_bytes"))
      ids.push_back("chart-comm-measured");
  }
  if (nonEmptyArray(candidates(report)))
    ids.push_back("chart-candidates");
  if (!log.empty()) {
    ids.push_back("chart-loss");
    if (logHas(log, "grad_norm"))
      ids.push_back("chart-grad-norm");
    if (logHas(log, "step_ms"))
      ids.push_back("chart-step-time");
  }
  return ids;
}

std::string renderHtmlReport(const json &report, const std::vector<json> &log,
                             const ReportSources &sources) {
  std::vector<std::string> ids = chartIds(report, log);
  std::string from = "<code>" + esc(sources.reportPath) + "</code>";
  if (!sources.logPath.empty())
    from += " and <code>" + esc(sources.logPath) + "</code>";
  std::string page =
      fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<title>plait report: {}</title><style>{}</style></head>\n"
                  "<body data-charts=\"{}\" data-charts-rendered=\"0\">\n"
                  "<header><h1>plait report</h1><p>{} &middot; from {}</p></header>\n",
                  esc(text(report, "model")), kStyle, esc(fmt::format("{}", fmt::join(ids, " "))),
                  esc(text(report, "model")), from);
  page += headline(report, log) + "\n";
  page += memorySection(report, log, sources) + "\n";
  page += placementSection(report) + "\n";
  page += commSection(report, log) + "\n";
  page += candidatesSection(report) + "\n";
  page += trainingSection(report, log, sources) + "\n";
  page += optimizationsSection(report) + "\n";
  page += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return page;
}

} // namespace plait::report
