// plait-zoo: writes synthetic models (gpt, mlp, cnn) of any size as plait-dialect .mlir.
//
// The models are built with the dialect's own op builders, so their shapes come from the
// ops' shape rules, and the module is verified before it is printed. Params carry `init`
// specs (no data), so even a 48-block GPT is under 2,000 lines of text. Param names follow
// `blocks.N.xxx`, so the data-parallel passes find one unit per block. The output is a
// pure function of the options.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

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
  int64_t layers = 0, width = 0, heads = 0, batch = 0, seq = 0, vocab = 0, image = 0, classes = 0;
  bool decomposed = false; // layer norm and GELU as the ONNX importer's decomposition
};

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
    return create<plait::SoftmaxCrossEntropyOp>(logits, targets, Value(), "mean", IntegerAttr());
  }

  /// Returns `loss` as the function's only result, named "loss", and verifies the module.
  FailureOr<OwningOpRef<ModuleOp>> finish(Value loss) {
    b.create<func::ReturnOp>(loc, loss);
    func.setType(b.getFunctionType(func.getArgumentTypes(), {loss.getType()}));
    func.setResultAttr(0, "plait.name", b.getStringAttr("loss"));
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
};

/// The init spec "normal:STD", STD with 6 significant digits.
std::string normal(double stddev) { return fmt::format("normal:{:.6g}", stddev); }

std::string block(int64_t i, const char *layer) { return fmt::format("blocks.{}.{}", i, layer); }

/// GPT-2-style decoder: token + learned position embeddings, pre-norm blocks of causal
/// multi-head attention and a GELU MLP with residuals, final layer norm, untied LM head.
/// The attention is the op sequence the ONNX importer produces for samples/gpt.
FailureOr<OwningOpRef<ModuleOp>> buildGpt(MLIRContext &ctx, const ZooOptions &o) {
  const int64_t B = o.batch, S = o.seq, D = o.width, H = o.heads, hd = D / H, V = o.vocab;
  Type i64 = IntegerType::get(&ctx, 64);
  GraphBuilder g(ctx, {{"idx", {B, S}, i64}, {"targets", {B, S}, i64}}, o.decomposed);
  // GPT-2's init: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers).
  const std::string init = normal(0.02), residualInit = normal(0.02 / std::sqrt(2.0 * o.layers));

  Value x = g.create<plait::GatherOp>(g.param("wte.weight", {V, D}, init), g.arg(0));
  x = g.add(x, g.param("wpe.weight", {S, D}, normal(0.01)));
  // Causal mask: true strictly above the diagonal, where scores become -inf.
  Value ones = g.create<plait::ConstantOp>(
      DenseElementsAttr::get(g.tensor({S, S}, IntegerType::get(&ctx, 1)), true));
  Value future = g.create<plait::TriluOp>(ones, /*upper=*/true, /*k=*/1);
  Value minusInf = g.scalar(-std::numeric_limits<float>::infinity());
  Value scale = g.scalar(1.0f / std::sqrt(static_cast<float>(hd)));

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
    Value scores = g.create<plait::MulOp>(g.create<plait::MatmulOp>(q, kT), scale);
    scores = g.create<plait::WhereOp>(future, minusInf, scores);
    Value probs = g.create<plait::SoftmaxOp>(scores, /*axis=*/-1);
    Value y = g.create<plait::MatmulOp>(probs, v); // [B, H, S, hd]
    y = g.reshape(g.transpose(y, {0, 2, 1, 3}), {B, S, D});
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

/// One size option: its flag, the field it sets and its accepted range.
struct SizeFlag {
  const char *flag;
  int64_t ZooOptions::*field;
  int64_t min, max;
  const char *help;
};

const SizeFlag kSizeFlags[] = {
    {"--layers", &ZooOptions::layers, 1, 4096, "blocks"},
    {"--width", &ZooOptions::width, 1, 16384, "hidden width (cnn: channels)"},
    {"--heads", &ZooOptions::heads, 1, 16384, "attention heads (gpt; must divide --width)"},
    {"--batch", &ZooOptions::batch, 1, 65536, "samples per step (per rank)"},
    {"--seq", &ZooOptions::seq, 1, 16384, "sequence length (gpt)"},
    {"--vocab", &ZooOptions::vocab, 2, 1 << 20, "vocabulary size (gpt)"},
    {"--image", &ZooOptions::image, 1, 4096, "image height = width (cnn)"},
    {"--classes", &ZooOptions::classes, 2, 1 << 20, "classes (mlp, cnn)"},
};

/// A model family: its defaults (a size field left 0 does not apply to the family).
struct Family {
  const char *name;
  const char *summary;
  const char *inputs;
  ZooOptions defaults;
  bool hasNorm; // --decomposed applies
  FailureOr<OwningOpRef<ModuleOp>> (*build)(MLIRContext &, const ZooOptions &);
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
};

/// The flags a family takes with the values of `o` ("--layers 2 --width 32 ...").
std::string flagsOf(const Family &family, const ZooOptions &o) {
  std::string text;
  for (const SizeFlag &size : kSizeFlags)
    if (family.defaults.*size.field != 0)
      text += fmt::format(" {} {}", size.flag, o.*size.field);
  if (family.hasNorm && o.decomposed)
    text += " --decomposed";
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
  return text.substr(2);
}

void printFamilies() {
  for (const Family &family : kFamilies) {
    std::cout << family.name << "  " << family.summary << "\n"
              << "     inputs " << family.inputs << "\n"
              << "     defaults " << flagsOf(family, family.defaults) << "\n";
  }
}

int fail(const std::string &message) {
  std::cerr << "plait-zoo: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"plait-zoo: write a synthetic model (gpt, mlp, cnn) as plait-dialect .mlir"};
  ZooOptions options;
  std::string output = "-";
  bool list = false;
  app.add_option("--family", options.family, "gpt, mlp or cnn (see --list)");
  for (const SizeFlag &size : kSizeFlags)
    app.add_option(size.flag, options.*size.field, size.help)
        ->check(CLI::Range(size.min, size.max));
  app.add_flag("--decomposed", options.decomposed,
               "layer norm and GELU as the ONNX importer's decomposition (gpt, mlp)");
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
    return fail("--family is required (gpt, mlp or cnn; see --list)");
  const Family *family = nullptr;
  for (const Family &candidate : kFamilies)
    if (options.family == candidate.name)
      family = &candidate;
  if (!family)
    return fail("unknown family '" + options.family + "' (expected gpt, mlp or cnn)");
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
  if (family->defaults.heads != 0 && options.width % options.heads != 0)
    return fail(fmt::format("--heads {} must divide --width {}", options.heads, options.width));

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
  int64_t params = 0;
  (*module)->walk([&](plait::ParamOp param) {
    params += cast<RankedTensorType>(param.getType()).getNumElements();
  });
  os << "// plait-zoo --family " << family->name << " " << flagsOf(*family, options)
     << "\n// params: " << params << " f32 elements; blocks: " << options.layers << "\n";
  (*module)->print(os);
  os.flush();
  if (os.has_error()) {
    std::string reason = os.error().message();
    os.clear_error(); // raw_fd_ostream aborts when destroyed with an unhandled error
    return fail("cannot write '" + output + "': " + reason);
  }
  return 0;
}
