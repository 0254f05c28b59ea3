// plait-report's page: which sections and charts it draws, escaping, the checks on its inputs.
#include "runtime/report/HtmlReport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace plait::report {
namespace {

using json = nlohmann::json;

json smallReport() {
  return json::parse(R"({
    "model": "m<1>.onnx", "world_size": 2, "kernels_per_step": 7, "training": true,
    "optimizer_updates": 2,
    "memory": {"params": 64, "grads": 64, "optimizer": 128, "peak": 1024, "total": 1088,
               "workspace": 64, "lower_bound": 960},
    "comm": {"all_reduce": 128, "reduce_scatter": 0, "all_gather": 0, "broadcast": 0,
             "total": 128},
    "collectives_per_step": {"all_reduce": 1},
    "units": [{"name": "fc<&>", "placement": "ddp", "bytes": 64, "numel": 16,
               "params_bytes": 64, "grads_bytes": 64, "optimizer_bytes": 128,
               "params": ["fc.weight"]}],
    "memory_timeline": [
      {"name": "w", "kind": "param", "size": 64, "live": [0, 5]},
      {"name": "x", "kind": "activation", "size": 512, "live": [1, 3]},
      {"name": "y", "kind": "activation", "size": 512, "live": [2, 4], "in_place_of": 0}],
    "optimizations": {"memory_planning": "3 buffers <fine>"}
  })");
}

std::vector<json> smallLog() {
  std::vector<json> log;
  std::string error = parseStepLog(
      "{\"step\":1,\"loss\":2.5,\"step_ms\":3,\"comm_bytes\":{\"all_reduce\":128,\"total\":128}}\n"
      "\n"
      "{\"step\":2,\"loss\":2.25,\"step_ms\":2,\"comm_bytes\":{\"all_reduce\":128,\"total\":128}}"
      "\n",
      log);
  EXPECT_EQ(error, "");
  return log;
}

TEST(HtmlReport, EveryChartAndSection) {
  json report = smallReport();
  std::vector<json> log = smallLog();
  EXPECT_EQ(
      chartIds(report, log),
      (std::vector<std::string>{"chart-memory-timeline", "chart-unit-bytes", "chart-comm-planned",
                                "chart-comm-measured", "chart-loss", "chart-step-time"}));
  std::string page = renderHtmlReport(report, log, {"r.json", "log.jsonl", {}, {}, {}});
  for (const std::string &id : chartIds(report, log))
    EXPECT_NE(page.find("<svg id=\"" + id + "\" class=\"plait-chart\""), std::string::npos) << id;
  for (const char *section : {"headline", "memory", "placement", "communication", "candidates",
                              "training", "optimizations"})
    EXPECT_NE(page.find(std::string("<section id=\"") + section + "\""), std::string::npos)
        << section;
  EXPECT_NE(page.find("The planner compared no candidates"), std::string::npos);
  EXPECT_NE(page.find("Every logged step sent exactly the planned bytes"), std::string::npos);
  // The in-place result shares its target's bytes: the most live at once is 64 + 512.
  EXPECT_NE(page.find("Most bytes live at once: 576 B"), std::string::npos);
}

// A log with the gradients' norm (--clip-grad-norm, --log-grad-norm) adds its chart after the
// loss's, with the plan's clip as a reference line.
TEST(HtmlReport, GradNormChartWithTheClip) {
  json report = smallReport();
  std::vector<json> log = smallLog();
  log[0]["grad_norm"] = 1.75;
  log[1]["grad_norm"] = 0.5;
  report["train"] = {{"clip_grad_norm", 1.0}};
  std::vector<std::string> ids = chartIds(report, log);
  auto loss = std::find(ids.begin(), ids.end(), "chart-loss");
  ASSERT_NE(loss, ids.end());
  ASSERT_NE(loss + 1, ids.end());
  EXPECT_EQ(loss[1], "chart-grad-norm");
  std::string page = renderHtmlReport(report, log, {"r.json", "log.jsonl", {}, {}, {}});
  size_t chart = page.find("<svg id=\"chart-grad-norm\" class=\"plait-chart\"");
  ASSERT_NE(chart, std::string::npos);
  EXPECT_NE(page.find("clip 1", chart), std::string::npos);
  // Without the norm in the log, no chart.
  EXPECT_EQ(renderHtmlReport(report, smallLog(), {"r.json", "log.jsonl", {}, {}, {}})
                .find("chart-grad-norm"),
            std::string::npos);
}

