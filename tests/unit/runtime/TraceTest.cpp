// The Chrome trace (runtime/Trace.h) of an executor's steps: one event per instruction, waits,
// collectives on comm threads, every event inside its step, and the document's structure.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "PlanMaker.h"
#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/Trace.h"

namespace plait::testing {
namespace {

using fb::TensorKind;
using nlohmann::json;

/// World 1 (groups of one run locally):
///   0 all_reduce(x) -> a (mean)     2 add(a, x) -> z, waits 0
///   1 all_reduce(x) -> b (sum)      (1 completes at the end of the step)
/// so that the collectives overlap without nesting: 0 = [start 0, instr 2], 1 = [start 1, end].
rt::Plan overlappingCollectivesPlan() {
  PlanMaker m{1};
  uint32_t x = m.add("x", TensorKind::Input, {8});
  uint32_t a = m.add("a", TensorKind::Activation, {8});
  uint32_t b = m.add("b", TensorKind::Activation, {8});
  uint32_t z = m.add("z", TensorKind::Activation, {8});
  m.instr("all_reduce", {x}, {a}, groupAttrs({{0}}, {strAttr("reduce", "mean")}));
  m.instr("all_reduce", {x}, {b}, groupAttrs({{0}}, {strAttr("reduce", "sum")}));
  m.instr("add", {a, x}, {z}, {}, {0});
  m.desc().outputs = {z, b};
  rt::Plan plan;
  rt::Status s = rt::loadPlanFromBytes(plan::serializePlan(m.finish()), "t.plan", plan);
  EXPECT_TRUE(s.ok()) << s.message();
  return plan;
}

// Runs `steps` steps, the first `traced` of them into the returned document.
json traceSteps(const rt::Plan &plan, int steps, int traced) {
  std::unique_ptr<rt::Executor> exec;
  EXPECT_TRUE(rt::Executor::create(plan, {}, exec).ok());
  rt::StepTrace trace(plan, 0, traced);
  trace.setOrigin();
  std::vector<float> x(8, 1.0f);
  for (int step = 1; step <= steps; ++step) {
    bool on = step <= traced;
    exec->setTrace(on ? &trace : nullptr);
    if (on)
      trace.beginStep(step);
    EXPECT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {8}}).ok());
    EXPECT_TRUE(exec->run().ok());
    if (on)
      trace.endStep();
  }
  exec->setTrace(nullptr);
  std::string text = rt::chromeTraceJson({trace.eventsJson()}, R"({"plan":"t.plan"})");
  return json::parse(text);
}

TEST(Trace, DocumentHasTheChromeTraceShape) {
  rt::Plan plan = overlappingCollectivesPlan();
  json doc = traceSteps(plan, 1, 1);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  EXPECT_EQ(doc["otherData"]["plan"], "t.plan");
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::map<std::string, std::string> names; // "M" events: what -> name
  for (const json &e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 0);
    if (e["ph"] == "M" && e["args"].contains("name"))
      names[e["name"].get<std::string>() + " " + e["tid"].dump()] = e["args"]["name"];
  }
  EXPECT_EQ(names["process_name 0"], "rank 0");
  EXPECT_EQ(names["thread_name 0"], "compute");
  EXPECT_EQ(names["thread_name 1"], "comm");
  EXPECT_EQ(names["thread_name 2"], "comm 2"); // the second, overlapping collective
}

