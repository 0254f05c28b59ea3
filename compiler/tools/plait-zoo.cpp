// plait-zoo: writes synthetic models (gpt, llama, mlp, cnn, resnet) of any size as plait-dialect
// .mlir.
//
// The models are built with the dialect's own op builders, so their shapes come from the
// ops' shape rules, and the module is verified before it is printed. Params carry `init`
// specs (no data), so even a 48-block GPT is under 2,000 lines of text; the only data are
// llama's rotary tables (2 x seq x head width / 2 floats). Param names follow
// `blocks.N.xxx`, so the data-parallel passes find one unit per block. The output is a
// pure function of the options.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/Diagnostics.h"
#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// The sizes of one model. Not every family reads every field (see kFamilies).
struct ZooOptions {
  std::string family;
  int64_t layers = 0, width = 0, heads = 0, ffn = 0, batch = 0, seq = 0, vocab = 0, image = 0,
          classes = 0;
  std::vector<int64_t> stages; // resnet: residual blocks per stage (--layers N or N,N,...)
  bool decomposed = false;     // layer norm and GELU as the ONNX importer's decomposition
  bool batchNorm = false;      // resnet: torchvision's convs without bias + BatchNorm2d
  bool syncBatchNorm = false;  // resnet --batch-norm: statistics over every rank (plait.sync_mean)
};

/// A size whose default is derived from the others (llama's --ffn from --width).
constexpr int64_t kDerived = -1;

/// Residual blocks in the model (named blocks.0 to blocks.N-1).
int64_t blockCount(const ZooOptions &o) {
  return o.stages.empty() ? o.layers
                          : std::accumulate(o.stages.begin(), o.stages.end(), int64_t{0});
}

/// A value-semantics graph under construction: one `@main` whose arguments are the named
/// batch inputs and whose only result is the scalar loss.
class GraphBuilder {
public:
  struct Input {
    std::string name;
    std::vector<int64_t> shape;
    Type elementType;
  };

  GraphBuilder(MLIRContext &ctx, const std::vector<Input> &inputs, bool decomposed)
      : b(&ctx), loc(b.getUnknownLoc()), decomposed(decomposed) {
    module = ModuleOp::create(loc);
    std::vector<Type> argTypes;
    for (const Input &input : inputs)
      argTypes.push_back(RankedTensorType::get(input.shape, input.elementType));
    b.setInsertionPointToEnd(module->getBody());
    func = b.create<func::FuncOp>(loc, "main", b.getFunctionType(argTypes, {}));
    for (auto [i, input] : llvm::enumerate(inputs))
      func.setArgAttr(i, "plait.name", b.getStringAttr(input.name));
    b.setInsertionPointToStart(func.addEntryBlock());
  }

