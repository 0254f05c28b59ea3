// The forward-run driver behind plait-run: binds inputs by name, runs once, writes outputs.
#include "runtime/RunPlan.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/Executor.h"
#include "runtime/PlanLoader.h"
#include "runtime/io/Npy.h"
#include "runtime/io/TensorFile.h"

namespace plait::rt {

namespace {

Status checkImplemented(const RunOptions &options) {
  if (options.nproc < 1)
    return Status::errorf("--nproc must be at least 1, got {}", options.nproc);
  if (options.nproc > 1)
    return Status::error("--nproc > 1 is not implemented yet (multi-rank execution)");
  if (!options.dataDir.empty())
    return Status::error("--data is not implemented yet (training plans)");
  if (options.steps < 1)
    return Status::errorf("--steps must be at least 1, got {}", options.steps);
  if (options.steps > 1)
    return Status::error("--steps > 1 needs a training plan; only forward plans run yet "
                         "(use --steps 1)");
  return {};
}

std::string inputList(const Plan &plan) {
  std::string names;
  for (uint32_t t : plan.inputs)
    names += (names.empty() ? "" : ", ") + printable(plan.tensors[t].name);
  return names.empty() ? "none" : names;
}

// Reads every --input file and copies it into the arena, checking names and coverage.
Status bindInputs(const RunOptions &options, const Plan &plan, Executor &exec) {
  std::map<std::string, size_t> inputIndex;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    inputIndex.emplace(plan.tensors[plan.inputs[i]].name, i);
  std::set<std::string> given;
  for (const auto &[name, file] : options.inputs) {
    auto it = inputIndex.find(name);
    if (it == inputIndex.end())
      return Status::errorf("--input {}: '{}' is not an input of {} (inputs: {})",
                            printable(name), printable(name), plan.path, inputList(plan));
    if (!given.insert(name).second)
      return Status::errorf("--input {}: given more than once", printable(name));
    HostTensor value;
    PLAIT_RETURN_IF_ERROR(readTensorFile(file, value));
    const PlanTensor &t = plan.tensors[plan.inputs[it->second]];
    if (value.dtype != t.dtype || value.shape != t.shape)
      return Status::errorf("--input {}: expected {} {}, got {} {} from {}", printable(name),
                            dtypeName(t.dtype), shapeString(t.shape), dtypeName(value.dtype),
                            shapeString(value.shape), file);
    PLAIT_RETURN_IF_ERROR(exec.setInput(it->second, value.view()));
  }
  for (uint32_t t : plan.inputs) {
    const PlanTensor &tensor = plan.tensors[t];
    if (!given.count(tensor.name))
      return Status::errorf("input '{}' ({} {}) not given; pass --input {}=FILE.npy",
                            printable(tensor.name), dtypeName(tensor.dtype),
                            shapeString(tensor.shape), printable(tensor.name));
  }
  return {};
}

// A scalar's value for the summary line, or "" for anything bigger.
std::string scalarText(const TensorView &v) {
  if (v.numel() != 1)
    return "";
  switch (v.dtype) {
  case DType::F32:
    return fmt::format("{:g}", *v.as<float>());
  case DType::F64:
    return fmt::format("{:g}", *v.as<double>());
  case DType::BF16:
    return fmt::format("{:g}", bf16ToFloat(*v.as<uint16_t>()));
  case DType::F16:
    return fmt::format("{:g}", f16ToFloat(*v.as<uint16_t>()));
  case DType::I64:
    return fmt::format("{}", *v.as<int64_t>());
  case DType::I32:
    return fmt::format("{}", *v.as<int32_t>());
  case DType::I1:
    return *v.as<uint8_t>() ? "true" : "false";
  }
  return "";
}

// numpy has no bfloat16: such outputs are widened to f32 for the .npy file.
Status writeOutput(const std::string &path, const TensorView &v) {
  if (v.dtype != DType::BF16)
    return writeNpy(path, v);
  std::vector<float> widened(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < widened.size(); ++i)
    widened[i] = bf16ToFloat(v.as<uint16_t>()[i]);
  return writeNpy(path, TensorView{widened.data(), DType::F32, v.shape});
}

Status writeOutputs(const RunOptions &options, const Executor &exec,
                    std::vector<std::string> &written) {
  std::error_code ec;
  std::filesystem::create_directories(options.outputDir, ec);
  if (ec || !std::filesystem::is_directory(options.outputDir))
    return Status::errorf("--output-dir {}: cannot create the directory{}", options.outputDir,
                          ec ? ": " + ec.message() : "");
  const Plan &plan = exec.plan();
  std::set<std::string> used;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    std::string file = outputFileName(plan.tensors[plan.outputs[i]].name, i);
    if (!used.insert(file).second) // two names that sanitise alike: keep both, by index
      file = outputFileName(fmt::format("{}_{}", plan.tensors[plan.outputs[i]].name, i), i);
    used.insert(file);
    std::string path = (std::filesystem::path(options.outputDir) / file).string();
    PLAIT_RETURN_IF_ERROR(writeOutput(path, exec.output(i)));
    written.push_back(path);
  }
  return {};
}

// The loss, by the training convention, is the first output when it is a float scalar.
nlohmann::json lossOf(const Executor &exec) {
  if (exec.plan().outputs.empty())
    return nullptr;
  TensorView v = exec.output(0);
  if (v.numel() != 1)
    return nullptr;
  switch (v.dtype) {
  case DType::F32:
    return *v.as<float>();
  case DType::F64:
    return *v.as<double>();
  case DType::BF16:
    return bf16ToFloat(*v.as<uint16_t>());
  case DType::F16:
    return f16ToFloat(*v.as<uint16_t>());
  default:
    return nullptr;
  }
}

Status writeStepLog(const RunOptions &options, const Executor &exec, int64_t step,
                    double stepMs) {
  const Plan &plan = exec.plan();
  int64_t samples = 1; // the leading dimension of the first input is the batch
  if (!plan.inputs.empty() && !plan.tensors[plan.inputs[0]].shape.empty())
    samples = plan.tensors[plan.inputs[0]].shape[0];
  nlohmann::json record = {
      {"step", step},
      {"loss", lossOf(exec)},
      {"step_ms", stepMs},
      {"samples_per_s", stepMs > 0 ? samples * 1000.0 / stepMs : 0.0},
      {"arena_bytes", exec.arenaBytes()},
      {"comm_bytes", 0},
  };
  // The first step starts a fresh log: the file describes this run only.
  std::ofstream log(options.logJsonl, step == 1 ? std::ios::trunc : std::ios::app);
  if (!log)
    return Status::errorf("--log-jsonl {}: cannot open for writing", options.logJsonl);
  log << record.dump() << '\n';
  if (!log)
    return Status::errorf("--log-jsonl {}: write error", options.logJsonl);
  return {};
}

std::string outputsSummary(const Executor &exec, const std::vector<std::string> &written) {
  const Plan &plan = exec.plan();
  std::string text;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const PlanTensor &t = plan.tensors[plan.outputs[i]];
    text += fmt::format("{}{} {} {}", i ? ", " : "", printable(t.name), dtypeName(t.dtype),
                        shapeString(t.shape));
    std::string value = scalarText(exec.output(i));
    if (!value.empty())
      text += " = " + value;
    if (i < written.size())
      text += " -> " + written[i];
  }
  return text.empty() ? "none" : text;
}

} // namespace

