// Importers of ONNX's recurrent layers, RNN, GRU and LSTM (opsets 7 and 14), unrolled over
// the sequence into plait ops that exist already, so a recurrent model plans, shards, fuses and
// trains through those ops' VJPs (backpropagation through time is the reverse of the unrolled
// steps).
//
// Per direction, the input projection of every time step is one GEMM, X [T*B, I] x W^T plus
// the biases that add to it; each step is then one GEMM of the previous hidden state with R^T
// (onto the step's slice of that projection), the gates as slices of its result, and their
// activations and products, which plait-fuse-elementwise fuses. A reverse direction walks the
// steps from the last. With sequence_lens, a step at or past a sequence's length keeps its
// states and writes zeros to Y, so Y_h and Y_c are each sequence's last valid state, in both
// directions (the reverse one starts, untouched, at the sequence's own last element).
#include "compiler/import/onnx/Importer.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

enum class Cell { Rnn, Gru, Lstm };

/// One of the recurrent layer's activation functions, with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

/// The functions the spec lists, with the defaults of the ONNX ops of those names; whether each
/// takes an alpha and a beta (activation_alpha/beta are consumed, in order, by those that do).
struct ActivationInfo {
  const char *name;
  bool takesAlpha, takesBeta;
  double alpha, beta;
};
constexpr ActivationInfo kActivations[] = {
    {"Relu", false, false, 0, 0},        {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},     {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0}, {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},        {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0}};

/// The layer's shape and attributes, read and checked once.
struct Recurrence {
  Cell cell;
  int64_t gates = 1;    // weight blocks per direction: RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  int64_t functions = 1; // activation functions per direction: RNN 1, GRU 2, LSTM 3
  int64_t seq = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1;
  bool reverse = false; // with one direction: "reverse"
  bool batchFirst = false;
  bool linearBeforeReset = false; // GRU
  std::optional<double> clip;
  llvm::SmallVector<Activation> activations; // functions x directions
  Type type;
};