  Value arg(unsigned i) { return func.getArgument(i); }
  Type f32() { return b.getF32Type(); }
  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elementType = {}) {
    return RankedTensorType::get(shape, elementType ? elementType : f32());
  }
  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  /// A trainable f32 tensor initialised by `init` (zeros, ones, normal:STD, uniform:BOUND).
  Value param(const std::string &name, ArrayRef<int64_t> shape, const std::string &init) {
    return b.create<plait::ParamOp>(loc, tensor(shape), name, ElementsAttr(),
                                    b.getStringAttr(init));
  }

  /// Training-mode BatchNorm2d over [N, C, H, W] (PyTorch's defaults: eps 1e-5, momentum 0.1)
  /// as the ONNX importer decomposes it: the batch's mean and (population) variance per
  /// channel, normalised, scaled by `prefix.weight` and shifted by `prefix.bias`. Its running
  /// mean and variance are buffers whose new values (the variance unbiased) finish() returns
  /// as results marked plait.buffer, and so is `prefix.num_batches_tracked`, its forwards. With `sync` (SyncBatchNorm) the mean and variance are
  /// plait.sync_means, and the unbiasing counts every rank's values (plait.unbiased_ranks).
  Value batchNorm(Value x, const std::string &prefix, bool sync) {
    ArrayRef<int64_t> shape = shapeOf(x);
    const int64_t C = shape[1], n = shape[0] * shape[2] * shape[3];
    const SmallVector<int64_t> axes{0, 2, 3};
    auto synced = [&](Value local) { return sync ? create<plait::SyncMeanOp>(local) : local; };
    Value mean = synced(create<plait::ReduceMeanOp>(x, ArrayRef<int64_t>(axes)));
    Value centred = create<plait::SubOp>(x, mean);
    Value variance = synced(create<plait::ReduceMeanOp>(create<plait::MulOp>(centred, centred),
                                                        ArrayRef<int64_t>(axes)));
    Value normalised =
        create<plait::MulOp>(centred, create<plait::RsqrtOp>(add(variance, scalar(1e-5f))));
    Value scale = reshape(param(prefix + ".weight", {C}, "ones"), {C, 1, 1});
    Value shift = reshape(param(prefix + ".bias", {C}, "zeros"), {C, 1, 1});
    Value y = add(create<plait::MulOp>(normalised, scale), shift);
    auto running = [&](const char *name, const char *init, Value batch) {
      auto buffer = b.create<plait::ParamOp>(loc, tensor({C}), prefix + "." + name,
                                             ElementsAttr(), b.getStringAttr(init));
      buffer.setBuffer(true);
      Value kept = create<plait::MulOp>(buffer, scalar(0.9f));
      bufferUpdates.push_back(
          {prefix + "." + name, add(kept, create<plait::MulOp>(batch, scalar(0.1f)))});
    };
    running("running_mean", "zeros", reshape(mean, {C}));
    // n / (n - 1), marked with n so that plait-divide-batch rescales it (DivideBatch.h).
    auto unbias = b.create<plait::ConstantOp>(
        loc, DenseElementsAttr::get(tensor({}), static_cast<float>(n) / static_cast<float>(n - 1)));
    unbias->setAttr("plait.unbiased_count", b.getI64IntegerAttr(n));
    if (sync)
      unbias->setAttr("plait.unbiased_ranks", b.getUnitAttr());
    running("running_var", "ones", create<plait::MulOp>(reshape(variance, {C}), unbias));
    // num_batches_tracked: the forwards, counted from 0.
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    auto count = b.create<plait::ParamOp>(loc, i64, prefix + ".num_batches_tracked",
                                          ElementsAttr(), b.getStringAttr("zeros"));
    count.setBuffer(true);
    Value one = b.create<plait::ConstantOp>(loc, DenseElementsAttr::get(i64, int64_t(1)));
    bufferUpdates.push_back({prefix + ".num_batches_tracked", add(count, one)});
    return y;
  }

  /// A scalar f32 constant, created once and shared by every later use (as the importer does).
  Value scalar(float value) {
    auto [it, inserted] = scalars.try_emplace(llvm::bit_cast<uint32_t>(value));
    if (inserted) {
      auto attr = DenseElementsAttr::get(tensor({}), b.getF32FloatAttr(value).getValue());
      it->second = b.create<plait::ConstantOp>(loc, attr);
    }
    return it->second;
  }

  template <typename Op, typename... Args> Op createOp(Args &&...args) {
    return b.create<Op>(loc, std::forward<Args>(args)...);
  }
  /// The result of a new single-result op.
  template <typename Op, typename... Args> Value create(Args &&...args) {
    return createOp<Op>(std::forward<Args>(args)...);
  }
  Value add(Value x, Value y) { return create<plait::AddOp>(x, y); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return b.create<plait::ReshapeOp>(loc, tensor(shape, getElementTypeOrSelf(x.getType())), x);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) { return create<plait::TransposeOp>(x, perm); }

  /// x @ W (+ b) over the last axis; W is [in, out], so no transpose is needed.
  Value linear(Value x, const std::string &prefix, int64_t in, int64_t out, const std::string &init,
               bool bias = true) {
    Value y = create<plait::MatmulOp>(x, param(prefix + ".weight", {in, out}, init));
    return bias ? add(y, param(prefix + ".bias", {out}, "zeros")) : y;
  }

  /// RMS norm over the last axis with a learned scale and no shift (LLaMA's epsilon, 1e-6).
  Value rmsNorm(Value x, const std::string &prefix) {
    Value scale = param(prefix + ".weight", {shapeOf(x).back()}, "ones");
    return b.create<plait::RmsNormOp>(loc, x.getType(), x, scale, b.getI64IntegerAttr(-1),
                                      b.getF64FloatAttr(1e-6));
  }

  /// Layer norm over the last axis: the fused op, or with `decomposed` the sequence the
  /// ONNX importer makes of torch's export (mean, centred square, mean, sqrt, divide, affine).
  Value layerNorm(Value x, const std::string &prefix) {
    int64_t width = shapeOf(x).back();
    Value scale = param(prefix + ".weight", {width}, "ones");
    Value shift = param(prefix + ".bias", {width}, "zeros");
    int64_t last = static_cast<int64_t>(shapeOf(x).size()) - 1;
    if (!decomposed)
      return b.create<plait::LayerNormOp>(loc, x.getType(), x, scale, shift,
                                          b.getI64IntegerAttr(-1), b.getF64FloatAttr(1e-5));
    Value centred = create<plait::SubOp>(x, create<plait::ReduceMeanOp>(x, ArrayRef{last}));
    Value square = create<plait::PowOp>(centred, scalar(2.0f));
    Value variance = create<plait::ReduceMeanOp>(square, ArrayRef{last});
    Value deviation = create<plait::SqrtOp>(add(variance, scalar(1e-5f)));
    Value normalised = create<plait::DivOp>(centred, deviation);
    return add(create<plait::MulOp>(normalised, scale), shift);
  }

  /// Exact (erf) GELU: the fused op, or x * (erf(x / sqrt 2) + 1) * 0.5 as the importer has it.
  Value gelu(Value x) {
    if (!decomposed)
      return create<plait::GeluOp>(x);
    // One op per statement: the order of argument evaluation would reach the output.
    Value erf = create<plait::ErfOp>(create<plait::DivOp>(x, scalar(std::sqrt(2.0f))));
    Value scaled = create<plait::MulOp>(x, add(erf, scalar(1.0f)));
    return create<plait::MulOp>(scaled, scalar(0.5f));
  }

  /// Mean softmax cross-entropy of logits [N, C] against class indices [N].
  Value crossEntropy(Value logits, Value targets) {
    return create<plait::SoftmaxCrossEntropyOp>(logits, targets, Value(), "mean", IntegerAttr(),
                                                FloatAttr());
  }

  /// Returns `loss` as the function's first result, named "loss", then each buffer's new
  /// value (marked plait.buffer), and verifies the module.
  FailureOr<OwningOpRef<ModuleOp>> finish(Value loss) {
    SmallVector<Value> results{loss};
    for (auto &[name, value] : bufferUpdates)
      results.push_back(value);
    b.create<func::ReturnOp>(loc, results);
    func.setType(b.getFunctionType(func.getArgumentTypes(), ValueRange(results).getTypes()));
    func.setResultAttr(0, "plait.name", b.getStringAttr("loss"));
    for (auto [i, update] : llvm::enumerate(bufferUpdates)) {
      func.setResultAttr(unsigned(i + 1), "plait.name", b.getStringAttr(update.first + ".updated"));
      func.setResultAttr(unsigned(i + 1), "plait.buffer", b.getStringAttr(update.first));
    }
    if (failed(verify(*module)))
      return failure();
    return std::move(module);
  }

