// -plait-fuse-attention: the decomposed attention of an imported model becomes one
// plait.attention op.
//
// Exporters write scaled-dot-product attention as a chain of small ops over [B, H, S, T]
// scores: matmul(q, k^T), a multiply (or divide) by the scale, a where() with a mask, a
// softmax over the keys and a matmul with v, with the heads split out of [B, S, H, D] by
// transposes. In a training step each of those ops keeps its [B, H, S, T] result for the
// backward. plait.attention computes the same thing from the [B, S, H, D] operands a block
// of query rows at a time, and keeps only the output and a log-sum-exp per row; its
// gradient recomputes the scores. The rewrite, per softmax over the last axis:
//   matmul(transpose(q, [0,2,1,3]), transpose(k, [0,2,3,1]))   scores [B, H, S, T]
//   [mul/div by a scalar constant]                              the scale (else 1)
//   [where(causal mask, -inf, .), where(seen, ., -inf)          a causal mask
//    or . + (0 where seen, -inf where hidden)]
//   softmax(axis = -1)
//   matmul(., transpose(v, [0,2,1,3]))                          [B, H, S, E]
// -> plait.attention(q, k, v) [B, S, H, E], transposed back for the readers that want
// [B, H, S, E] (a reader that transposes it to [B, S, H, E] reads the result directly).
// q and k may also be multiplied or divided by scalar constants on their way (folded into
// the scale). PyTorch's nn.MultiheadAttention exports the same chain over rank-3 [N, S, T]
// scores of N = B * H heads, split out of [S, N, D] tensors by transposes (or read as
// [N, S, D] tensors); the op reads those as [1, S, N, D] (or [N, S, 1, D]) through a
// reshape, which moves no data.
// The mask must be "key j is hidden from query i when j > i" (causal), as a constant or as
// trilu(constant true, upper, k = 1), and its fill -inf or a float no larger than -1e30
// (added: a constant of 0 and such fills);
// every intermediate must have no other reader. With --device cuda (the module's
// `plait.device`), heads longer than the CUDA kernels take (256) stay decomposed too.
// Anything else stays decomposed, and the module records why in `plait.fuse_attention`
// {fused, left, reasons} for the report. plait-compile runs it before building the training
// step unless --no-fused-attention or --no-fusion.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"
#include "runtime/cpu/Workspace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <map>
#include <optional>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `v` as a multiply or divide of `other` (v's type) by a scalar constant `c`, the constant on
/// either side of a multiply.
struct ScalarFactor {
  Value other;
  double c;
  bool divide;
  double applied(double x) const { return divide ? x / c : x * c; }
};
std::optional<ScalarFactor> scalarFactor(Value v) {
  if (auto mul = v.getDefiningOp<MulOp>()) {
    std::optional<double> c = splatValue(mul.getRhs());
    Value other = mul.getLhs();
    if (!c) {
      c = splatValue(mul.getLhs());
      other = mul.getRhs();
    }
    if (!c || typeOf(other) != typeOf(v))
      return std::nullopt;
    return ScalarFactor{other, *c, false};
  }
  auto div = v.getDefiningOp<DivOp>();
  std::optional<double> c = div ? splatValue(div.getRhs()) : std::nullopt;
  if (!c || *c == 0 || typeOf(div.getLhs()) != typeOf(v))
    return std::nullopt;
  return ScalarFactor{div.getLhs(), *c, true};
}

/// The source of a head operand: follows transposes back from `v`, composing their
/// permutations, and with `scale` also multiplies or divides by a scalar constant (folded
/// into *scale); returns the first value that is neither when the composed permutation
/// (source -> v) equals `want`, a null Value otherwise.
Value headSource(Value v, ArrayRef<int64_t> want, double *scale) {
  SmallVector<int64_t> perm; // v[d] = source[perm[d]]
  for (int64_t d = 0; d < typeOf(v).getRank(); ++d)
    perm.push_back(d);
  while (true) {
    if (auto t = v.getDefiningOp<TransposeOp>()) {
      ArrayRef<int64_t> p = t.getPerm(); // t[d] = input[p[d]]
      for (int64_t &d : perm)
        d = p[d];
      v = t.getX();
      continue;
    }
    std::optional<ScalarFactor> factor = scale ? scalarFactor(v) : std::nullopt;
    if (!factor)
      break;
    *scale = factor->applied(*scale);
    v = factor->other;
  }
  return ArrayRef<int64_t>(perm) == want ? v : Value();
}