/// Reads direction, hidden_size, layout, clip and the activations, and checks every operand's
/// shape against X and W.
std::optional<Recurrence> readRecurrence(NodeContext &ctx, Cell cell) {
  Recurrence r;
  r.cell = cell;
  r.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  r.functions = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3;
  auto fail = [&](const llvm::Twine &message) {
    (void)ctx.error(message);
    return std::nullopt;
  };
  if (failed(ctx.requireFloatInput(0)))
    return std::nullopt;
  RankedTensorType xType = ctx.inputType(0), wType = ctx.inputType(1), rType = ctx.inputType(2);
  if (!xType || !wType || !rType)
    return std::nullopt;
  r.type = xType.getElementType();
  std::string direction = ctx.stringAttr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return fail("direction must be forward, reverse or bidirectional, not '" + direction + "'");
  r.directions = direction == "bidirectional" ? 2 : 1;
  r.reverse = direction == "reverse";
  int64_t layout = ctx.intAttr("layout", 0);
  if (layout != 0 && layout != 1)
    return fail("layout must be 0 or 1, not " + llvm::Twine(layout));
  r.batchFirst = layout == 1;
  if (xType.getRank() != 3)
    return fail("X must be 3-D ([seq_length, batch_size, input_size], or batch first with "
                "layout=1), not rank " + llvm::Twine(xType.getRank()));
  r.seq = xType.getDimSize(r.batchFirst ? 1 : 0);
  r.batch = xType.getDimSize(r.batchFirst ? 0 : 1);
  r.inputSize = xType.getDimSize(2);
  if (r.seq < 1 || r.batch < 1)
    return fail("X has no time steps or no batch rows");
  if (r.seq * r.directions > kMaxUnrolledSteps)
    return (void)ctx.unsupported(llvm::Twine(r.seq * r.directions) + " unrolled steps (" +
                                 llvm::Twine(r.seq) + " time steps x " +
                                 llvm::Twine(r.directions) + " directions; plait unrolls at "
                                 "most " + llvm::Twine(kMaxUnrolledSteps) + ")"),
           std::nullopt;
  if (wType.getRank() != 3 || wType.getDimSize(0) != r.directions ||
      wType.getDimSize(1) % r.gates != 0 || wType.getDimSize(2) != r.inputSize)
    return fail("W must be [" + llvm::Twine(r.directions) + ", " + llvm::Twine(r.gates) +
                "*hidden_size, " + llvm::Twine(r.inputSize) + "]");
  r.hidden = wType.getDimSize(1) / r.gates;
  if (ctx.hasAttr("hidden_size") && ctx.intAttr("hidden_size", 0) != r.hidden)
    return fail("hidden_size " + llvm::Twine(ctx.intAttr("hidden_size", 0)) +
                " does not match W's " + llvm::Twine(r.gates) + "*" + llvm::Twine(r.hidden) +
                " rows");
  if (r.hidden < 1)
    return fail("W has no rows");
  auto checkShape = [&](unsigned i, llvm::ArrayRef<int64_t> want,
                        llvm::StringRef name) -> bool {
    if (!ctx.hasInput(i))
      return true;
    RankedTensorType t = ctx.inputType(i);
    if (!t)
      return false;
    if (t.getShape() == want && t.getElementType() == r.type)
      return true;
    std::string dims;
    for (int64_t d : want)
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    (void)ctx.error(name + " must be [" + dims + "] of X's element type");
    return false;
  };
  const int64_t d = r.directions, g = r.gates, h = r.hidden;
  llvm::SmallVector<int64_t> stateShape =
      r.batchFirst ? llvm::SmallVector<int64_t>{r.batch, d, h}
                   : llvm::SmallVector<int64_t>{d, r.batch, h};
  if (wType.getElementType() != r.type)
    return fail("W must have X's element type");
  if (!checkShape(2, {d, g * h, h}, "R") || !checkShape(3, {d, 2 * g * h}, "B") ||
      !checkShape(5, stateShape, "initial_h") ||
      (cell == Cell::Lstm && (!checkShape(6, stateShape, "initial_c") ||
                              !checkShape(7, {d, 3 * h}, "P"))))
    return std::nullopt;
  if (ctx.hasInput(4)) {
    RankedTensorType lens = ctx.inputType(4);
    if (!lens)
      return std::nullopt;
    if (lens.getShape() != llvm::ArrayRef<int64_t>{r.batch} ||
        !lens.getElementType().isInteger(32))
      return fail("sequence_lens must be int32 [" + llvm::Twine(r.batch) + "]");
  }
  if (ctx.hasAttr("clip")) {
    double clip = ctx.floatAttr("clip", 0);
    if (!(clip > 0))
      return fail("clip must be positive");
    r.clip = clip;
  }
  if (cell == Cell::Lstm && ctx.intAttr("input_forget", 0) != 0)
    return (void)ctx.unsupported("input_forget=1 (coupled input and forget gates)"),
           std::nullopt;
  r.linearBeforeReset = cell == Cell::Gru && ctx.intAttr("linear_before_reset", 0) != 0;

  // Activations: the attribute's names (the default per cell otherwise), one set per direction.
  llvm::SmallVector<std::string> names = ctx.stringsAttr("activations");
  if (names.empty()) {
    const char *const defaults[] = {"Sigmoid", "Tanh", "Tanh"};
    for (int64_t k = 0; k < d; ++k)
      for (int64_t f = 0; f < r.functions; ++f)
        names.push_back(cell == Cell::Rnn ? "Tanh" : defaults[f]);
  }
  if (int64_t(names.size()) != r.functions * d)
    return fail("activations needs " + llvm::Twine(r.functions * d) + " names (" +
                llvm::Twine(r.functions) + " per direction), not " +
                llvm::Twine(names.size()));
  llvm::SmallVector<double> alphas = ctx.floatsAttr("activation_alpha"),
                            betas = ctx.floatsAttr("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &name : names) {
    const ActivationInfo *info = nullptr;
    for (const ActivationInfo &a : kActivations)
      if (llvm::StringRef(name).equals_insensitive(a.name))
        info = &a;
    if (!info)
      return (void)ctx.unsupported("activation '" + name + "'"), std::nullopt;
    Activation a{info->name, info->alpha, info->beta};
    if (info->takesAlpha && nextAlpha < alphas.size())
      a.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size())
      a.beta = betas[nextBeta++];
    r.activations.push_back(a);
  }
  return r;
}