TEST(Trace, RecordsInstructionsWaitsAndCollectivesOfTracedStepsOnly) {
  rt::Plan plan = overlappingCollectivesPlan();
  json doc = traceSteps(plan, 3, 2);
  std::map<int, json> stepEvents;
  std::vector<json> events;
  for (const json &e : doc["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e;
    if (e["cat"] == "step")
      stepEvents[e["args"]["step"]] = e;
    else
      events.push_back(e);
  }
  ASSERT_EQ(stepEvents.size(), 2u) << "step 3 is not traced";
  EXPECT_EQ(stepEvents[1]["name"], "step 1");
  EXPECT_EQ(stepEvents[1]["tid"], 0);

  std::map<std::string, int> perStep; // "category name tid", counted over both steps
  for (const json &e : events) {
    int step = e["args"]["step"];
    ASSERT_TRUE(stepEvents.count(step)) << e;
    const json &s = stepEvents[step];
    double begin = e["ts"], end = begin + e["dur"].get<double>();
    double stepBegin = s["ts"], stepEnd = stepBegin + s["dur"].get<double>();
    EXPECT_GE(begin, stepBegin) << e;
    EXPECT_LE(end, stepEnd + 1e-6) << e;
    ++perStep[e["cat"].get<std::string>() + " " + e["name"].get<std::string>() + " " +
              e["tid"].dump()];
    if (e["cat"] == "compute") {
      int instr = e["args"]["instr"];
      EXPECT_EQ(e["args"]["source"], plan.instrs[size_t(instr)].name);
      EXPECT_EQ(e["name"], plan.kernels[plan.instrs[size_t(instr)].kernel]);
    }
    if (e["cat"] == "comm") {
      EXPECT_EQ(e["args"]["bytes"], 32) << e;
      EXPECT_EQ(e["args"]["group_size"], 1) << e;
      EXPECT_EQ(e["tid"], 1 + e["args"]["instr"].get<int>()) << "overlap: a thread each";
    }
    if (e["name"] == "wait") {
      EXPECT_EQ(e["args"]["instr"], 2);
      EXPECT_EQ(e["args"]["for"], json::array({0}));
    }
  }
  EXPECT_EQ(perStep, (std::map<std::string, int>{{"compute all_reduce 0", 4},
                                                 {"compute add 0", 2},
                                                 {"comm all_reduce 1", 2},
                                                 {"comm all_reduce 2", 2},
                                                 {"wait wait 0", 2},
                                                 {"wait wait (step end) 0", 2}}));
}

// A plan compiled with --cluster carries each instruction's predicted time: kernels and
// collectives show it next to their measured duration; the posting of a collective does not.
// A prediction that does not cover every instruction is left out.
TEST(Trace, EventsCarryThePlansPredictions) {
  rt::Plan plan = overlappingCollectivesPlan();
  plan.report = R"({"predicted": {"instructions_us": [1.5, 2.5, 0.25]}})";
  std::map<std::string, std::vector<double>> predicted; // "category name" -> values
  const json doc = traceSteps(plan, 1, 1);
  for (const json &e : doc["traceEvents"])
    if (e["ph"] == "X" && e["args"].contains("predicted_us"))
      predicted[e["cat"].get<std::string>() + " " + e["name"].get<std::string>()].push_back(
          e["args"]["predicted_us"]);
  for (auto &[key, values] : predicted)
    std::sort(values.begin(), values.end());
  EXPECT_EQ(predicted, (std::map<std::string, std::vector<double>>{
                           {"comm all_reduce", {1.5, 2.5}}, {"compute add", {0.25}}}));

  for (const char *report : {R"({"predicted": {"instructions_us": [1.5, 2.5]}})",
                             R"({"predicted": {"instructions_us": [1.5, "x", 2]}})",
                             R"({"predicted": 3})", "not json"}) {
    plan.report = report;
    const json other = traceSteps(plan, 1, 1);
    for (const json &e : other["traceEvents"])
      EXPECT_FALSE(e.contains("args") && e["args"].contains("predicted_us")) << report << e;
  }
}

// The traced steps never grow the event buffer (no allocation inside a step).
TEST(Trace, BufferIsSizedForTheTracedSteps) {
  rt::Plan plan = overlappingCollectivesPlan();
  std::unique_ptr<rt::Executor> exec;
  ASSERT_TRUE(rt::Executor::create(plan, {}, exec).ok());
  rt::StepTrace trace(plan, 0, 2);
  size_t capacity = trace.eventCapacity();
  // 3 instructions + 1 wait + 2 collectives + 4 per step (step, batch, step-end wait, updates).
  EXPECT_EQ(capacity, 2u * 10u);
  std::vector<float> x(8, 1.0f);
  exec->setTrace(&trace);
  for (int step = 1; step <= 2; ++step) {
    trace.beginStep(step);
    ASSERT_TRUE(exec->setInput(0, {x.data(), rt::DType::F32, {8}}).ok());
    ASSERT_TRUE(exec->run().ok());
    trace.endStep();
  }
  EXPECT_EQ(trace.eventCount(), 2u * 8u);
  EXPECT_EQ(trace.eventCapacity(), capacity);
}

} // namespace
} // namespace plait::testing