private:
  OpBuilder b;
  Location loc;
  bool decomposed;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  std::map<uint32_t, Value> scalars; // keyed by the float's bit pattern
  std::vector<std::pair<std::string, Value>> bufferUpdates; // buffer name, value after the step
};

/// The init spec "normal:STD", STD with 6 significant digits.
std::string normal(double stddev) { return fmt::format("normal:{:.6g}", stddev); }

std::string block(int64_t i, const char *layer) { return fmt::format("blocks.{}.{}", i, layer); }

/// What every attention layer of a decoder shares: the causal mask (true strictly above the
/// diagonal, where scores become -inf) and the score scale 1/sqrt(head dim).
struct CausalAttention {
  Value future, minusInf, scale;

  CausalAttention(MLIRContext &ctx, GraphBuilder &g, int64_t seq, int64_t headDim) {
    Value ones = g.create<plait::ConstantOp>(
        DenseElementsAttr::get(g.tensor({seq, seq}, IntegerType::get(&ctx, 1)), true));
    future = g.create<plait::TriluOp>(ones, /*upper=*/true, /*k=*/1);
    minusInf = g.scalar(-std::numeric_limits<float>::infinity());
    scale = g.scalar(1.0f / std::sqrt(static_cast<float>(headDim)));
  }

  /// softmax(q kT * scale, masked) v with the heads merged again: q and v are
  /// [B, H, S, hd], kT is [B, H, hd, S]; the result is [B, S, H * hd].
  Value operator()(GraphBuilder &g, Value q, Value kT, Value v) const {
    ArrayRef<int64_t> shape = GraphBuilder::shapeOf(q);
    Value scores = g.create<plait::MulOp>(g.create<plait::MatmulOp>(q, kT), scale);
    scores = g.create<plait::WhereOp>(future, minusInf, scores);
    Value probs = g.create<plait::SoftmaxOp>(scores, /*axis=*/-1);
    Value y = g.create<plait::MatmulOp>(probs, v); // [B, H, S, hd]
    return g.reshape(g.transpose(y, {0, 2, 1, 3}), {shape[0], shape[2], shape[1] * shape[3]});
  }
};

/// GPT-2-style decoder: token + learned position embeddings, pre-norm blocks of causal
/// multi-head attention and a GELU MLP with residuals, final layer norm, untied LM head.
/// The attention is the op sequence the ONNX importer produces for samples/gpt.
FailureOr<OwningOpRef<ModuleOp>> buildGpt(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, S = o.seq, D = o.width, H = o.heads, hd = D / H, V = o.vocab;
  Type i64 = IntegerType::get(&ctx, 64);
  GraphBuilder g(ctx, {{"idx", {B, S}, i64}, {"targets", {B, S}, i64}}, o.decomposed);
  // GPT-2's init: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers).
  const std::string init = normal(0.02), residualInit = normal(0.02 / std::sqrt(2.0 * o.layers));

  Value x = g.create<plait::GatherOp>(g.param("wte.weight", {V, D}, init), g.arg(0),
                                     /*axis=*/uint64_t(0), /*padding_idx=*/IntegerAttr());
  x = g.add(x, g.param("wpe.weight", {S, D}, normal(0.01)));
  const CausalAttention attention(ctx, g, S, hd);

  for (int64_t i = 0; i < o.layers; ++i) {
    Value h = g.layerNorm(x, block(i, "ln1"));
    Value qkv = g.linear(h, block(i, "attn.qkv"), D, 3 * D, init);
    auto split = g.createOp<plait::SplitOp>(qkv, 2, ArrayRef<int64_t>{D, D, D});
    auto heads = [&](Value v, ArrayRef<int64_t> perm) {
      return g.transpose(g.reshape(v, {B, S, H, hd}), perm);
    };
    Value q = heads(split->getResult(0), {0, 2, 1, 3});  // [B, H, S, hd]
    Value kT = heads(split->getResult(1), {0, 2, 3, 1}); // [B, H, hd, S]
    Value v = heads(split->getResult(2), {0, 2, 1, 3});  // [B, H, S, hd]
    Value y = attention(g, q, kT, v);                    // [B, S, D]
    x = g.add(x, g.linear(y, block(i, "attn.proj"), D, D, residualInit));

    h = g.layerNorm(x, block(i, "ln2"));
    h = g.gelu(g.linear(h, block(i, "mlp.fc"), D, 4 * D, init));
    x = g.add(x, g.linear(h, block(i, "mlp.proj"), 4 * D, D, residualInit));
  }
  x = g.layerNorm(x, "ln_f");
  Value logits = g.linear(x, "lm_head", D, V, init, /*bias=*/false);
  Value flatLogits = g.reshape(logits, {B * S, V});
  Value flatTargets = g.reshape(g.arg(1), {B * S});
  return g.finish(g.crossEntropy(flatLogits, flatTargets));
}