/// f(x) for activation `a`, with x clipped to [-clip, clip] first when the layer has a clip.
Value activate(NodeContext &ctx, const Recurrence &r, const Activation &a, Value x) {
  if (!x)
    return x;
  if (r.clip)
    x = ctx.create<ClampOp>({x}, {ctx.f64Attr("min", -*r.clip), ctx.f64Attr("max", *r.clip)});
  if (!x)
    return x;
  llvm::StringRef name = a.name;
  auto scalar = [&](double v) { return ctx.scalar(v, r.type); };
  if (name == "Relu")
    return ctx.create<ReluOp>({x});
  if (name == "Tanh")
    return ctx.create<TanhOp>({x});
  if (name == "Sigmoid")
    return ctx.create<SigmoidOp>({x});
  if (name == "Softplus")
    return ctx.create<SoftplusOp>({x});
  if (name == "LeakyRelu")
    return ctx.create<LeakyReluOp>({x}, {ctx.f64Attr("alpha", a.alpha)});
  if (name == "Elu")
    return ctx.create<EluOp>({x}, {ctx.f64Attr("alpha", a.alpha)});
  if (name == "HardSigmoid")
    return ctx.create<HardSigmoidOp>({x}, {ctx.f64Attr("alpha", a.alpha),
                                           ctx.f64Attr("beta", a.beta)});
  if (name == "Affine") {
    Value y = ctx.create<MulOp>({x, scalar(a.alpha)});
    return y ? ctx.create<AddOp>({y, scalar(a.beta)}) : y;
  }
  if (name == "ScaledTanh") {
    Value y = ctx.create<MulOp>({x, scalar(a.beta)});
    y = y ? ctx.create<TanhOp>({y}) : y;
    return y ? ctx.create<MulOp>({y, scalar(a.alpha)}) : y;
  }
  if (name == "ThresholdedRelu") { // x where x >= alpha (the recurrent ops' definition)
    Value keep = ctx.create<GreaterEqualOp>({x, scalar(a.alpha)});
    return keep ? ctx.create<WhereOp>({keep, x, scalar(0.0)}) : keep;
  }
  // Softsign: x / (1 + |x|).
  Value d = ctx.create<AbsOp>({x});
  d = d ? ctx.create<AddOp>({d, scalar(1.0)}) : d;
  return d ? ctx.create<DivOp>({x, d}) : d;
}

/// Direction `k`'s slice of a per-direction operand [D, ...], as [...].
Value directionOf(NodeContext &ctx, Value v, int64_t k) {
  llvm::SmallVector<int64_t> shape(shapeOf(v).drop_front());
  Value s = shapeOf(v)[0] == 1 ? v : sliceAlong(ctx, v, 0, k, k + 1, 1);
  return s ? ctx.reshape(s, shape) : s;
}

/// Columns [from, to) of a 2-D value.
Value columns(NodeContext &ctx, Value v, int64_t from, int64_t to) {
  return sliceAlong(ctx, v, 1, from, to, 1);
}

/// The outputs of one direction: the hidden state written at each time step (in time order)
/// and the final states.
struct DirectionResult {
  llvm::SmallVector<Value> written;
  Value lastH, lastC;
};

