// Random draws: RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike and Bernoulli
// as plait.random, drawn afresh every step (the plait.hyper "step" it reads) from the node's
// seed and a stream of its own (dropout::streamOf its output's name, unique in the graph).
// Stochastic depth exports as these (timm's drop_path: a Bernoulli draw, or RandomUniformLike
// and a comparison, of shape [B, 1, ...]).
#include <cstring>
#include <string>

#include "codegen/schema/DropoutMask.h"
#include "compiler/import/onnx/Importer.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The node's seed: ONNX's is a float; its bits key the draw (absent: 0).
int64_t seedOf(NodeContext &ctx) {
  if (!ctx.hasAttr("seed"))
    return 0;
  float seed = float(ctx.floatAttr("seed", 0.0));
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof bits);
  return int64_t(bits);
}

/// A float element type from the `dtype` attribute, or `dflt` when there is none. Null after
/// the node's error.
Type drawType(NodeContext &ctx, Type dflt) {
  Type type = dflt;
  if (ctx.hasAttr("dtype"))
    type = elementTypeOf(int(ctx.intAttr("dtype", 0)), ctx.context());
  if (!type || !isa<FloatType>(type)) {
    (void)ctx.unsupported("dtype for a random draw (plait draws float16, bfloat16, float and "
                          "double)");
    return {};
  }
  return type;
}

/// plait.random of `type`, keyed by the node's seed and first output's name.
Value draw(NodeContext &ctx, RankedTensorType type, StringRef distribution, double a, double b) {
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx.context()));
  Value step = ctx.create<HyperOp>({}, {ctx.attr("name", StringAttr::get(ctx.context(), "step"))},
                                   f32Scalar);
  if (!step)
    return {};
  return ctx.create<RandomOp>(
      {step},
      {ctx.attr("distribution", StringAttr::get(ctx.context(), distribution)), ctx.f64Attr("a", a),
       ctx.f64Attr("b", b), ctx.i64Attr("seed", seedOf(ctx)),
       ctx.i64Attr("stream", dropout::streamOf(ctx.outputName(0)))},
      type);
}

/// RandomUniform, RandomNormal (shape from the attribute) and their Like forms (input 0's
/// shape, and its element type unless `dtype` says otherwise).
template <bool Normal, bool Like> LogicalResult importRandom(NodeContext &ctx) {
  llvm::SmallVector<int64_t> shape;
  Type dflt = Float32Type::get(ctx.context());
  if (Like) {
    RankedTensorType like = ctx.inputType(0);
    if (!like)
      return failure();
    shape.assign(like.getShape().begin(), like.getShape().end());
    dflt = isa<FloatType>(like.getElementType()) ? like.getElementType() : Type();
  } else {
    if (!ctx.hasAttr("shape"))
      return ctx.error("needs its shape attribute");
    shape = ctx.intsAttr("shape");
    for (int64_t d : shape)
      if (d < 0)
        return ctx.error("shape has a negative dimension " + llvm::Twine(d));
  }
  Type element = drawType(ctx, dflt);
  if (!element)
    return failure();
  double a = Normal ? ctx.floatAttr("mean", 0.0) : ctx.floatAttr("low", 0.0);
  double b = Normal ? ctx.floatAttr("scale", 1.0) : ctx.floatAttr("high", 1.0);
  if (!Normal && !(a <= b))
    return ctx.error("low " + std::to_string(a) + " is above high " + std::to_string(b));
  if (Normal && !(b >= 0))
    return ctx.error("scale " + std::to_string(b) + " is negative");
  return ctx.setResult(
      draw(ctx, RankedTensorType::get(shape, element), Normal ? "normal" : "uniform", a, b));
}

/// Bernoulli: 1 where a uniform draw in [0, 1) is below p, else 0, in `dtype` (default: p's
/// type). No gradient reaches p (the comparison has none), as in PyTorch.
LogicalResult importBernoulli(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  RankedTensorType p = ctx.inputType(0);
  Value probability = p ? ctx.input(0) : Value();
  if (!probability)
    return failure();
  Type out = p.getElementType();
  if (ctx.hasAttr("dtype"))
    out = elementTypeOf(int(ctx.intAttr("dtype", 0)), ctx.context());
  if (!out)
    return ctx.unsupported("dtype " + llvm::Twine(ctx.intAttr("dtype", 0)));
  Value u = draw(ctx, p, "uniform", 0.0, 1.0);
  Value hit = u ? ctx.create<LessOp>({u, probability}) : Value();
  return ctx.setResult(hit ? ctx.cast(hit, out) : Value());
}

} // namespace

void registerRandomOps(OpImporterMap &map) {
  map["RandomUniform"] = importRandom<false, false>;
  map["RandomUniformLike"] = importRandom<false, true>;
  map["RandomNormal"] = importRandom<true, false>;
  map["RandomNormalLike"] = importRandom<true, true>;
  map["Bernoulli"] = importBernoulli;
}

} // namespace plait::onnx_import