/// Rotary position embeddings (RoPE) in the rotate-half form of Hugging Face's LLaMA: a
/// [B, S, H, hd] query or key t becomes t * cos + rotate_half(t) * sin, where
/// rotate_half(t) = concat(-t[..., hd/2:], t[..., :hd/2]) and the tables' row p holds
/// cos / sin of p * 10000^(-2j / hd) for j < hd/2, twice over. The tables are constants
/// ([S, 1, hd/2] each, concatenated once) computed here in double: computed in the graph,
/// --precision bf16-mixed would form the angles in bf16, which rounds positions above 256.
struct RotaryEmbedding {
  Value cosTable, sinTable; // [S, 1, hd], broadcast over batch and heads

  RotaryEmbedding(GraphBuilder &g, int64_t seq, int64_t headDim) {
    const int64_t half = headDim / 2;
    std::vector<float> cosines, sines;
    for (int64_t p = 0; p < seq; ++p)
      for (int64_t j = 0; j < half; ++j) {
        double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * j / headDim);
        cosines.push_back(static_cast<float>(std::cos(angle)));
        sines.push_back(static_cast<float>(std::sin(angle)));
      }
    auto table = [&](ArrayRef<float> values) {
      Value t =
          g.create<plait::ConstantOp>(DenseElementsAttr::get(g.tensor({seq, 1, half}), values));
      return g.create<plait::ConcatOp>(ValueRange{t, t}, uint64_t{2});
    };
    cosTable = table(cosines);
    sinTable = table(sines);
  }

  /// t * cos + rotate_half(t) * sin of a [B, S, H, hd] query or key t.
  Value operator()(GraphBuilder &g, Value t) const {
    ArrayRef<int64_t> shape = GraphBuilder::shapeOf(t);
    const int64_t half = shape[3] / 2;
    const SmallVector<int64_t> zeros(4, 0), ones(4, 1);
    Value first = g.create<plait::SliceOp>(
        t, zeros, ArrayRef<int64_t>{shape[0], shape[1], shape[2], half}, ones);
    Value second = g.create<plait::SliceOp>(t, ArrayRef<int64_t>{0, 0, 0, half}, shape, ones);
    Value rotated =
        g.create<plait::ConcatOp>(ValueRange{g.create<plait::NegOp>(second), first}, uint64_t{3});
    Value scaled = g.create<plait::MulOp>(t, cosTable);
    return g.add(scaled, g.create<plait::MulOp>(rotated, sinTable));
  }
};

/// LLaMA's SwiGLU width: 8/3 of the model width, rounded down, then up to a multiple of 256
/// (4096 -> 11008).
int64_t llamaFfn(int64_t width) { return (8 * width / 3 + 255) / 256 * 256; }

/// LLaMA-style decoder: token embedding (no position embedding), pre-norm blocks of RMS norm
/// and causal multi-head attention with rotary position embeddings, then RMS norm and a
/// SwiGLU MLP, each with a residual; no biases; final RMS norm, untied LM head.
FailureOr<OwningOpRef<ModuleOp>> buildLlama(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, S = o.seq, D = o.width, H = o.heads, hd = D / H, F = o.ffn,
                V = o.vocab;
  Type i64 = IntegerType::get(&ctx, 64);
  GraphBuilder g(ctx, {{"idx", {B, S}, i64}, {"targets", {B, S}, i64}}, /*decomposed=*/false);
  // N(0, 0.02) as Hugging Face's LLaMA, residual projections scaled as in buildGpt.
  const std::string init = normal(0.02), residualInit = normal(0.02 / std::sqrt(2.0 * o.layers));

  Value x = g.create<plait::GatherOp>(g.param("embed.weight", {V, D}, init), g.arg(0),
                                     /*axis=*/uint64_t(0), /*padding_idx=*/IntegerAttr());
  const CausalAttention attention(ctx, g, S, hd);
  const RotaryEmbedding rope(g, S, hd);
  for (int64_t i = 0; i < o.layers; ++i) {
    Value h = g.rmsNorm(x, block(i, "attn_norm"));
    auto project = [&](const char *name) { // [B, S, H, hd]
      return g.reshape(g.linear(h, block(i, name), D, D, init, /*bias=*/false), {B, S, H, hd});
    };
    Value q = g.transpose(rope(g, project("attn.wq")), {0, 2, 1, 3});  // [B, H, S, hd]
    Value kT = g.transpose(rope(g, project("attn.wk")), {0, 2, 3, 1}); // [B, H, hd, S]
    Value v = g.transpose(project("attn.wv"), {0, 2, 1, 3});           // [B, H, S, hd]
    Value y = attention(g, q, kT, v);                                  // [B, S, D]
    x = g.add(x, g.linear(y, block(i, "attn.wo"), D, D, residualInit, /*bias=*/false));

    h = g.rmsNorm(x, block(i, "mlp_norm"));
    Value gate = g.create<plait::SiluOp>(g.linear(h, block(i, "mlp.gate"), D, F, init, false));
    Value up = g.linear(h, block(i, "mlp.up"), D, F, init, /*bias=*/false);
    Value gated = g.create<plait::MulOp>(gate, up);
    x = g.add(x, g.linear(gated, block(i, "mlp.down"), F, D, residualInit, /*bias=*/false));
  }
  x = g.rmsNorm(x, "norm");
  Value logits = g.linear(x, "lm_head", D, V, init, /*bias=*/false);
  Value flatLogits = g.reshape(logits, {B * S, V});
  Value flatTargets = g.reshape(g.arg(1), {B * S});
  return g.finish(g.crossEntropy(flatLogits, flatTargets));
}