/// True when `type` is [S, T], or [S, T] after leading 1s: one mask for every batch entry
/// and head.
bool isMaskShape(RankedTensorType type, int64_t s, int64_t t) {
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || shape[shape.size() - 2] != s || shape.back() != t)
    return false;
  return llvm::all_of(shape.drop_back(2), [](int64_t d) { return d == 1; });
}

/// True when `v` is a constant whose every entry (query i, key j) of its [S, T] values in
/// order (t keys a row) passes ok(i, j, value).
template <typename T, typename Ok> bool everyEntry(Value v, int64_t t, Ok ok) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense)
    return false;
  int64_t index = 0;
  for (T value : dense.getValues<T>()) {
    if (!ok(index / t, index % t, value))
      return false;
    ++index;
  }
  return true;
}

/// True when `v` is an i1 [S, T] (or with leading 1s) that is true exactly where key j is
/// hidden from query i (`hidden`: j > i), or exactly where it is seen (j <= i): a constant
/// with those values, or the triangle of a constant all true that trilu keeps (upper, k = 1
/// for the hidden keys; lower, k = 0 for the seen ones).
bool isCausalMask(Value v, int64_t s, int64_t t, bool hidden) {
  auto type = typeOf(v);
  if (!type.getElementType().isInteger(1) || !isMaskShape(type, s, t))
    return false;
  if (auto trilu = v.getDefiningOp<TriluOp>()) {
    auto ones = trilu.getX().getDefiningOp<ConstantOp>();
    auto dense = ones ? dyn_cast<DenseElementsAttr>(ones.getValue()) : DenseElementsAttr();
    return trilu.getUpper() == hidden && trilu.getK() == (hidden ? 1 : 0) && dense &&
           dense.isSplat() && dense.getSplatValue<bool>();
  }
  return everyEntry<bool>(
      v, t, [&](int64_t i, int64_t j, bool value) { return value == (hidden ? j > i : j <= i); });
}

/// True when `v` is a float constant [S, T] (or with leading 1s) that adds a causal mask to
/// the scores: 0 where key j is seen (j <= i), -inf or a float no larger than -1e30 where it
/// is hidden (j > i). PyTorch's generate_square_subsequent_mask, added by baddbmm.
bool isAdditiveCausalMask(Value v, int64_t s, int64_t t) {
  auto type = typeOf(v);
  if (!isa<FloatType>(type.getElementType()) || !isMaskShape(type, s, t))
    return false;
  return everyEntry<APFloat>(v, t, [](int64_t i, int64_t j, const APFloat &value) {
    double d = value.convertToDouble();
    return j > i ? d <= -1e30 : d == 0;
  });
}

/// How q, k and v hold their heads. kHeads: [B, S, H, D], the attention op's own layout.
/// The rank-3 forms hold N = B * H heads, as PyTorch's nn.MultiheadAttention exports them:
/// kSeqMajor [S, N, D] (the op reads it as [1, S, N, D]), kBatchMajor [N, S, D] (as
/// [N, S, 1, D]); both are reshapes, which move no data.
enum class Layout { kHeads, kSeqMajor, kBatchMajor };

/// One softmax's attempt: the attention op's pieces, or the reason it stays decomposed.
struct Match {
  Value q, k, v; // in `layout`
  Layout layout = Layout::kHeads;
  double scale = 1.0;
  bool causal = false;
  DropoutMaskOp dropout;          // the probabilities' dropout mask, if any
  MatmulOp output;                // matmul(p, v)
  SmallVector<Operation *> chain; // the decomposed ops, consumer first
  std::string reason;
};

