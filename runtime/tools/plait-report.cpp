// plait-report: the compiler's report (from a plan, or plait-compile --report JSON) and an
// optional plait-run --log-jsonl step log as one self-contained HTML page.
// Exit codes: 0 ok, 1 user error ("plait-report: FILE: what is wrong", one line), 2 internal.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "codegen/schema/plan_generated.h"
#include "runtime/PlanLoader.h"
#include "runtime/io/TensorFile.h"
#include "runtime/report/HtmlReport.h"
#include "runtime/tools/ToolExit.h"

namespace {

using plait::tools::exitCode;
using plait::tools::kExitInternalError;
using plait::tools::kExitUserError;

constexpr const char *kTool = "plait-report";
using plait::tools::parseArgs;

int fail(int code, const std::string &message) {
  return plait::tools::fail(kTool, code, message);
}

/// The file's bytes, or an error message naming it.
std::string readFile(const std::string &path, std::string &out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return fmt::format("{}: is a directory", path);
  plait::rt::Status status = plait::rt::readFileBytes(path, out);
  return status.ok() ? "" : status.message();
}

/// The report from a plan (its embedded report, after the loader's checks) or from a
/// REPORT.json; empty error on success.
std::string loadReport(const std::string &path, nlohmann::json &report,
                       plait::report::ReportSources &sources) {
  std::string bytes;
  if (std::string error = readFile(path, bytes); !error.empty())
    return error;
  std::string reportText = bytes;
  if (bytes.size() >= 8 && plait::fb::PlanBufferHasIdentifier(bytes.data())) {
    plait::rt::Plan plan; // read again by the loader, with all its checks
    plait::rt::Status status = plait::rt::loadPlan(path, plan);
    if (!status.ok())
      return status.message();
    if (plan.report.empty())
      return fmt::format("{}: the plan carries no report (compile it again)", path);
    reportText = plan.report;
    sources.arenaBytes = plan.arenaBytes;
    sources.workspaceBytes = plan.workspaceBytes;
    sources.peakBytes = plan.peakBytes;
  }
  report = nlohmann::json::parse(reportText, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded())
    return sources.arenaBytes.empty()
               ? fmt::format("{}: neither a plait plan nor a JSON report", path)
               : fmt::format("{}: the plan's report is not JSON", path);
  if (std::string error = plait::report::checkReport(report); !error.empty())
    return fmt::format("{}: {}", path, error);
  return "";
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"plait-report: the compiler's report and a training log as one HTML page"};
  std::string input, logPath, outPath;
  app.add_option("input", input, "a plan (.plan) or plait-compile --report JSON")->required();
  app.add_option("--log", logPath, "a plait-run --log-jsonl step log");
  app.add_option("-o,--output", outPath, "the HTML page to write")->required();
  if (auto rc = parseArgs(kTool, app, argc, argv))
    return *rc;

  try {
    nlohmann::json report;
    plait::report::ReportSources sources;
    sources.reportPath = input;
    if (std::string error = loadReport(input, report, sources); !error.empty())
      return fail(kExitUserError, error);
    std::vector<nlohmann::json> log;
    if (!logPath.empty()) {
      sources.logPath = logPath;
      std::string text;
      if (std::string error = readFile(logPath, text); !error.empty())
        return fail(kExitUserError, error);
      if (std::string error = plait::report::parseStepLog(text, log); !error.empty())
        return fail(kExitUserError, fmt::format("{}: {}", logPath, error));
    }
    std::string page = plait::report::renderHtmlReport(report, log, sources);
    std::ofstream out(outPath, std::ios::binary | std::ios::trunc);
    if (!out)
      return fail(kExitUserError, fmt::format("{}: cannot open for writing", outPath));
    out << page;
    if (!out.flush())
      return fail(kExitUserError, fmt::format("{}: write failed", outPath));
    return 0;
  } catch (const std::exception &e) {
    return fail(kExitInternalError, fmt::format("internal error: {}", e.what()));
  }
}