/// Deep residual MLP: blocks of layer norm, Linear + ReLU, Linear, residual add; then a
/// final layer norm and a linear classifier.
FailureOr<OwningOpRef<ModuleOp>> buildMlp(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, W = o.width, C = o.classes;
  GraphBuilder g(ctx,
                 {{"x", {B, W}, Float32Type::get(&ctx)}, {"y", {B}, IntegerType::get(&ctx, 64)}},
                 o.decomposed);
  // He init into the ReLU; the residual branch's output layer scaled so that the residual
  // stream's variance grows by about (1 + 1/layers) per block.
  const std::string heInit = normal(std::sqrt(2.0 / W));
  const std::string branchInit = normal(std::sqrt(1.0 / (W * static_cast<double>(o.layers))));
  Value x = g.arg(0);
  for (int64_t i = 0; i < o.layers; ++i) {
    Value h = g.layerNorm(x, block(i, "norm"));
    h = g.create<plait::ReluOp>(g.linear(h, block(i, "fc1"), W, W, heInit));
    x = g.add(x, g.linear(h, block(i, "fc2"), W, W, branchInit));
  }
  x = g.layerNorm(x, "ln_f");
  return g.finish(g.crossEntropy(g.linear(x, "head", W, C, normal(0.02)), g.arg(1)));
}

/// Number of 2x2 max-pools a square image of `size` takes while staying >= 2 and even.
int64_t poolCount(int64_t size) {
  int64_t pools = 0;
  for (; size % 2 == 0 && size / 2 >= 2; size /= 2)
    ++pools;
  return pools;
}

/// Conv/pool stack: a 3x3 stem conv, pre-activation residual blocks (x + conv(relu(x)), so
/// that the branch adds zero-mean noise however deep the stack is) with 2x2 max-pools spread
/// evenly over the blocks, then ReLU, global average pool and a linear classifier.
FailureOr<OwningOpRef<ModuleOp>> buildCnn(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, C = o.width, I = o.image, K = o.classes, inChannels = 3;
  GraphBuilder g(ctx,
                 {{"x", {B, inChannels, I, I}, Float32Type::get(&ctx)},
                  {"y", {B}, IntegerType::get(&ctx, 64)}},
                 o.decomposed);
  const std::vector<int64_t> ones = {1, 1}, same = {1, 1, 1, 1}, none = {0, 0, 0, 0};
  auto conv = [&](Value x, const std::string &prefix, int64_t in, const std::string &init) {
    Value w = g.param(prefix + ".weight", {C, in, 3, 3}, init);
    Value bias = g.param(prefix + ".bias", {C}, "zeros");
    return g.create<plait::Conv2dOp>(x, w, bias, /*strides=*/ones, same, /*dilations=*/ones, 1);
  };
  Value x = conv(g.arg(0), "stem", inChannels, normal(std::sqrt(1.0 / (inChannels * 9))));
  // He init, scaled down by sqrt(layers) on the residual branch (see buildMlp).
  const std::string branchInit = normal(std::sqrt(2.0 / (C * 9 * static_cast<double>(o.layers))));
  const int64_t pools = std::min(poolCount(I), o.layers);
  int64_t size = I;
  for (int64_t i = 0; i < o.layers; ++i) {
    x = g.add(x, conv(g.create<plait::ReluOp>(x), block(i, "conv"), C, branchInit));
    if ((i + 1) * pools / o.layers > i * pools / o.layers) {
      x = g.create<plait::MaxPool2dOp>(x, ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{2, 2}, none,
                                       /*dilations=*/ones);
      size /= 2;
    }
  }
  x = g.create<plait::ReluOp>(x);
  x = g.create<plait::AvgPool2dOp>(x, ArrayRef<int64_t>{size, size}, /*strides=*/ones, none);
  x = g.reshape(x, {B, C});
  return g.finish(g.crossEntropy(g.linear(x, "head", C, K, normal(0.02)), g.arg(1)));
}