/// `cuda`: the target's kernels are CUDA's, whose heads are at most kCudaAttentionMaxHeadDim
/// long and which take no dropout.
Match matchAttention(SoftmaxOp softmax, bool cuda) {
  const int64_t maxHeadDim = cuda ? rt::kCudaAttentionMaxHeadDim : 0;
  Match m;
  auto fail = [&](std::string why) {
    m.reason = std::move(why);
    return m;
  };
  auto type = typeOf(softmax.getResult());
  const int64_t rank = type.getRank();
  if ((rank != 3 && rank != 4) || (softmax.getAxis() != -1 && softmax.getAxis() != rank - 1))
    return fail("softmax is not over the last axis of a rank-3 or rank-4 tensor");
  if (!type.getElementType().isF32() && !type.getElementType().isBF16())
    return fail("element type is not f32 or bf16");
  const int64_t s = type.getDimSize(rank - 2), t = type.getDimSize(rank - 1);
  if (!softmax.getResult().hasOneUse())
    return fail("the probabilities have other readers");
  Value probs = softmax.getResult();
  // Dropout on the probabilities: p * dropout_mask (either order), the mask drawn at p's shape.
  if (auto mul = dyn_cast<MulOp>(*probs.getUsers().begin())) {
    Value mask = mul.getLhs() == probs ? mul.getRhs() : mul.getLhs();
    auto draw = mask.getDefiningOp<DropoutMaskOp>();
    if (!draw || mask.getType() != probs.getType() || mul.getType() != probs.getType() ||
        !mul.getResult().hasOneUse())
      return fail("the probabilities are multiplied by something other than a dropout mask");
    if (cuda)
      return fail("dropout on the probabilities (the CUDA kernels take none)");
    m.dropout = draw;
    m.chain.push_back(mul);
    probs = mul.getResult();
  }
  auto pv = dyn_cast<MatmulOp>(*probs.getUsers().begin());
  if (!pv || pv.getLhs() != probs || pv.getTransposeLhs() || pv.getTransposeRhs() ||
      pv.getLhsPerm() || pv.getRhsPerm() || pv.getResultPerm() || pv.getBias())
    return fail("the probabilities are not multiplied by v");
  m.output = pv;
  m.chain.push_back(softmax);

  Value x = softmax.getX();
  if (auto where = x.getDefiningOp<WhereOp>()) {
    if (!x.hasOneUse())
      return fail("the masked scores have other readers");
    // where(hidden, -inf, scores), or where(seen, scores, -inf) as Hugging Face writes it
    // (its fill the lowest float).
    auto isFill = [](Value v) {
      std::optional<double> fill = splatValue(v);
      return fill && *fill <= -1e30;
    };
    bool hiddenForm = isFill(where.getX());
    if (!hiddenForm && !isFill(where.getY()))
      return fail("the mask's fill is not -inf");
    if (!isCausalMask(where.getCond(), s, t, hiddenForm))
      return fail("the mask is not a causal mask");
    m.causal = true;
    m.chain.push_back(where);
    x = hiddenForm ? where.getY() : where.getX();
  } else if (auto add = x.getDefiningOp<AddOp>()) {
    // scores + mask, the mask 0 where a key is seen and -inf where it is hidden (PyTorch's
    // MultiheadAttention with a float attn_mask: baddbmm(mask, q, k^T)).
    if (!x.hasOneUse())
      return fail("the masked scores have other readers");
    Value scores = add.getLhs(), mask = add.getRhs();
    if (typeOf(scores) != typeOf(x))
      std::swap(scores, mask);
    if (typeOf(scores) != typeOf(x) || !isAdditiveCausalMask(mask, s, t))
      return fail("the scores are added to something other than a causal mask");
    m.causal = true;
    m.chain.push_back(add);
    x = scores;
  }
  if (isa_and_nonnull<MulOp, DivOp>(x.getDefiningOp())) {
    std::optional<ScalarFactor> factor = scalarFactor(x);
    if (!factor || !x.hasOneUse())
      return fail("the scores are scaled by something other than a scalar constant");
    m.scale = factor->applied(1.0);
    m.chain.push_back(x.getDefiningOp());
    x = factor->other;
  }
  auto qk = x.getDefiningOp<MatmulOp>();
  if (!qk || !x.hasOneUse() || qk.getTransposeLhs() || qk.getTransposeRhs() || qk.getLhsPerm() ||
      qk.getRhsPerm() || qk.getResultPerm() || qk.getBias())
    return fail("the scores are not a plain matmul of q and k");
  m.chain.push_back(qk);
  // Per layout, the permutations from the sources to q, k^T and v as the matmuls read them.
  struct Form {
    Layout layout;
    SmallVector<int64_t, 4> q, kt, v;
  };
  SmallVector<Form, 2> forms;
  if (rank == 4)
    forms.push_back({Layout::kHeads, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}});
  else
    forms.append({Form{Layout::kSeqMajor, {1, 0, 2}, {1, 2, 0}, {1, 0, 2}},
                  Form{Layout::kBatchMajor, {0, 1, 2}, {0, 2, 1}, {0, 1, 2}}});
  double operandScale = 1.0; // q's and k's scalar factors
  for (const Form &form : forms) {
    operandScale = 1.0;
    m.layout = form.layout;
    m.q = headSource(qk.getLhs(), form.q, &operandScale);
    m.k = headSource(qk.getRhs(), form.kt, &operandScale);
    m.v = headSource(pv.getRhs(), form.v, nullptr);
    if (m.q && m.k && m.v)
      break;
  }
  if (!m.q || !m.k || !m.v)
    return fail(rank == 4 ? "q, k and v are not [batch, seq, heads, dim] tensors split into "
                            "heads by transposes"
                          : "q, k and v are not [seq, heads, dim] or [heads, seq, dim] tensors");
  m.scale *= operandScale;
  if (!(std::isfinite(m.scale) && m.scale > 0))
    return fail("the scale is not a finite number > 0");
  if (maxHeadDim > 0 &&
      (typeOf(m.q).getShape().back() > maxHeadDim || typeOf(m.v).getShape().back() > maxHeadDim))
    return fail("a head dimension exceeds the CUDA kernel's " + std::to_string(maxHeadDim));
  if (typeOf(m.q).getElementType() != type.getElementType() ||
      typeOf(m.k).getElementType() != type.getElementType() ||
      typeOf(m.v).getElementType() != type.getElementType())
    return fail("q, k and v differ in element type from the scores");
  return m;
}