/// Unrolls direction `k` over X (time-major [T, B, I]).
std::optional<DirectionResult> unrollDirection(NodeContext &ctx, const Recurrence &r, int64_t k,
                                               Value x, Value lens) {
  const int64_t t = r.seq, b = r.batch, h = r.hidden, g = r.gates;
  auto fn = [&](int64_t f) -> const Activation & { return r.activations[k * r.functions + f]; };
  Value w = directionOf(ctx, ctx.input(1), k);      // [G*H, I]
  Value rec = w ? directionOf(ctx, ctx.input(2), k) : Value(); // [G*H, H]
  if (!rec)
    return std::nullopt;
  // The bias added to the input projection: Wb + Rb, except that a GRU whose reset gate
  // applies after the recurrent product keeps Rbh apart (it is added inside r * (...)).
  Value bias, rbh;
  if (ctx.hasInput(3)) {
    Value both = directionOf(ctx, ctx.input(3), k); // [2*G*H]
    Value wb = both ? sliceAlong(ctx, both, 0, 0, g * h, 1) : Value();
    Value rb = wb ? sliceAlong(ctx, both, 0, g * h, 2 * g * h, 1) : Value();
    if (!rb)
      return std::nullopt;
    if (r.linearBeforeReset) {
      Value rzr = sliceAlong(ctx, rb, 0, 0, 2 * h, 1);
      rbh = rzr ? sliceAlong(ctx, rb, 0, 2 * h, 3 * h, 1) : Value();
      Value zeros = rbh ? ctx.constant(HostTensor::splat(*kindOf(r.type), {h}, 0.0)) : Value();
      rb = zeros ? ctx.create<ConcatOp>({rzr, zeros}, {ctx.i64Attr("axis", 0)}) : Value();
    }
    bias = rb ? ctx.create<AddOp>({wb, rb}) : Value();
    if (!bias)
      return std::nullopt;
  }
  // Every step's input projection at once: [T*B, I] x [G*H, I]^T + bias.
  llvm::SmallVector<Value> gemmOperands{ctx.reshape(x, {t * b, r.inputSize}), w};
  if (bias)
    gemmOperands.push_back(bias);
  if (!gemmOperands[0])
    return std::nullopt;
  Value projected = ctx.create<GemmOp>(gemmOperands, {ctx.boolAttr("trans_b", true)});
  projected = projected ? ctx.reshape(projected, {t, b, g * h}) : Value();
  if (!projected)
    return std::nullopt;

  auto initial = [&](unsigned i) -> Value {
    if (!ctx.hasInput(i))
      return ctx.constant(HostTensor::splat(*kindOf(r.type), {b, h}, 0.0));
    Value v = ctx.input(i);
    if (v && r.batchFirst)
      v = ctx.create<TransposeOp>({v}, {ctx.arrayAttr("perm", {1, 0, 2})});
    return v ? directionOf(ctx, v, k) : v;
  };
  Value hPrev = initial(5);
  Value cPrev = r.cell == Cell::Lstm ? initial(6) : Value();
  Value pi, po, pf;
  if (r.cell == Cell::Lstm && ctx.hasInput(7)) {
    Value p = directionOf(ctx, ctx.input(7), k); // [3H]: i, o, f
    pi = p ? sliceAlong(ctx, p, 0, 0, h, 1) : Value();
    po = pi ? sliceAlong(ctx, p, 0, h, 2 * h, 1) : Value();
    pf = po ? sliceAlong(ctx, p, 0, 2 * h, 3 * h, 1) : Value();
    if (!pf)
      return std::nullopt;
  }
  if (!hPrev || (r.cell == Cell::Lstm && !cPrev))
    return std::nullopt;
  Value rzr, rh; // GRU: R's update and reset rows, and its hidden rows
  if (r.cell == Cell::Gru) {
    rzr = sliceAlong(ctx, rec, 0, 0, 2 * h, 1);
    rh = rzr ? sliceAlong(ctx, rec, 0, 2 * h, 3 * h, 1) : Value();
    if (!rh)
      return std::nullopt;
  }
  auto recurrent = [&](Value state, Value weights, Value onto) {
    llvm::SmallVector<Value> operands{state, weights};
    if (onto)
      operands.push_back(onto);
    return ctx.create<GemmOp>(operands, {ctx.boolAttr("trans_b", true)});
  };

  DirectionResult out;
  out.written.resize(size_t(t));
  bool reverse = r.reverse || k == 1;
  for (int64_t step = 0; step < t; ++step) {
    int64_t s = reverse ? t - 1 - step : step;
    Value xs = sliceAlong(ctx, projected, 0, s, s + 1, 1);
    xs = xs ? ctx.reshape(xs, {b, g * h}) : Value();
    if (!xs)
      return std::nullopt;
    Value hNext, cNext;
    if (r.cell == Cell::Rnn) {
      hNext = activate(ctx, r, fn(0), recurrent(hPrev, rec, xs));
    } else if (r.cell == Cell::Lstm) {
      Value gates = recurrent(hPrev, rec, xs); // [B, 4H]: i o f c
      auto gate = [&](int64_t j) { return gates ? columns(ctx, gates, j * h, (j + 1) * h) : gates; };
      auto peep = [&](Value pre, Value p, Value c) {
        Value pc = pre && p ? ctx.create<MulOp>({p, c}) : Value();
        return !p ? pre : pc ? ctx.create<AddOp>({pre, pc}) : pc;
      };
      Value i = activate(ctx, r, fn(0), peep(gate(0), pi, cPrev));
      Value f = activate(ctx, r, fn(0), peep(gate(2), pf, cPrev));
      Value c = activate(ctx, r, fn(1), gate(3));
      Value fc = i && f && c ? ctx.create<MulOp>({f, cPrev}) : Value();
      Value ic = fc ? ctx.create<MulOp>({i, c}) : Value();
      cNext = ic ? ctx.create<AddOp>({fc, ic}) : Value();
      Value o = cNext ? activate(ctx, r, fn(0), peep(gate(1), po, cNext)) : Value();
      Value hc = o ? activate(ctx, r, fn(2), cNext) : Value();
      hNext = hc ? ctx.create<MulOp>({o, hc}) : Value();
    } else { // GRU: z r h
      Value zr = recurrent(hPrev, rzr, columns(ctx, xs, 0, 2 * h));
      Value z = zr ? activate(ctx, r, fn(0), columns(ctx, zr, 0, h)) : Value();
      Value reset = z ? activate(ctx, r, fn(0), columns(ctx, zr, h, 2 * h)) : Value();
      Value xh = reset ? columns(ctx, xs, 2 * h, 3 * h) : Value();
      Value pre;
      if (!xh)
        return std::nullopt;
      if (r.linearBeforeReset) {
        Value hr = recurrent(hPrev, rh, rbh); // + Rbh, broadcast by the GEMM's c
        Value gated = hr ? ctx.create<MulOp>({reset, hr}) : Value();
        pre = gated ? ctx.create<AddOp>({xh, gated}) : Value();
      } else {
        Value rhPrev = ctx.create<MulOp>({reset, hPrev});
        pre = rhPrev ? recurrent(rhPrev, rh, xh) : Value();
      }
      Value cand = activate(ctx, r, fn(1), pre);
      // (1 - z) * cand + z * hPrev, as cand + z * (hPrev - cand).
      Value diff = cand ? ctx.create<SubOp>({hPrev, cand}) : Value();
      Value zd = diff ? ctx.create<MulOp>({z, diff}) : Value();
      hNext = zd ? ctx.create<AddOp>({cand, zd}) : Value();
    }
    if (!hNext || (r.cell == Cell::Lstm && !cNext))
      return std::nullopt;
    if (lens) {
      // Steps at or past a sequence's length keep its states and write zeros.
      Value valid = ctx.create<LessOp>(
          {ctx.scalar(double(s), IntegerType::get(ctx.context(), 64)), lens}); // [B, 1]
      Value written =
          valid ? ctx.create<WhereOp>({valid, hNext, ctx.scalar(0.0, r.type)}) : Value();
      hNext = written ? ctx.create<WhereOp>({valid, hNext, hPrev}) : Value();
      if (cNext && hNext)
        cNext = ctx.create<WhereOp>({valid, cNext, cPrev});
      if (!hNext || (r.cell == Cell::Lstm && !cNext))
        return std::nullopt;
      out.written[size_t(s)] = written;
    } else {
      out.written[size_t(s)] = hNext;
    }
    hPrev = hNext;
    cPrev = cNext;
  }
  out.lastH = hPrev;
  out.lastC = cPrev;
  return out;
}