/// ResNet-style classifier (ResNet-18/34's basic blocks): a 7x7 stride-2 stem conv, ReLU and
/// a 3x3 stride-2 max-pool; stages of residual blocks relu(shortcut + conv(relu(conv(x)))) of
/// 3x3 convs, each stage after the first starting with a stride-2 conv at twice the channels
/// and a 1x1 stride-2 projection shortcut; global average pool, linear classifier. By default
/// there is no norm: the convs have biases, and each block's second conv
/// starts scaled down by sqrt(blocks), so that the residual stream stays bounded however deep
/// the stack is (as Fixup does). With --batch-norm it is torchvision's ResNet instead: the
/// convs have no bias and each is followed by a training-mode BatchNorm2d (its running
/// statistics buffers), without the scaling.
FailureOr<OwningOpRef<ModuleOp>> buildResnet(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, I = o.image, K = o.classes, inChannels = 3;
  GraphBuilder g(ctx,
                 {{"x", {B, inChannels, I, I}, Float32Type::get(&ctx)},
                  {"y", {B}, IntegerType::get(&ctx, 64)}},
                 /*decomposed=*/false);
  const std::vector<int64_t> ones = {1, 1};
  // A k x k conv with bias and "same" padding (k odd), so stride s gives ceil(size / s).
  // With --batch-norm: no bias, and the norm "<prefix>.bn" after it.
  auto conv = [&](Value x, const std::string &prefix, int64_t out, int64_t k, int64_t stride,
                  const std::string &init) {
    const int64_t in = GraphBuilder::shapeOf(x)[1], pad = k / 2;
    Value w = g.param(prefix + ".weight", {out, in, k, k}, init);
    Value bias = o.batchNorm ? Value() : g.param(prefix + ".bias", {out}, "zeros");
    Value y = g.create<plait::Conv2dOp>(x, w, bias, ArrayRef<int64_t>{stride, stride},
                                        ArrayRef<int64_t>{pad, pad, pad, pad},
                                        /*dilations=*/ones, 1);
    return o.batchNorm ? g.batchNorm(y, prefix + ".bn", o.syncBatchNorm) : y;
  };
  auto he = [](int64_t fanIn) { return normal(std::sqrt(2.0 / static_cast<double>(fanIn))); };
  const double branchScale =
      o.batchNorm ? 1.0 : 1.0 / std::sqrt(static_cast<double>(blockCount(o)));

  Value x = g.create<plait::ReluOp>(conv(g.arg(0), "stem", o.width, 7, 2, he(inChannels * 49)));
  x = g.create<plait::MaxPool2dOp>(x, ArrayRef<int64_t>{3, 3}, ArrayRef<int64_t>{2, 2},
                                   ArrayRef<int64_t>{1, 1, 1, 1}, /*dilations=*/ones);
  int64_t n = 0; // blocks.N numbers the blocks across the stages
  for (auto [stage, blocks] : llvm::enumerate(o.stages)) {
    const int64_t out = o.width << stage;
    for (int64_t j = 0; j < blocks; ++j, ++n) {
      const int64_t in = GraphBuilder::shapeOf(x)[1], stride = stage > 0 && j == 0 ? 2 : 1;
      Value h = g.create<plait::ReluOp>(conv(x, block(n, "conv1"), out, 3, stride, he(in * 9)));
      h = conv(h, block(n, "conv2"), out, 3, 1,
               normal(std::sqrt(2.0 / static_cast<double>(out * 9)) * branchScale));
      Value shortcut = stride == 1 && in == out
                           ? x
                           : conv(x, block(n, "shortcut"), out, 1, stride,
                                  normal(std::sqrt(1.0 / static_cast<double>(in))));
      x = g.create<plait::ReluOp>(g.add(shortcut, h));
    }
  }
  ArrayRef<int64_t> shape = GraphBuilder::shapeOf(x); // [B, C, h, w]
  const int64_t C = shape[1];
  x = g.create<plait::AvgPool2dOp>(x, ArrayRef<int64_t>{shape[2], shape[3]}, /*strides=*/ones,
                                   ArrayRef<int64_t>{0, 0, 0, 0});
  x = g.reshape(x, {B, C});
  return g.finish(g.crossEntropy(g.linear(x, "head", C, K, normal(0.02)), g.arg(1)));
}

/// One size option: its flag, the field it sets and its accepted range.
struct SizeFlag {
  const char *flag;
  int64_t ZooOptions::*field;
  int64_t min, max;
  const char *help;
};

const SizeFlag kSizeFlags[] = {
    {"--layers", &ZooOptions::layers, 1, 4096,
     "blocks (resnet: blocks in each of 4 stages, or a list of blocks per stage, e.g. 3,4,6,3)"},
    {"--width", &ZooOptions::width, 1, 16384,
     "hidden width (cnn: channels; resnet: the first stage's channels)"},
    {"--heads", &ZooOptions::heads, 1, 16384, "attention heads (gpt, llama; must divide --width)"},
    {"--ffn", &ZooOptions::ffn, 1, 1 << 18,
     "SwiGLU hidden width (llama; default: 8/3 --width rounded up to a multiple of 256)"},
    {"--batch", &ZooOptions::batch, 1, 65536, "samples per step (per rank)"},
    {"--seq", &ZooOptions::seq, 1, 16384, "sequence length (gpt, llama)"},
    {"--vocab", &ZooOptions::vocab, 2, 1 << 20, "vocabulary size (gpt, llama)"},
    {"--image", &ZooOptions::image, 1, 4096, "image height = width (cnn, resnet)"},
    {"--classes", &ZooOptions::classes, 2, 1 << 20, "classes (mlp, cnn, resnet)"},
};

/// llama: --ffn by LLaMA's rule unless given; the head width must be even (RoPE rotates
/// pairs). Returns an error message, or "".
std::string resolveLlama(ZooOptions &o) {
  if (o.ffn == kDerived)
    o.ffn = llamaFfn(o.width);
  if ((o.width / o.heads) % 2 != 0)
    return fmt::format("--width {} / --heads {} = {} must be even (rotary embeddings rotate "
                       "pairs of features)",
                       o.width, o.heads, o.width / o.heads);
  return "";
}

/// resnet: --layers N is N blocks in each of 4 stages; each stage doubles the channels.
std::string resolveResnet(ZooOptions &o) {
  if (o.stages.empty())
    o.stages.assign(4, o.layers);
  const int64_t maxChannels = 16384;
  int64_t channels = o.width; // of the last stage
  for (size_t stage = 1; stage < o.stages.size() && channels <= maxChannels; ++stage)
    channels *= 2;
  if (channels > maxChannels)
    return fmt::format("--width {} doubled over {} stages is over {} channels", o.width,
                       o.stages.size(), maxChannels);
  // The last stage's feature maps: the stem, the max-pool and each later stage halve them
  // (rounding up). A BatchNorm over one value per channel has no variance to unbias (PyTorch
  // refuses it in training too).
  int64_t size = o.image;
  for (size_t halvings = 0; halvings < o.stages.size() + 1; ++halvings)
    size = (size + 1) / 2;
  if (o.batchNorm && o.batch * size * size < 2)
    return fmt::format("--batch-norm needs more than one value per channel, but the last "
                       "stage's batch norms see {} image of {}x{} (give --batch 2 or more, or "
                       "a larger --image)",
                       o.batch, size, size);
  return "";
}