/// `v` ([S, N, D] or [N, S, D] in `layout`) as the attention op reads it, [B, S, H, D]: a
/// reshape (of the reshape's operand where `v` is one already).
Value asHeads(OpBuilder &b, Location loc, Value v, Layout layout) {
  if (layout == Layout::kHeads)
    return v;
  ArrayRef<int64_t> d = typeOf(v).getShape();
  SmallVector<int64_t, 4> shape = layout == Layout::kSeqMajor
                                      ? SmallVector<int64_t, 4>{1, d[0], d[1], d[2]}
                                      : SmallVector<int64_t, 4>{d[0], d[1], 1, d[2]};
  if (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getOperand();
  return b.create<ReshapeOp>(loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v);
}

/// Replaces the matched chain with plait.attention.
void rewrite(Match &m) {
  MatmulOp pv = m.output;
  OpBuilder b(pv);
  Location loc = pv.getLoc();
  Value q4 = asHeads(b, loc, m.q, m.layout), k4 = asHeads(b, loc, m.k, m.layout),
        v4 = asHeads(b, loc, m.v, m.layout);
  auto q = typeOf(q4), v = typeOf(v4);
  auto outType = RankedTensorType::get({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                                        v.getDimSize(3)},
                                       q.getElementType());
  auto lseType = RankedTensorType::get({q.getDimSize(0), q.getDimSize(2), q.getDimSize(1)},
                                       b.getF32Type());
  auto attention = b.create<AttentionOp>(
      loc, TypeRange{outType, lseType}, q4, k4, v4, m.dropout ? m.dropout.getStep() : Value(),
      b.getF64FloatAttr(m.scale), b.getBoolAttr(m.causal),
      b.getF64FloatAttr(m.dropout ? m.dropout.getRatio().convertToDouble() : 0.0),
      b.getI64IntegerAttr(m.dropout ? m.dropout.getSeed() : 0),
      b.getI64IntegerAttr(m.dropout ? m.dropout.getStream() : 0));
  Value out = attention.getOut();
  // The output in its sources' layout ([B, S, H, E], [S, N, E] or [N, S, E]); readers that
  // transpose the heads back to it read that, the others get the decomposed layout
  // ([B, H, S, E] or [N, S, E]).
  SmallVector<int64_t, 4> back = {0, 2, 1, 3}; // the decomposed layout -> the sources'
  if (m.layout != Layout::kHeads) {
    ArrayRef<int64_t> d = typeOf(pv.getResult()).getShape(); // [N, S, E]
    SmallVector<int64_t, 3> shape = {d[0], d[1], d[2]};
    if (m.layout == Layout::kSeqMajor)
      shape = {d[1], d[0], d[2]};
    back = {1, 0, 2};
    out = b.create<ReshapeOp>(loc, RankedTensorType::get(shape, q.getElementType()), out);
  }
  Value heads = m.layout == Layout::kBatchMajor ? out : Value();
  SmallVector<Operation *> dead;
  for (OpOperand &use : llvm::make_early_inc_range(pv.getResult().getUses())) {
    auto t = dyn_cast<TransposeOp>(use.getOwner());
    if (t && m.layout != Layout::kBatchMajor && t.getPerm() == ArrayRef<int64_t>(back)) {
      t.getResult().replaceAllUsesWith(out);
      dead.push_back(t);
      continue;
    }
    if (!heads)
      heads = b.create<TransposeOp>(loc, out, b.getDenseI64ArrayAttr(back));
    use.set(heads);
  }
  // The chain, consumer first, then the transposes, reshapes, scalings, constants and mask
  // (trilu) that fed it once nothing else reads them.
  dead.push_back(pv);
  dead.append(m.chain.begin(), m.chain.end());
  llvm::SmallPtrSet<Operation *, 8> queued(dead.begin(), dead.end());
  for (size_t i = 0; i < dead.size(); ++i) {
    SmallVector<Value> operands(dead[i]->getOperands());
    dead[i]->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp();
          def &&
          isa<TransposeOp, ConstantOp, TriluOp, MulOp, DivOp, ReshapeOp, DropoutMaskOp, HyperOp>(
              def) &&
          def->use_empty() && queued.insert(def).second)
        dead.push_back(def);
  }
}