TEST(HtmlReport, MeasuredCommThatDiffersFromThePlanIsFlagged) {
  std::vector<json> log = smallLog();
  log[1]["comm_bytes"]["total"] = 256;
  std::string page = renderHtmlReport(smallReport(), log, {"r.json", "log.jsonl", {}, {}, {}});
  EXPECT_NE(page.find("1 of 2 logged steps sent other than the planned 128 B (steps 2)"),
            std::string::npos);
}

TEST(HtmlReport, NamesFromTheModelAreEscaped) {
  std::string page = renderHtmlReport(smallReport(), {}, {"<r>.json", "", {}, {}, {}});
  EXPECT_EQ(page.find("m<1>"), std::string::npos);
  EXPECT_EQ(page.find("fc<&>"), std::string::npos);
  EXPECT_EQ(page.find("<r>.json"), std::string::npos);
  EXPECT_NE(page.find("m&lt;1&gt;.onnx"), std::string::npos);
  EXPECT_NE(page.find("fc&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(page.find("3 buffers &lt;fine&gt;"), std::string::npos);
  EXPECT_NE(page.find("No step log"), std::string::npos);
}

TEST(HtmlReport, CandidatesWithoutACostModel) {
  json report = smallReport();
  report["mem_limit"] = 2000;
  report["candidates"] = json::parse(R"([
    {"strategy": "ddp", "recompute": "none", "recomputed_segments": 0, "peak": 3000,
     "predicted_step_ms": null, "fits": false, "chosen": false},
    {"strategy": "ddp", "recompute": "auto", "recomputed_segments": 2, "peak": 1900,
     "predicted_step_ms": null, "fits": true, "chosen": true}])");
  std::vector<std::string> ids = chartIds(report, {});
  EXPECT_NE(std::find(ids.begin(), ids.end(), "chart-candidates"), ids.end());
  std::string page = renderHtmlReport(report, {}, {"r.json", "", {}, {}, {}});
  EXPECT_NE(page.find("compiled without --cluster"), std::string::npos);
  EXPECT_NE(page.find("<tr class=\"chosen\">"), std::string::npos);
  EXPECT_NE(page.find("2. ddp / auto (2 seg.)"), std::string::npos);
}

TEST(HtmlReport, OneRankInferenceHasNoCommOrUnits) {
  json report = smallReport();
  report["world_size"] = 1;
  report["units"] = json::array();
  report["training"] = false;
  EXPECT_EQ(chartIds(report, {}), (std::vector<std::string>{"chart-memory-timeline"}));
  std::string page = renderHtmlReport(report, {}, {"r.json", "", {}, {}, {}});
  EXPECT_NE(page.find("One rank: the plan runs no collectives"), std::string::npos);
  EXPECT_NE(page.find("no sharding units"), std::string::npos);
}

TEST(CheckReport, NamesWhatIsMissing) {
  EXPECT_EQ(checkReport(smallReport()), "");
  EXPECT_EQ(checkReport(json::array()), "not a plait report: expected a JSON object");
  json r = smallReport();
  r.erase("memory");
  EXPECT_EQ(checkReport(r), "not a plait report: no \"memory\" object");
  r = smallReport();
  r["memory"].erase("total");
  EXPECT_EQ(checkReport(r), "not a plait report: no number \"memory.total\"");
  r = smallReport();
  r["units"] = "x";
  EXPECT_EQ(checkReport(r), "malformed report: \"units\" is not an array");
}

TEST(ParseStepLog, NamesTheBadLine) {
  std::vector<json> log;
  EXPECT_EQ(parseStepLog("{\"step\":1,\"loss\":1}\n{oops\n", log), "line 2: not JSON");
  log.clear();
  EXPECT_EQ(parseStepLog("\n\n[1,2]\n", log),
            "line 3: expected an object with numbers \"step\" and \"loss\"");
  log.clear();
  EXPECT_EQ(parseStepLog("{\"step\":1,\"loss\":\"nan\"}", log),
            "line 1: expected an object with numbers \"step\" and \"loss\"");
  log.clear();
  EXPECT_EQ(parseStepLog("{\"step\":1,\"loss\":1}\r\n{\"step\":2,\"loss\":0.5}", log), "");
  EXPECT_EQ(log.size(), 2u);
}

} // namespace
} // namespace plait::report
