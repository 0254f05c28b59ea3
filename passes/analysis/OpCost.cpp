// Cost model, per instruction: FLOPs, bytes, rows, GEMM calls and how the runtime splits
// each kernel across threads (OpCost, formulas in CostModel.h).
#include "passes/analysis/CostModel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "codegen/schema/FusedElementwise.h"
#include "codegen/schema/MatmulLayout.h"
#include "passes/analysis/CostSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/ReductionSplit.h"
#include "runtime/cpu/Workspace.h"

namespace plait::cost {
namespace {

/// `instr`'s "axis" (`fallback` when absent) normalised against `rank`; false out of range.
bool axisAttr(const plan::InstrDesc &instr, int64_t fallback, int64_t rank, int64_t &axis) {
  axis = intAttr(instr, "axis", fallback);
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank;
}

/// The product of `shape`'s dimensions [from, to).
double dimsProduct(const std::vector<int64_t> &shape, int64_t from, int64_t to) {
  double n = 1;
  for (int64_t d = from; d < to; ++d)
    n *= double(shape[size_t(d)]);
  return n;
}

bool hasAttr(const plan::InstrDesc &instr, const char *name) {
  for (const plan::AttrDesc &a : instr.attrs)
    if (a.name == name)
      return true;
  return false;
}

double floatAttr(const plan::InstrDesc &instr, const char *name, double fallback) {
  for (const plan::AttrDesc &a : instr.attrs)
    if (a.name == name && !a.floats.empty())
      return a.floats.front();
  return fallback;
}

/// Flops per element optimizer update `update` (the instruction's kernel, or the one a
/// grouped_update repeats) adds to its table entry: Adam's L2 term (grad + l2 * param, `l2`
/// set by --optimizer adam with weight decay) and Adagrad's and RMSprop's weight decay are 2
/// each; AMSGrad's running maximum 1; RMSprop's centered average 5 and its momentum buffer 2.
double extraUpdateFlops(const plan::InstrDesc &instr, std::string_view update) {
  double extra = floatAttr(instr, "l2", 0.0) != 0.0 ? 2.0 : 0.0;
  // LAMB on a whole tensor, adapting: the kernel's norms pass (lamb_norms' work) first.
  if (update == "lamb_update" && !hasAttr(instr, "segments") &&
      (floatAttr(instr, "weight_decay", 0.01) != 0.0 || intAttr(instr, "always_adapt", 0) != 0))
    extra += kTranscendentalFlops + 14;
  if (update == "adamw_update" && intAttr(instr, "amsgrad", 0) != 0)
    extra += 1; // vmax = max(vmax, v)
  // The updates whose weight decay is an L2 term added to the gradient.
  if (update != "adagrad_update" && update != "rmsprop_update" && update != "adamax_update" &&
      update != "nadam_update" && update != "radam_update" && update != "adadelta_update" &&
      update != "asgd_update")
    return extra;
  if (floatAttr(instr, "weight_decay", 0.0) != 0.0)
    extra += 2;
  if (update == "rmsprop_update") {
    if (intAttr(instr, "centered", 0) != 0)
      extra += 5;
    if (floatAttr(instr, "momentum", 0.0) != 0.0)
      extra += 2;
  }
  return extra;
}

/// The training-mode BatchNorm kernels, each a channel at a time (NormalizationKernels.cpp).
bool isBatchNormKernel(std::string_view kernel) {
  return kernel == "batch_norm" || kernel == "batch_norm_grad" || kernel == "batch_norm_stats" ||
         kernel == "batch_norm_grad_sums";
}

bool isCollective(const std::string &kernel) {
  return kernel == "all_reduce" || kernel == "all_gather" || kernel == "reduce_scatter" ||
         kernel == "broadcast";
}

/// FLOPs per element of the result (or of the first operand, for reductions and losses) of
/// the kernels that are not contractions (0 for data movement), and the class of measured
/// kernel rates (cluster::kKernelClassNames) that times them when the spec has one.
struct ElementCost {
  const char *kernel;
  double flops;
  bool perInput; // counted per element of the first operand
  const char *rateClass;
};

constexpr double T = kTranscendentalFlops;
constexpr ElementCost kElementCosts[] = {
    {"add", 1, false, "binary"},
    {"sub", 1, false, "binary"},
    {"mul", 1, false, "binary"},
    {"div", 1, false, "binary"},
    {"max", 1, false, "binary"},
    {"min", 1, false, "binary"},
    {"greater", 1, false, "binary"},
    {"less", 1, false, "binary"},
    {"equal", 1, false, "binary"},
    {"and", 1, false, "binary"},
    {"or", 1, false, "binary"},
    {"neg", 1, false, "unary"},
    {"shift_left", 1, false, "binary"},
    {"shift_right", 1, false, "binary"},
    {"abs", 1, false, "unary"},
    {"relu", 1, false, "unary"},
    {"not", 1, false, "unary"},
    {"clamp", 2, false, "unary"},
    {"reciprocal", 1, false, "unary"},
    {"where", 1, false, "where"},
    // A fused program's rounding to bf16 (FusedElementwise.h): a few integer operations on
    // the value's bits, no memory.
    {"round_bf16", 2, false, "unary"},
    // dropout_mask: four 64-bit hash mixes per element (DropoutMask.h), no loads.
    {"dropout_mask", 6, false, "unary"},
    // random: one hash per uniform element, two and a log, sqrt and cos per normal one.
    {"random", 10, false, "unary"},
    {"cast", 1, false, "cast"},
    {"exp", T, false, "transcendental"},
    {"log", T, false, "transcendental"},
    {"erf", T, false, "transcendental"},
    {"tanh", T, false, "transcendental"},
    {"sigmoid", T + 2, false, "transcendental"},
    {"sqrt", T, false, "transcendental"},
    {"rsqrt", T, false, "transcendental"},
    {"sin", T, false, "transcendental"},
    {"cos", T, false, "transcendental"},
    {"gelu", T + 4, false, "transcendental"},
    {"pow", 2 * T + 1, false, "pow"},
    {"softmax", T + 4, false, "softmax"},
    {"log_softmax", T + 4, false, "softmax"},
    {"layer_norm", 8, false, "norm"},
    {"rms_norm", 6, false, "norm"},
    // With the residual add before them (add_layer_norm, add_rms_norm):
    {"add_layer_norm", 9, false, "norm"},
    {"add_rms_norm", 7, false, "norm"},
    // Their gradients: the statistics again, two row sums, dx and the parameter sums.
    {"layer_norm_grad", 16, false, "norm"},
    {"rms_norm_grad", 12, false, "norm"},
    // Training-mode BatchNorm: the statistics (two passes), then y; its gradient two sums
    // and dx (per element of x).
    {"batch_norm", 8, true, "norm"},
    {"batch_norm_grad", 12, true, "norm"},
    // A SyncBatchNorm's parts: this rank's statistics (two passes), its gradient's two sums.
    {"batch_norm_stats", 4, true, "norm"},
    {"batch_norm_grad_sums", 6, true, "norm"},
    {"reduce_sum", 1, true, "reduction"},
    {"reduce_mean", 1, true, "reduction"},
    {"reduce_max", 1, true, "reduction"},
    {"reduce_min", 1, true, "reduction"},
    {"argmax", 1, true, "reduction"},
    {"argmin", 1, true, "reduction"},
    // top_k: a compare per element, and a heap step for those that enter the k.
    {"top_k", 2, true, "reduction"},
    {"softmax_cross_entropy", T + 4, true, "loss"},
    {"softmax_cross_entropy_grad", T + 4, true, "loss_grad"},
    {"nll_loss", 1, true, "reduction"},
    {"nll_loss_grad", 1, false, "movement"},
    {"max_pool2d", 1, true, "pool"},
    {"avg_pool2d", 1, true, "pool"},
    // A pool's gradient works over dx's windows: its result's elements (avg_pool2d_grad's
    // first operand is the smaller dy).
    {"max_pool2d_grad", 2, false, "pool_grad"},
    {"avg_pool2d_grad", 2, false, "pool_grad"},
    // torch's AdamW per element: decay, two moment updates, sqrt, divide, step: ~12 ops.
    {"adamw_update", T + 12, false, "adamw"},
    {"sgd_update", 4, false, "sgd"},
    // Adagrad: square, accumulate, sqrt, add eps, scale, divide, step; RMSprop: the same with
    // a decayed average (centered and momentum add theirs: extraUpdateFlops). Both read and
    // write like AdamW (a square root and a divide per element): its measured rate.
    {"adagrad_update", T + 7, false, "adamw"},
    {"rmsprop_update", T + 8, false, "adamw"},
    // Lion: decay, interpolate, sign, step, the moment's update; no root or divide: SGD's rate.
    {"lion_update", 10, false, "sgd"},
    // Adamax: the moment, a decayed max of |g| + eps, the step (a divide, no root); NAdam: Adam's
    // moments, one root and two steps; RAdam: Adam's with a reciprocal and the rectification;
    // Adadelta: two roots, a divide and two decayed averages. All at AdamW's measured rate.
    {"adamax_update", 11, false, "adamw"},
    {"nadam_update", T + 15, false, "adamw"},
    {"radam_update", T + 10, false, "adamw"},
    {"adadelta_update", 2 * T + 14, false, "adamw"},
    // Rprop: the sign of g * prev, two selects, the clamped step size, the masked gradient's
    // sign and the step: ~9 compares and selects, no root or divide: SGD's rate.
    {"rprop_update", 9, false, "sgd"},
    // ASGD: decay, step, the average's difference and update (weight decay: extraUpdateFlops):
    // SGD's rate.
    {"asgd_update", 6, false, "sgd"},
    // LAMB: Adam's moments and direction plus the decay term and the scaled step; a whole
    // tensor's update that adapts computes the direction twice (its norms pass: the norms'
    // entry, added by extraUpdateFlops). lamb_norms: the direction and two squares summed.
    {"lamb_update", T + 12, false, "adamw"},
    {"lamb_norms", T + 14, true, "adamw"},
    // Adafactor: the param's squares (scale_parameter), g^2 + eps into a row and a column
    // sum, then u = rsqrt(row / mean) * rsqrt(col) * g twice (its RMS, then the step: a root
    // and a divide each), the clip, the step size, the decay and the move.
    {"adafactor_update", 2 * T + 20, false, "adamw"},
    // Sharded (its sums taken by these two first, over this rank's shard): the param's
    // square and g^2 + eps into a row and a column sum; then u (a root and a divide for the
    // row, one for the column) squared and summed.
    {"adafactor_stats", 6, true, "adamw"},
    {"adafactor_norms", T + 10, true, "adamw"},
    // The weight EMA: two products and a sum per element, reading and writing like SGD.
    {"weight_ema", 3, false, "sgd"},
    // Data movement: one load and store per element moved (the CPU backend's loops; on GPUs
    // these are memory-bound and the bytes term decides). reshape is a view: no rate.
    // "movement" permutes or gathers elements; "copy" moves contiguous runs.
    {"transpose", 1, false, "movement"},
    {"reshape", 1, false, nullptr},
    {"broadcast_to", 1, false, "movement"},
    {"gather", 1, false, "movement"},
    {"gather_grad", 1, false, "movement"},
    {"trilu", 1, false, "movement"},
    {"concat", 1, false, "copy"},
    {"split", 1, true, "copy"},
    {"slice", 1, false, "copy"},
    {"pad", 1, false, "copy"},
    {"local_shard", 1, false, "copy"},
};

const ElementCost *elementCost(std::string_view kernel) {
  // Looked up for every instruction of every candidate the search screens: hashed once.
  static const std::unordered_map<std::string_view, const ElementCost *> byKernel = [] {
    std::unordered_map<std::string_view, const ElementCost *> map;
    for (const ElementCost &c : kElementCosts)
      map.emplace(c.kernel, &c);
    return map;
  }();
  auto it = byKernel.find(kernel);
  return it == byKernel.end() ? nullptr : it->second;
}

/// The rows a row-wise kernel works through one at a time (KernelRate::nsPerRow): the
/// softmax's and the norms' rows along their axis, a loss's targets, a reduction's result
/// elements (top_k's rows), a pool's planes (of its first operand); 0 for the rest.
double rowsOf(const plan::PlanDesc &plan, const plan::InstrDesc &instr, const ElementCost &c) {
  if (!c.rateClass || instr.inputs.empty() || instr.outputs.empty())
    return 0;
  std::string_view cls = c.rateClass;
  const plan::TensorDesc &a = plan.tensors[instr.inputs[0]];
  if (isBatchNormKernel(instr.kernel)) // per channel
    return a.shape.size() >= 2 ? double(a.shape[1]) : 0;
  if (cls == "softmax" || cls == "norm") {
    int64_t rank = int64_t(a.shape.size()), axis;
    if (!axisAttr(instr, -1, rank, axis))
      return 0;
    // softmax works along one axis; layer_norm / rms_norm normalise every axis from `axis`.
    double width = dimsProduct(a.shape, axis, cls == "norm" ? rank : axis + 1);
    return width > 0 ? numel(a) / width : 0;
  }
  if (cls == "loss" || cls == "loss_grad")
    return instr.inputs.size() >= 2 ? numel(plan.tensors[instr.inputs[1]]) : 0;
  if (cls == "reduction" && instr.kernel == "top_k")
    return a.shape.empty() || a.shape.back() == 0 ? 0 : numel(a) / double(a.shape.back());
  if (cls == "reduction")
    return numel(plan.tensors[instr.outputs[0]]);
  if ((cls == "pool" || cls == "pool_grad") && a.shape.size() == 4) // its N×C planes
    return double(a.shape[0]) * double(a.shape[1]);
  return 0;
}

/// A count computed in double as the int64_t the runtime's split rules take (at most 1e18).
int64_t clampedInt64(double n) { return int64_t(std::min(n, 1e18)); }

/// Marks all of `cost`'s work as split across threads in `calls` calls of `grains` grains
/// each (nothing when a call is under two grains: parallelFor runs it on one thread).
void splitAs(OpCost &cost, double grains, double calls, bool gemm) {
  if (!(grains >= 2))
    return;
  cost.splitGrains = grains;
  cost.splitCalls = calls;
  cost.splitShare = 1;
  cost.splitGemm = gemm;
}

/// Marks a GEMM kernel's `units` of `unitWork` multiply-adds each as split across threads in
/// at most `slots` chunks of whole units, as ConvSupport.h forEachConvUnit and the Winograd
/// kernel split them (a chunk at least a kMultiplyAddGrain of work).
void splitUnits(OpCost &cost, double units, double unitWork, double slots) {
  splitAs(cost,
          std::min(
              units / double(rt::cpu::grainFor(rt::cpu::kMultiplyAddGrain, clampedInt64(unitWork))),
              slots),
          1, true);
}

/// Grains of a parallelFor over `rows` rows of `width` elements, each chunk about `grain`
/// elements of whole rows (grainFor).
double rowGrains(double rows, double width, int64_t grain) {
  return rows / double(rt::cpu::grainFor(grain, int64_t(std::max(width, 1.0))));
}

/// The element kernels whose loops the runtime splits across threads (their parallelFor
/// calls: Unary-, Binary-, Cast-, Random- and OptimizerKernels.cpp). argmax, argmin and
/// reshape run on one thread (pools, norms, reductions, losses, gathers and movement: below).
bool splitsElements(std::string_view k) {
  static constexpr std::string_view kSplit[] = {"add",
                                                "sub",
                                                "mul",
                                                "div",
                                                "max",
                                                "min",
                                                "greater",
                                                "less",
                                                "equal",
                                                "and",
                                                "or",
                                                "neg",
                                                "abs",
                                                "relu",
                                                "reciprocal",
                                                "exp",
                                                "log",
                                                "erf",
                                                "tanh",
                                                "sigmoid",
                                                "sqrt",
                                                "rsqrt",
                                                "sin",
                                                "cos",
                                                "gelu",
                                                "adamw_update",
                                                "sgd_update",
                                                "adagrad_update",
                                                "rmsprop_update",
                                                "lion_update",
                                                "adamax_update",
                                                "nadam_update",
                                                "radam_update",
                                                "adadelta_update",
                                                "rprop_update",
                                                "asgd_update",
                                                "lamb_update",
                                                "adafactor_update",
                                                "weight_ema",
                                                "where",
                                                "clamp",
                                                "not",
                                                "cast",
                                                "pow",
                                                "dropout_mask",
                                                "random"};
  return std::find(std::begin(kSplit), std::end(kSplit), k) != std::end(kSplit);
}

/// How the runtime splits element kernel `instr` (`cost`'s rows set): OpCost's split fields.
void splitElementKernel(const plan::PlanDesc &plan, const plan::InstrDesc &instr, OpCost &cost) {
  std::string_view k = instr.kernel;
  const plan::TensorDesc &a = plan.tensors[instr.inputs[0]];
  const plan::TensorDesc &out = plan.tensors[instr.outputs[0]];
  if (splitsElements(k)) {
    // A binary kernel (or where) splits its broadcast's rows, or its one row; a map its
    // elements.
    double inner = out.shape.empty() ? 1 : double(std::max<int64_t>(out.shape.back(), 1));
    bool rowsOfBinary = instr.inputs.size() >= 2 && inner < numel(out);
    splitAs(cost,
            rowsOfBinary ? rowGrains(numel(out) / inner, inner, rt::cpu::kElementGrain)
                         : numel(out) / double(rt::cpu::kElementGrain),
            1, false);
    return;
  }
  bool normGrad = k == "layer_norm_grad" || k == "rms_norm_grad";
  if (k == "layer_norm" || k == "rms_norm" || k == "add_layer_norm" || k == "add_rms_norm" ||
      k == "softmax" || k == "log_softmax" || normGrad) {
    // Rows of the normalised axes (the softmax's only along the last axis); a norm's
    // gradient in fixed chunks of rows (normGradSlots, Workspace.h).
    int64_t rank = int64_t(a.shape.size()), axis;
    if (!axisAttr(instr, -1, rank, axis) ||
        ((k == "softmax" || k == "log_softmax") && axis != rank - 1))
      return;
    double width = dimsProduct(a.shape, axis, rank);
    splitAs(cost,
            normGrad ? double(rt::normGradSlots(clampedInt64(numel(a) / std::max(width, 1.0)),
                                                clampedInt64(width)))
                     : rowGrains(numel(a) / width, width, rt::cpu::kElementGrain),
            1, false);
    return;
  }
  if (isBatchNormKernel(k) && a.shape.size() >= 2) {
    // Channels, each all of its values, chunks of kElementGrain values (NormalizationKernels.cpp:
    // the passes' reads of one value counted as one, two or three).
    // A SyncBatchNorm's batch_norm reads every rank's statistics (its 4th operand), its
    // batch_norm_grad the ranks' sums (its 6th): one pass each.
    const bool synced = (k == "batch_norm" && instr.inputs.size() > 3) ||
                        (k == "batch_norm_grad" && instr.inputs.size() > 5);
    const double reads = synced ? 1 : k == "batch_norm_grad" ? 3 : 2;
    const double channels = double(a.shape[1]);
    splitAs(cost,
            rowGrains(channels, reads * numel(a) / std::max(channels, 1.0), rt::cpu::kElementGrain),
            1, false);
    return;
  }
  if (k == "top_k" && !a.shape.empty()) { // rows (ReductionKernels.cpp)
    double width = double(std::max<int64_t>(a.shape.back(), 1));
    splitAs(cost, rowGrains(numel(a) / width, width, rt::cpu::kElementGrain), 1, false);
    return;
  }
  if (k == "max_pool2d" || k == "avg_pool2d" || k == "max_pool2d_grad" || k == "avg_pool2d_grad") {
    // Planes (N x C), each its input plane and its windows' reads a grain (PoolSupport.h
    // poolPlaneGrain); max_pool2d_grad in at most one chunk per argmax slot (Workspace.h).
    bool grad = k == "max_pool2d_grad" || k == "avg_pool2d_grad";
    const plan::TensorDesc &x = k == "avg_pool2d_grad" ? out : a;
    const plan::TensorDesc &y = grad ? plan.tensors[instr.inputs.back()] : out;
    const std::vector<int64_t> *window = plan::intsAttr(instr, "kernel");
    if (x.shape.size() != 4 || y.shape.size() != 4 || !window || window->size() != 2)
      return;
    double planes = double(x.shape[0]) * double(x.shape[1]);
    double inPlane = double(x.shape[2]) * double(x.shape[3]);
    double outPlane = double(y.shape[2]) * double(y.shape[3]);
    double perPlane = inPlane + outPlane * double((*window)[0]) * double((*window)[1]);
    double grains =
        planes / double(rt::cpu::grainFor(rt::cpu::kElementGrain, clampedInt64(perPlane)));
    if (k == "max_pool2d_grad")
      grains = std::min(grains, double(rt::maxPoolGradSlots(clampedInt64(planes),
                                                            clampedInt64(inPlane + outPlane))));
    splitAs(cost, grains, 1, false);
    return;
  }
  if (k == "reduce_sum" || k == "reduce_mean" || k == "reduce_max" || k == "reduce_min" ||
      k == "reduce_prod") {
    // Rows of the outermost merged dimensions: chunks of them when they are kept, fixed
    // blocks with their own accumulators when they are reduced (ReductionSplit.h).
    const std::vector<int64_t> *axes = plan::intsAttr(instr, "axes");
    std::vector<int64_t> runs;
    std::vector<bool> kept;
    if (!rt::cpu::reductionRuns(a.shape, axes ? *axes : std::vector<int64_t>{}, runs, kept))
      return;
    auto isKept = [&](size_t r) { return bool(kept[r]); };
    int64_t slots = rt::cpu::reductionSlots(runs.data(), runs.size(), isKept,
                                            clampedInt64(numel(a)), clampedInt64(numel(out)));
    splitAs(cost,
            slots > 1 ? double(slots)
                      : double(rt::cpu::reductionSplit(runs.data(), runs.size(), isKept,
                                                       clampedInt64(numel(a)))
                                   .maxChunks()),
            1, false);
    return;
  }
  if (k == "gather" && instr.inputs.size() == 2) {
    // Rows of the data's inner dimensions, one per (outer index, index) (IndexingKernels.cpp).
    int64_t rank = int64_t(a.shape.size()), axis;
    if (!axisAttr(instr, 0, rank, axis))
      return;
    double inner = dimsProduct(a.shape, axis + 1, rank);
    if (inner > 0)
      splitAs(cost, rowGrains(numel(out) / inner, inner, rt::cpu::kElementGrain), 1, false);
    return;
  }
  if (k == "gather_grad" || k == "trilu") {
    // gather_grad: its zero fill by elements, then the result's columns, each gathering its
    // rows' terms (GradKernels.cpp); trilu: rows (IndexingKernels.cpp).
    splitAs(cost, numel(out) / double(rt::cpu::kElementGrain), 1, false);
    return;
  }
  if (k == "transpose" || k == "broadcast_to" || k == "slice" || k == "pad" || k == "concat" ||
      k == "split") {
    // Pieces of rows, bands of a transpose's tiles, or whole rows, of about kElementGrain
    // elements of the result each (StridedCopy.cpp, MovementKernels.cpp).
    splitAs(cost, (k == "split" ? numel(a) : numel(out)) / double(rt::cpu::kElementGrain), 1,
            false);
    return;
  }
  bool loss = k == "softmax_cross_entropy" || k == "nll_loss";
  if ((loss || k == "softmax_cross_entropy_grad" || k == "nll_loss_grad") &&
      instr.inputs.size() >= 2) {
    // Positions (LossKernels.cpp): the target's elements, each its `classes` scores
    // (nll_loss reads one).
    double positions = numel(plan.tensors[instr.inputs[1]]);
    if (positions > 0)
      splitAs(
          cost,
          rowGrains(positions, k == "nll_loss" ? 1 : numel(a) / positions, rt::cpu::kElementGrain),
          1, false);
  }
}

} // namespace

OpCost opCost(const plan::PlanDesc &plan, const plan::InstrDesc &instr) {
  OpCost cost;
  auto tensor = [&](uint32_t i) -> const plan::TensorDesc & { return plan.tensors[i]; };
  for (uint32_t i : instr.inputs)
    cost.bytes += double(plan::tensorBytes(tensor(i)));
  for (uint32_t o : instr.outputs)
    cost.bytes += double(plan::tensorBytes(tensor(o)));
  if (isCollective(instr.kernel)) {
    cost.collective = true;
    return cost;
  }
  if (instr.inputs.empty() || instr.outputs.empty())
    return cost;
  const plan::TensorDesc &a = tensor(instr.inputs[0]);
  const plan::TensorDesc &out = tensor(instr.outputs[0]);
  const std::string &k = instr.kernel;
  if ((k == "matmul" || k == "gemm") && instr.inputs.size() >= 2 && !a.shape.empty()) {
    // out = op(a)·op(b): every result element is a K-long dot product.
    int64_t reduced = a.shape.back();
    if (k == "gemm" && a.shape.size() == 2 && intAttr(instr, "trans_a", 0))
      reduced = a.shape[0];
    cost.rows = 1;               // GEMM calls
    if (instr.inputs.size() > 2) // gemm's c, matmul's bias: written into the result first
      cost.columns = numel(out); // (LinalgKernels.cpp), then the GEMM accumulates onto it
    if (k == "matmul" && a.shape.size() >= 2) {
      // The operands' logical shapes: after lhs_perm / rhs_perm, then the transpose flags.
      const plan::TensorDesc &b = tensor(instr.inputs[1]);
      auto logical = [&](const plan::TensorDesc &t, const char *permName, const char *flag) {
        std::vector<int64_t> shape = t.shape;
        const std::vector<int64_t> *perm = plan::intsAttr(instr, permName);
        if (perm && matmul::isPermutation(*perm, shape.size()))
          shape = matmul::permuted(t.shape, *perm);
        if (shape.size() >= 2 && intAttr(instr, flag, 0))
          std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
        return shape;
      };
      std::vector<int64_t> lhs = logical(a, "lhs_perm", "transpose_lhs");
      std::vector<int64_t> rhs = logical(b, "rhs_perm", "transpose_rhs");
      reduced = lhs.back();
      // The runtime's GEMM calls (LinalgKernels.cpp): one per batch entry, except a batched
      // lhs against one unbatched, unpermuted rhs, which folds into a single GEMM, and a
      // permuted one marked `fold_rows`, whose entries of few rows fold into GEMMs of
      // chunks of rows gathered first (matmul::foldedChunkRows).
      double m = double(lhs[lhs.size() - 2]), n = rhs.size() >= 2 ? double(rhs.back()) : 1;
      double entries = m * n > 0 ? std::max(1.0, numel(out) / (m * n)) : 1;
      bool permuted = plan::intsAttr(instr, "lhs_perm") || plan::intsAttr(instr, "rhs_perm") ||
                      plan::intsAttr(instr, "result_perm");
      double batchB = 1;
      for (size_t d = 0; d + 2 < rhs.size(); ++d)
        batchB *= double(rhs[d]);
      bool folds = !permuted && batchB == 1 && !intAttr(instr, "transpose_lhs", 0);
      cost.rows = folds ? 1 : entries;
      int64_t chunkRows =
          permuted && intAttr(instr, "fold_rows", 0) && batchB == 1
              ? matmul::foldedChunkRows(int64_t(entries), lhs[lhs.size() - 2], reduced)
              : 0;
      if (chunkRows > 0) {
        double rows = entries * m;
        cost.rows = std::ceil(rows / double(chunkRows));
        cost.side.push_back({"copy", rows * double(reduced), 0}); // the gathered lhs rows
      }
    }
    cost.flops = 2 * numel(out) * double(reduced);
    cost.contraction = true;
    cost.rateClass = "matmul"; // its fixed costs; the FLOPs go by the GEMM rate
    // Each GEMM call splits its rows or columns above two grains of multiply-adds (Gemm.cpp).
    splitAs(cost, multiplyAddsPerCall(cost) / double(rt::cpu::kMultiplyAddGrain), cost.rows, true);
    return cost;
  }
  if ((k == "det" || k == "cofactors") && a.shape.size() >= 2) {
    // LinalgKernels.cpp: an LU factorisation per matrix, 2/3 n^3 multiply-adds, serial over
    // the matrices; cofactors solves n columns more (2 n^3). A singular matrix's cofactors
    // (each minor factorised) are not modelled.
    const double n = double(a.shape.back());
    const double matrices = n > 0 ? numel(a) / (n * n) : 0;
    cost.flops = matrices * (k == "det" ? 2.0 / 3.0 : 2.0 / 3.0 + 2.0) * n * n * n;
    cost.rateClass = "binary";
    return cost;
  }
  if ((k == "attention" && (instr.inputs.size() == 3 || instr.inputs.size() == 4)) ||
      (k == "attention_grad" && (instr.inputs.size() == 6 || instr.inputs.size() == 7))) {
    // AttentionKernels.cpp: per head, blocks of kAttentionRowBlock query rows, each scored
    // against the keys any of its rows sees (causal: up to its last row) by GEMMs, 2 in the
    // forward (q k^T, p v) and 5 in the gradient (q k^T, p^T dout, dout v^T, ds k, ds^T q).
    const plan::TensorDesc &k4 = tensor(instr.inputs[1]), &v4 = tensor(instr.inputs[2]);
    if (a.shape.size() != 4 || k4.shape.size() != 4 || v4.shape.size() != 4)
      return cost;
    bool causal = intAttr(instr, "causal", 0) != 0;
    double heads = double(a.shape[0]) * double(a.shape[2]);
    int64_t s = a.shape[1], t = k4.shape[1], block = std::min<int64_t>(s, rt::kAttentionRowBlock);
    double scores = 0, blocks = 0;
    for (int64_t i0 = 0; block > 0 && i0 < s; i0 += block) {
      int64_t rows = std::min(block, s - i0);
      scores += double(rows) * double(causal ? std::min(t, i0 + rows) : t);
      blocks += 1;
    }
    scores *= heads;
    bool grad = k == "attention_grad";
    double d = double(a.shape[3]), e = double(v4.shape[3]);
    cost.flops = 2 * scores * (grad ? 3 * d + 2 * e : d + e) + T * scores;
    cost.contraction = true;
    cost.rows = heads * blocks * (grad ? 5 : 2); // GEMM calls
    cost.rateClass = "matmul";
    // The softmax over each block of scores: the forward normalises its rows, the gradient
    // exponentiates them again and forms dS; as many rows as queries.
    cost.side.push_back({"softmax", scores, heads * double(s)});
    // Dropout on the probabilities: a mask draw per score (the forward's once, the gradient's
    // twice: P M for dv, then dP M), at plait.dropout_mask's class.
    if (instr.inputs.size() == (grad ? 7u : 4u))
      cost.side.push_back({"unary", scores * (grad ? 2 : 1), 0});
    // The heads split across threads, whole heads of kMultiplyAddGrain or more a chunk, at
    // most one chunk per workspace slot (AttentionKernels.cpp's forEachBlock).
    double headWork = std::max(1.0, double(s) * double(t) * (d + e));
    double grain = std::max(std::ceil(double(rt::cpu::kMultiplyAddGrain) / headWork),
                            std::ceil(heads / double(rt::attentionWorkspaceRows(s))));
    splitAs(cost, heads / grain, 1, true);
    return cost;
  }
  if (k == "conv2d" || k == "conv2d_grad_input" || k == "conv2d_grad_weight") {
    // Every element of y (conv2d's result, the gradient's operand) is a dot product over
    // Cin/g·kh·kw weights: the weight's elements per output channel.
    const plan::TensorDesc *w = nullptr, *y = nullptr;
    if (k == "conv2d" && instr.inputs.size() >= 2)
      w = &tensor(instr.inputs[1]), y = &out;
    else if (k == "conv2d_grad_input" && instr.inputs.size() >= 2)
      w = &tensor(instr.inputs[1]), y = &a;
    else if (k == "conv2d_grad_weight" && instr.inputs.size() >= 2)
      w = &out, y = &tensor(instr.inputs[1]);
    if (w && y && !w->shape.empty() && w->shape[0] > 0) {
      cost.flops = 2 * numel(*y) * numel(*w) / double(w->shape[0]);
      cost.contraction = true;
      // The runtime's convolutions (ConvKernels.cpp, GradKernels.cpp): per image and group, an
      // im2col (col2im for the input gradient) of patch × output-plane columns, then a GEMM.
      const plan::TensorDesc &x = k == "conv2d_grad_input" ? out : a;
      if (x.shape.size() == 4 && y->shape.size() == 4 && w->shape.size() == 4 && w->shape[1] > 0) {
        double batch = double(y->shape[0]), group = double(x.shape[1] / w->shape[1]);
        double patch = numel(*w) / double(w->shape[0]);
        double plane = double(y->shape[2]) * double(y->shape[3]);
        // A GEMM per group of each block of image_block images (plait-conv-image-blocks).
        const std::vector<int64_t> *imageBlock = plan::intsAttr(instr, "image_block");
        double block = imageBlock && imageBlock->size() == 1 && (*imageBlock)[0] > 1
                           ? std::min(double((*imageBlock)[0]), std::max(batch, 1.0))
                           : 1.0;
        double blocks = std::ceil(batch / block);
        const std::vector<int64_t> *winograd = plan::intsAttr(instr, "winograd");
        auto pair = [&](const char *name) { // absent: 1, 1; another length: no window it takes
          const std::vector<int64_t> *v = plan::intsAttr(instr, name);
          return !v ? std::vector<int64_t>{1, 1} : v->size() == 2 ? *v : std::vector<int64_t>{0, 0};
        };
        const std::vector<int64_t> strides = pair("strides"), dilations = pair("dilations");
        // A depthwise convolution, and a grouped one marked `direct`, are computed without
        // GEMMs (ConvSupport.h depthwiseConv2d, groupedConv2d): timed whole by the
        // conv_depthwise or conv_grouped class, per vector multiply-add and per vector laid out
        // (Workspace.h directConvWork), its units split across threads as forEachDepthwiseUnit
        // splits them.
        const bool depthwise = w->shape[1] == 1 && double(w->shape[0]) == group;
        const int64_t filtersPerGroup = group > 0 ? w->shape[0] / int64_t(group) : 0;
        if (depthwise || (intAttr(instr, "direct", 0) != 0 &&
                          rt::groupedDirectShape(int64_t(group), w->shape[1], filtersPerGroup))) {
          const bool gradWeight = k == "conv2d_grad_weight";
          const double inPlane = double(x.shape[2]) * double(x.shape[3]);
          const double taps = double(w->shape[2]) * double(w->shape[3]);
          const rt::DirectConvWork work =
              rt::directConvWork(rt::convKindOf(k), depthwise, batch, double(x.shape[1]),
                                 double(w->shape[0]), group, inPlane, plane, taps);
          cost.elements = work.multiplyAdds;
          cost.rows = work.moved;
          cost.rateClass = depthwise ? "conv_depthwise" : "conv_grouped";
          cost.contraction = false;
          const int64_t n = clampedInt64(batch), in = clampedInt64(inPlane),
                        out = clampedInt64(plane), t = clampedInt64(taps);
          const rt::DepthwiseBlocks units =
              depthwise ? rt::depthwiseBlocks(n, x.shape[1], in, out, t, gradWeight)
                        : rt::groupedBlocks(n, int64_t(group), in, out, t, gradWeight);
          splitUnits(cost, double(units.units), double(units.unitWork), double(units.slots));
          return cost;
        }
        if (winograd && winograd->size() == 1 && (*winograd)[0] != 0 &&
            rt::winogradWindow(w->shape[2], w->shape[3], strides[0], strides[1], dilations[0],
                               dilations[1], int64_t(group))) {
          // Winograd F(2x2, 3x3) (plait-conv-winograd, runtime/cpu/Winograd.cpp): 16 GEMMs of
          // [out channels, in channels] x [in channels, tiles] per chunk of tiles, and the
          // transforms of each tile's 16 values per input and output channel; the weight
          // gradient: 16 GEMMs [F, tiles] x [tiles, C] per (longer) chunk summed in order.
          const bool gradWeight = k == "conv2d_grad_weight";
          const double inC = double(k == "conv2d_grad_input" ? w->shape[0] : w->shape[1]);
          const double outC = double(k == "conv2d_grad_input" ? w->shape[1] : w->shape[0]);
          const plan::TensorDesc &tiled = gradWeight ? *y : out; // y or dy, or dx
          const int64_t tilesWide = (tiled.shape[3] + 1) / 2;
          const int64_t tileRows = tiled.shape[0] * ((tiled.shape[2] + 1) / 2);
          const double tiles = double(tilesWide) * double(tileRows);
          const rt::WinogradChunks chunking = // an empty result: no chunks
              tilesWide <= 0 || tileRows <= 0 ? rt::WinogradChunks{1, 0, 0, 1}
              : gradWeight
                  ? rt::winogradGradChunks(tilesWide, tileRows, clampedInt64(inC),
                                           clampedInt64(outC))
                  : rt::winogradChunks(tilesWide, tileRows, clampedInt64(inC), clampedInt64(outC));
          const double chunkTiles = double(chunking.tiles), chunks = double(chunking.count);
          cost.flops = 2.0 * 16.0 * tiles * inC * outC;
          cost.rows = 16.0 * chunks;
          cost.elements = 16.0 * tiles * (inC + outC);
          cost.rateClass = "conv";
          const double unitWork = 16.0 * inC * outC * chunkTiles;
          const double slots = double(chunking.slots);
          if (slots > 1)
            splitUnits(cost, chunks, unitWork, slots);
          else
            splitAs(cost, 16.0, chunks, true); // each chunk's 16 GEMMs across threads
          return cost;
        }
        cost.rows = blocks * group;
        cost.elements = batch * group * patch * plane; // the columns
        cost.rateClass = "conv";
        // Its units (conv2d_grad_weight: image blocks) split across threads, a column matrix
        // per chunk (Workspace.h convColumnSlots, ConvSupport.h forEachConvUnit); when there
        // are too few for two chunks, its GEMMs split as matmul's and im2col/col2im by channel.
        bool byImage = k == "conv2d_grad_weight";
        double units = byImage ? blocks : cost.rows;
        double unitWork = multiplyAddsPerCall(cost) * (byImage ? group : 1);
        double slots = double(rt::convColumnSlots(clampedInt64(units), clampedInt64(unitWork)));
        if (slots > 1)
          splitUnits(cost, units, unitWork, slots);
        else
          splitAs(cost, multiplyAddsPerCall(cost) / double(rt::cpu::kMultiplyAddGrain), cost.rows,
                  true);
      }
    }
    return cost;
  }
  if (k == "fused_elementwise") {
    // Each op of the program on every element of the iteration shape (the largest operand:
    // all broadcast to it), and each reduced result's sum; memory traffic only for inputs
    // and results.
    const plan::TensorDesc *largest = &tensor(instr.outputs[0]);
    for (const std::vector<uint32_t> *tensors : {&instr.inputs, &instr.outputs})
      for (uint32_t t : *tensors)
        if (numel(tensor(t)) > numel(*largest))
          largest = &tensor(t);
    cost.elements = numel(*largest);
    cost.rateClass = "fused"; // the fused kernel's own per-call and per-row costs
    // FusedKernels.cpp splits its tiles across threads; a result summed over outer dimensions
    // (its last axis is the iteration shape's) keeps a copy of its sums per chunk, at most
    // kFusedSumSlots of them, and none when it is larger than kFusedSumSplitMax (Workspace.h's
    // fusedSumSlots): then the walk is one thread's.
    double sumSlots = std::numeric_limits<double>::infinity(); // no outer sums: no cap
    if (const std::vector<int64_t> *reductions = plan::intsAttr(instr, "reductions"))
      for (size_t o = 0; o < reductions->size(); ++o)
        if ((*reductions)[o] != fused::Store) {
          if (o < instr.outputs.size()) {
            const plan::TensorDesc &y = tensor(instr.outputs[o]);
            cost.rows += numel(y); // each result element sums a row
            if (largest->shape.empty() ||
                (!y.shape.empty() && y.shape.back() == largest->shape.back()))
              sumSlots = std::min(
                  sumSlots, double(rt::fusedSumSlots(int64_t(cost.elements), int64_t(numel(y)))));
          }
          if (const ElementCost *c = elementCost(fused::reductionName((*reductions)[o]))) {
            cost.flops += c->flops * cost.elements;
            cost.parts.push_back({c->rateClass, cost.elements});
          }
        }
    if (const std::vector<int64_t> *program = plan::intsAttr(instr, "program"))
      for (size_t i = 0; i + fused::kInstructionWidth <= program->size();
           i += fused::kInstructionWidth) {
        int64_t code = (*program)[i];
        if (code < 0 || code >= fused::kNumOpcodes)
          continue;
        if (const ElementCost *c = elementCost(fused::opcodeInfo(code).name)) {
          cost.flops += c->flops * cost.elements;
          cost.parts.push_back({c->rateClass, cost.elements});
        }
      }
    if (sumSlots > 1)
      splitAs(cost, std::min(cost.elements / double(rt::cpu::kElementGrain), sumSlots), 1, false);
    return cost;
  }
  if (k == "grouped_update" || k == "grouped_cast" || k == "weight_ema") {
    // The update's (the cast's, the average's) work on every tensor of the group (its params:
    // operand 0 of each update; every operand of the casts; the averages' results).
    const std::string each = k == "grouped_update" ? stringAttr(instr, "update")
                             : k == "grouped_cast" ? std::string("cast")
                                                   : std::string(k);
    const ElementCost *c = elementCost(each);
    int64_t per = k == "grouped_update" ? intAttr(instr, "operands_per_update", 0) : 1;
    const std::vector<uint32_t> &walked = k == "weight_ema" ? instr.outputs : instr.inputs;
    if (!c || per <= 0)
      return cost;
    // Each tensor's update (cast, average) splits on its own (OptimizerKernels.cpp,
    // CastKernels.cpp): the ones of two grains or more, counted at the smallest of them.
    double split = 0, grains = 0, calls = 0;
    for (size_t i = 0; i < walked.size(); i += size_t(per)) {
      double n = numel(tensor(walked[i]));
      cost.elements += n;
      double g = n / double(rt::cpu::kElementGrain);
      if (g >= 2 && splitsElements(each)) {
        split += n;
        calls += 1;
        grains = grains > 0 ? std::min(grains, g) : g;
      }
    }
    cost.flops = (c->flops + extraUpdateFlops(instr, each)) * cost.elements;
    cost.rateClass = c->rateClass;
    if (calls > 0) {
      splitAs(cost, grains, calls, false);
      cost.splitShare = split / std::max(cost.elements, 1.0);
    }
    return cost;
  }
  if (const ElementCost *c = elementCost(k)) {
    cost.elements = c->perInput ? numel(a) : numel(out);
    cost.flops = (c->flops + extraUpdateFlops(instr, k)) * cost.elements;
    // A SyncBatchNorm's batch_norm reads every rank's statistics (its 4th operand): y only;
    // its batch_norm_grad the ranks' sums (its 6th): dx only.
    if (k == "batch_norm" && instr.inputs.size() > 3)
      cost.flops = 4 * cost.elements;
    if (k == "batch_norm_grad" && instr.inputs.size() > 5)
      cost.flops = 6 * cost.elements;
    if (c->rateClass)
      cost.rateClass = c->rateClass;
    cost.rows = rowsOf(plan, instr, *c);
    splitElementKernel(plan, instr, cost);
  }
  return cost;
}

} // namespace plait::cost