/// Stacks per-direction [B, H] states into [D, B, H] (or [B, D, H] batch first).
Value stackStates(NodeContext &ctx, const Recurrence &r, llvm::ArrayRef<Value> states) {
  llvm::SmallVector<Value> parts;
  for (Value s : states) {
    Value p = ctx.reshape(s, {1, r.batch, r.hidden});
    if (!p)
      return p;
    parts.push_back(p);
  }
  Value v = parts.size() == 1 ? parts[0] : ctx.create<ConcatOp>(parts, {ctx.i64Attr("axis", 0)});
  if (v && r.batchFirst)
    v = ctx.create<TransposeOp>({v}, {ctx.arrayAttr("perm", {1, 0, 2})});
  return v;
}

LogicalResult importRecurrent(NodeContext &ctx, Cell cell) {
  std::optional<Recurrence> r = readRecurrence(ctx, cell);
  if (!r)
    return failure();
  Value x = ctx.input(0);
  if (x && r->batchFirst)
    x = ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", {1, 0, 2})});
  if (!x)
    return failure();
  Value lens;
  if (ctx.hasInput(4)) {
    // Lengths all equal to the sequence's, known at import, need no masks.
    const HostTensor *folded = ctx.foldedInput(4);
    bool full = folded && llvm::all_of(llvm::seq<int64_t>(0, folded->numElements()),
                                       [&](int64_t i) { return folded->getInt(i) == r->seq; });
    if (!full) {
      Value v = ctx.input(4);
      v = v ? ctx.cast(v, IntegerType::get(ctx.context(), 64)) : Value();
      lens = v ? ctx.reshape(v, {r->batch, 1}) : Value();
      if (!lens)
        return failure();
    }
  }
  llvm::SmallVector<DirectionResult> results;
  for (int64_t k = 0; k < r->directions; ++k) {
    std::optional<DirectionResult> d = unrollDirection(ctx, *r, k, x, lens);
    if (!d)
      return failure();
    results.push_back(std::move(*d));
  }
  if (ctx.hasOutput(0)) {
    // Y: [T, D, B, H] (batch first: [B, T, D, H]).
    llvm::SmallVector<Value> steps;
    for (int64_t s = 0; s < r->seq; ++s)
      for (const DirectionResult &d : results) {
        Value v = ctx.reshape(d.written[size_t(s)], {1, 1, r->batch, r->hidden});
        if (!v)
          return failure();
        steps.push_back(v);
      }
    llvm::SmallVector<Value> perStep;
    for (int64_t s = 0; s < r->seq; ++s) {
      llvm::ArrayRef<Value> dirs(steps.data() + s * r->directions, size_t(r->directions));
      Value v = dirs.size() == 1 ? dirs[0] : ctx.create<ConcatOp>(dirs, {ctx.i64Attr("axis", 1)});
      if (!v)
        return failure();
      perStep.push_back(v);
    }
    Value y = perStep.size() == 1 ? perStep[0]
                                  : ctx.create<ConcatOp>(perStep, {ctx.i64Attr("axis", 0)});
    if (y && r->batchFirst)
      y = ctx.create<TransposeOp>({y}, {ctx.arrayAttr("perm", {2, 0, 1, 3})});
    if (!y)
      return failure();
    ctx.setOutput(0, y);
  }
  llvm::SmallVector<Value> lastH, lastC;
  for (const DirectionResult &d : results) {
    lastH.push_back(d.lastH);
    lastC.push_back(d.lastC);
  }
  if (ctx.hasOutput(1)) {
    Value yh = stackStates(ctx, *r, lastH);
    if (!yh)
      return failure();
    ctx.setOutput(1, yh);
  }
  if (cell == Cell::Lstm && ctx.hasOutput(2)) {
    Value yc = stackStates(ctx, *r, lastC);
    if (!yc)
      return failure();
    ctx.setOutput(2, yc);
  }
  return success();
}

LogicalResult importRnn(NodeContext &ctx) { return importRecurrent(ctx, Cell::Rnn); }
LogicalResult importGru(NodeContext &ctx) { return importRecurrent(ctx, Cell::Gru); }
LogicalResult importLstm(NodeContext &ctx) { return importRecurrent(ctx, Cell::Lstm); }

} // namespace

void registerRecurrentOps(OpImporterMap &map) {
  map["RNN"] = importRnn;
  map["GRU"] = importGru;
  map["LSTM"] = importLstm;
}

} // namespace plait::onnx_import