/// A model family: its defaults (a size field left 0 does not apply to the family).
struct Family {
  const char *name;
  const char *summary;
  const char *inputs;
  ZooOptions defaults;
  bool hasNorm; // --decomposed applies
  FailureOr<OwningOpRef<ModuleOp>> (*build)(MLIRContext &, const ZooOptions &);
  /// Fills in the sizes derived from others and checks them: "" or an error message.
  std::string (*resolve)(ZooOptions &) = nullptr;
  bool layerList = false; // --layers also takes a list, kept in ZooOptions::stages
  bool batchNorm = false; // --batch-norm applies
};

const Family kFamilies[] = {
    {"gpt",
     "decoder-only transformer: token + position embeddings, pre-norm blocks of causal "
     "multi-head attention and a GELU MLP with residuals, final layer norm, LM head, "
     "cross-entropy",
     "idx, targets: i64 [batch, seq]",
     [] {
       ZooOptions o;
       o.layers = 2, o.width = 32, o.heads = 4, o.batch = 4, o.seq = 16, o.vocab = 64;
       return o;
     }(),
     true, buildGpt},
    {"llama",
     "LLaMA-style decoder: token embedding, pre-norm blocks of RMS norm, causal multi-head "
     "attention with rotary position embeddings, RMS norm and a SwiGLU MLP (--ffn defaults to "
     "8/3 --width rounded up to a multiple of 256) with residuals, no biases, final RMS norm, "
     "LM head, cross-entropy",
     "idx, targets: i64 [batch, seq]",
     [] {
       ZooOptions o;
       o.layers = 2, o.width = 32, o.heads = 4, o.ffn = kDerived, o.batch = 4, o.seq = 16,
       o.vocab = 64;
       return o;
     }(),
     false, buildLlama, resolveLlama},
    {"mlp",
     "deep residual MLP: blocks of layer norm, Linear + ReLU, Linear and a residual add, "
     "final layer norm, linear classifier, cross-entropy",
     "x: f32 [batch, width], y: i64 [batch]",
     [] {
       ZooOptions o;
       o.layers = 4, o.width = 64, o.batch = 8, o.classes = 10;
       return o;
     }(),
     true, buildMlp},
    {"cnn",
     "conv/pool stack: 3x3 stem conv, pre-activation residual blocks (ReLU, 3x3 conv) with 2x2 "
     "max-pools spread over the blocks, ReLU, global average pool, linear classifier, "
     "cross-entropy",
     "x: f32 [batch, 3, image, image], y: i64 [batch]",
     [] {
       ZooOptions o;
       o.layers = 4, o.width = 8, o.batch = 4, o.image = 16, o.classes = 10;
       return o;
     }(),
     false, buildCnn},
    {"resnet",
     "ResNet-style classifier: 7x7 stride-2 stem conv, ReLU, 3x3 stride-2 max-pool, stages of "
     "basic residual blocks (two 3x3 convs with ReLU; each stage after the first doubles the "
     "channels and halves the size, with a 1x1 stride-2 projection shortcut), global average "
     "pool, linear classifier, cross-entropy; conv biases and no norms, or with --batch-norm "
     "torchvision's convs without bias, each followed by a training-mode BatchNorm2d. "
     "--layers N is N blocks per stage in 4 stages, or a list (2,2,2,2)",
     "x: f32 [batch, 3, image, image], y: i64 [batch]",
     [] {
       ZooOptions o;
       o.layers = 2, o.width = 8, o.batch = 4, o.image = 32, o.classes = 10;
       return o;
     }(),
     false, buildResnet, resolveResnet, /*layerList=*/true, /*batchNorm=*/true},
};

/// "gpt, llama, mlp, cnn or resnet"
std::string familyNames() {
  std::string text;
  const size_t count = std::size(kFamilies);
  for (size_t i = 0; i < count; ++i)
    text += fmt::format("{}{}", i == 0 ? "" : i + 1 == count ? " or " : ", ", kFamilies[i].name);
  return text;
}

/// The flags a family takes with the values of `o` ("--layers 2 --width 32 ...").
std::string flagsOf(const Family &family, const ZooOptions &o) {
  std::string text;
  for (const SizeFlag &size : kSizeFlags) {
    if (family.defaults.*size.field == 0)
      continue;
    if (size.field == &ZooOptions::layers && !o.stages.empty())
      text += fmt::format(" {} {}", size.flag, fmt::join(o.stages, ","));
    else
      text += fmt::format(" {} {}", size.flag, o.*size.field);
  }
  if (family.hasNorm && o.decomposed)
    text += " --decomposed";
  if (family.batchNorm && o.batchNorm)
    text += " --batch-norm";
  if (family.batchNorm && o.syncBatchNorm)
    text += " --sync-batch-norm";
  return text.substr(1);
}