/// What plait-fuse-attention fused: attentions, those of them causal and those drawing their
/// probabilities' dropout.
struct FusedCounts {
  int64_t fused = 0, causal = 0, dropout = 0;
};

/// Fuses every matching attention of `module`; returns the counts and, per reason, the
/// softmaxes left decomposed (`cuda`: what the CUDA kernels do not take too).
FusedCounts fuseAttentions(ModuleOp module, bool cuda, std::map<std::string, int64_t> &left) {
  FusedCounts counts;
  module.walk([&](func::FuncOp func) {
    SmallVector<SoftmaxOp> softmaxes;
    func.walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      Match m = matchAttention(softmax, cuda);
      if (!m.reason.empty()) {
        ++left[m.reason];
        continue;
      }
      counts.causal += m.causal;
      counts.dropout += bool(m.dropout);
      rewrite(m);
      ++counts.fused;
    }
  });
  return counts;
}

struct FuseAttentionPass : impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto device = module->getAttrOfType<StringAttr>("plait.device");
    std::map<std::string, int64_t> left; // reason -> softmaxes left; ordered: the report's order
    FusedCounts fused = fuseAttentions(module, device && device.getValue() == "cuda", left);
    Builder b(module.getContext());
    SmallVector<NamedAttribute> reasons;
    int64_t leftCount = 0;
    for (auto &[reason, count] : left) {
      reasons.push_back(b.getNamedAttr(reason, b.getI64IntegerAttr(count)));
      leftCount += count;
    }
    module->setAttr(
        "plait.fuse_attention",
        b.getDictionaryAttr({b.getNamedAttr("fused", b.getI64IntegerAttr(fused.fused)),
                             b.getNamedAttr("causal", b.getI64IntegerAttr(fused.causal)),
                             b.getNamedAttr("dropout", b.getI64IntegerAttr(fused.dropout)),
                             b.getNamedAttr("left", b.getI64IntegerAttr(leftCount)),
                             b.getNamedAttr("reasons", b.getDictionaryAttr(reasons))}));
  }
};

} // namespace
} // namespace plait
