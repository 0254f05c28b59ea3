// plait-report's page: the compiler's report and a plait-run step log as one self-contained
// HTML file (inline CSS and SVG, no network).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace plait::report {

/// Where the page's data came from, for its header and the per-rank table.
struct ReportSources {
  std::string reportPath; // the plan or REPORT.json
  std::string logPath;    // empty without a step log
  /// From a plan file's header, one entry per rank (empty when the input was a report.json).
  std::vector<uint64_t> arenaBytes, workspaceBytes, peakBytes;
};

/// Empty when `report` is a plait-compile --report object with what the page needs, else
/// what is wrong, e.g. `not a plait report: no "memory" object`.
std::string checkReport(const nlohmann::json &report);

/// Reads a plait-run --log-jsonl file's text into `records`: one JSON object per non-blank
/// line, each with a numeric "step" and "loss". Empty on success, else what is wrong with
/// which line, e.g. `line 3: not JSON (...)`.
std::string parseStepLog(std::string_view text, std::vector<nlohmann::json> &records);

/// The ids of the charts renderHtmlReport draws for these inputs, in page order.
std::vector<std::string> chartIds(const nlohmann::json &report,
                                  const std::vector<nlohmann::json> &log);

/// The page. `report` must pass checkReport. Every chart is an <svg class="plait-chart">
/// with an id from chartIds; <body data-charts="..."> lists those ids, and an inline script
/// sets data-charts-rendered to how many of them a browser laid out with drawn marks.
std::string renderHtmlReport(const nlohmann::json &report, const std::vector<nlohmann::json> &log,
                             const ReportSources &sources);

} // namespace plait::report