/// The names of the flags a family takes ("--layers, --width, ...").
std::string flagNamesOf(const Family &family) {
  std::string text;
  for (const SizeFlag &size : kSizeFlags)
    if (family.defaults.*size.field != 0)
      text += fmt::format(", {}", size.flag);
  if (family.hasNorm)
    text += ", --decomposed";
  if (family.batchNorm)
    text += ", --batch-norm, --sync-batch-norm";
  return text.substr(2);
}

void printFamilies() {
  for (const Family &family : kFamilies) {
    ZooOptions defaults = family.defaults;
    if (family.resolve)
      family.resolve(defaults);
    std::cout << family.name << "  " << family.summary << "\n"
              << "     inputs " << family.inputs << "\n"
              << "     defaults " << flagsOf(family, defaults) << "\n";
  }
}

int fail(const std::string &message) {
  // One line, whatever it quotes.
  std::cerr << "plait-zoo: " << plait::printableText(message) << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"plait-zoo: write a synthetic model (" + familyNames() + ") as plait-dialect .mlir"};
  ZooOptions options;
  std::vector<int64_t> layers; // --layers N, or (resnet) N,N,...
  std::string output = "-";
  bool list = false;
  app.add_option("--family", options.family, familyNames() + " (see --list)");
  for (const SizeFlag &size : kSizeFlags) {
    CLI::Option *option =
        size.field == &ZooOptions::layers
            ? app.add_option(size.flag, layers, size.help)->delimiter(',')->allow_extra_args(false)
            : app.add_option(size.flag, options.*size.field, size.help);
    option->check(CLI::Range(size.min, size.max));
  }
  app.add_flag("--decomposed", options.decomposed,
               "layer norm and GELU as the ONNX importer's decomposition (gpt, mlp)");
  app.add_flag("--batch-norm", options.batchNorm,
               "resnet: torchvision's convs without bias, each followed by a training-mode "
               "BatchNorm2d (batch statistics; its running statistics buffers the step updates)");
  app.add_flag("--sync-batch-norm", options.syncBatchNorm,
               "resnet --batch-norm: SyncBatchNorm, the statistics of the global batch "
               "(plait.sync_mean: averaged over the data-parallel ranks in training)");
  app.add_option("-o,--output", output, "output .mlir file (default: stdout)");
  app.add_flag("--list", list, "list the families and their defaults");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return fail(e.what());
  }
  if (list) {
    printFamilies();
    return 0;
  }
  if (options.family.empty())
    return fail("--family is required (" + familyNames() + "; see --list)");
  const Family *family = nullptr;
  for (const Family &candidate : kFamilies)
    if (options.family == candidate.name)
      family = &candidate;
  if (!family)
    return fail("unknown family '" + options.family + "' (expected " + familyNames() + ")");
  if (layers.size() > 1 && !family->layerList)
    return fail(
        fmt::format("--layers takes one number for family {} (lists are resnet's)", family->name));
  if (layers.size() > 1)
    options.stages = layers;
  else if (layers.size() == 1)
    options.layers = layers.front();
  for (const SizeFlag &size : kSizeFlags) {
    if (family->defaults.*size.field != 0) {
      if (!app.count(size.flag))
        options.*size.field = family->defaults.*size.field;
    } else if (app.count(size.flag)) {
      return fail(fmt::format("{} does not apply to family {} (it takes {})", size.flag,
                              family->name, flagNamesOf(*family)));
    }
  }
  if (options.decomposed && !family->hasNorm)
    return fail(fmt::format("--decomposed does not apply to family {} (it takes {})", family->name,
                            flagNamesOf(*family)));
  if (options.batchNorm && !family->batchNorm)
    return fail(fmt::format("--batch-norm does not apply to family {} (it takes {})",
                            family->name, flagNamesOf(*family)));
  if (options.syncBatchNorm && !options.batchNorm)
    return fail("--sync-batch-norm needs --batch-norm");
  if (family->defaults.heads != 0 && options.width % options.heads != 0)
    return fail(fmt::format("--heads {} must divide --width {}", options.heads, options.width));
  if (family->resolve)
    if (std::string error = family->resolve(options); !error.empty())
      return fail(error);

  MLIRContext ctx;
  ctx.loadDialect<plait::PlaitDialect, func::FuncDialect>();
  FailureOr<OwningOpRef<ModuleOp>> module = family->build(ctx, options);
  if (failed(module)) {
    std::cerr << "plait-zoo: internal error: the " << family->name << " model does not verify\n";
    return 2;
  }
  std::error_code error;
  llvm::raw_fd_ostream os(output, error, llvm::sys::fs::OF_Text);
  if (error)
    return fail("cannot write '" + output + "': " + error.message());
  int64_t params = 0, buffers = 0, counters = 0;
  (*module)->walk([&](plait::ParamOp param) {
    auto type = cast<RankedTensorType>(param.getType());
    if (!param.getBuffer())
      params += type.getNumElements();
    else if (type.getElementType().isInteger(64))
      counters += type.getNumElements();
    else
      buffers += type.getNumElements();
  });
  os << "// plait-zoo --family " << family->name << " " << flagsOf(*family, options)
     << "\n// params: " << params << " f32 elements; "
     << (buffers > 0 ? fmt::format("buffers: {} f32 elements, {} i64 counts; ", buffers,
                                   counters)
                     : "")
     << "blocks: " << blockCount(options) << "\n";
  (*module)->print(os);
  os.flush();
  if (os.has_error()) {
    std::string reason = os.error().message();
    os.clear_error(); // raw_fd_ostream aborts when destroyed with an unhandled error
    return fail("cannot write '" + output + "': " + reason);
  }
  return 0;
}