std::string outputFileName(const std::string &tensorName, size_t index) {
  std::string name = tensorName;
  for (char &c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      c = '_';
  if (name.empty() || name == "." || name == "..")
    name = fmt::format("output_{}", index);
  return name + ".npy";
}

Status runPlan(const RunOptions &options, std::string &summary) {
  PLAIT_RETURN_IF_ERROR(checkImplemented(options));
  Plan plan;
  PLAIT_RETURN_IF_ERROR(loadPlan(options.planPath, plan));
  if (plan.worldSize > 1)
    return Status::errorf("{}: compiled for world size {}; multi-rank execution is not "
                          "implemented yet",
                          plan.path, plan.worldSize);
  ExecutorOptions execOptions;
  execOptions.seed = options.seed;
  std::unique_ptr<Executor> exec;
  PLAIT_RETURN_IF_ERROR(Executor::create(plan, execOptions, exec));
  PLAIT_RETURN_IF_ERROR(bindInputs(options, plan, *exec));

  auto start = std::chrono::steady_clock::now();
  PLAIT_RETURN_IF_ERROR(exec->run());
  double stepMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  if (!options.logJsonl.empty())
    PLAIT_RETURN_IF_ERROR(writeStepLog(options, *exec, /*step=*/1, stepMs));
  std::vector<std::string> written;
  if (!options.outputDir.empty())
    PLAIT_RETURN_IF_ERROR(writeOutputs(options, *exec, written));
  summary = fmt::format("{}: ran {} instructions in {:.3f} ms (arena {} bytes); outputs: {}",
                        plan.path, plan.instrs.size(), stepMs, exec->arenaBytes(),
                        outputsSummary(*exec, written));
  return {};
}

} // namespace plait::rt
