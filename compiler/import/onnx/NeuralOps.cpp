// Importers of ONNX's neural-network ops: MatMul, Gemm, global pooling, normalisations,
// softmax, reductions, ArgMax/ArgMin, Hardmax, CumSum, LRN and the losses. Convolutions and
// windowed pooling are in ConvPoolOps.cpp.
#include "compiler/import/onnx/Importer.h"
#include "ir/ShapeRules.h"

#include <algorithm>

using namespace mlir;

namespace plait::onnx_import {
namespace {

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult importMatMul(NodeContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  return ctx.setResult(ctx.create<MatmulOp>({a, b}));
}

LogicalResult importGemm(NodeContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  llvm::SmallVector<Value> operands{a, b};
  if (ctx.hasInput(2)) {
    Value c = ctx.input(2);
    if (!c)
      return failure();
    operands.push_back(c);
  }
  return ctx.setResult(ctx.create<GemmOp>(
                            operands, {ctx.boolAttr("trans_a", ctx.intAttr("transA", 0) != 0),
                                       ctx.boolAttr("trans_b", ctx.intAttr("transB", 0) != 0),
                                       ctx.f64Attr("alpha", ctx.floatAttr("alpha", 1.0)),
                                       ctx.f64Attr("beta", ctx.floatAttr("beta", 1.0))}));
}

//===----------------------------------------------------------------------===//
// Global pooling
//===----------------------------------------------------------------------===//

llvm::SmallVector<int64_t> spatialAxes(int64_t rank) {
  llvm::SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

template <typename ReduceOpT>
LogicalResult importGlobalPool(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<ReduceOpT>({x}, {ctx.arrayAttr("axes", spatialAxes(xType.getRank())),
                                                        ctx.boolAttr("keepdims", true)})
                          : Value());
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

/// [C] -> [C, 1, ..., 1] so a per-channel vector broadcasts against [N, C, ...].
Value perChannel(NodeContext &ctx, Value v, int64_t rank) {
  llvm::SmallVector<int64_t> shape(shapeOf(v));
  shape.append(rank - 2, 1);
  return ctx.reshape(v, shape);
}

/// mean and (biased) variance of `x` over `axes`, kept as size-1 dimensions; returns x - mean and
/// the variance.
std::optional<std::pair<Value, Value>> centredAndVariance(NodeContext &ctx, Value x,
                                                          llvm::ArrayRef<int64_t> axes,
                                                          bool sync = false);

/// n / (n - 1), a batch variance's unbiasing over n values per channel. Synchronised, n is this
/// rank's count: the constant is its own, marked for plait-shard to count every rank's values
/// (plait.unbiased_ranks).
Value unbias(NodeContext &ctx, int64_t n, Type t, bool sync) {
  double factor = double(n) / double(n - 1);
  if (!sync)
    return ctx.scalar(factor, t);
  auto type = RankedTensorType::get({}, t);
  auto constant = ctx.builder().create<ConstantOp>(
      ctx.loc(), DenseElementsAttr::get(type, FloatAttr::get(t, factor).getValue()));
  constant->setAttr("plait.unbiased_count", ctx.builder().getI64IntegerAttr(n));
  constant->setAttr("plait.unbiased_ranks", ctx.builder().getUnitAttr());
  return constant.getResult();
}

/// Training-mode BatchNormalization: normalises with the batch's statistics, and computes the
/// running statistics (outputs 1 and 2) as input * momentum + batch * (1 - momentum).
LogicalResult importBatchNormTraining(NodeContext &ctx, RankedTensorType xType) {
  int64_t rank = xType.getRank(), channels = xType.getDimSize(1);
  double eps = ctx.floatAttr("epsilon", 1e-5), momentum = ctx.floatAttr("momentum", 0.9);
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (!x || !scale || !bias)
    return failure();
  llvm::SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  bool sync = ctx.syncBatchNorm();
  auto stats = centredAndVariance(ctx, x, axes, sync);
  if (!stats)
    return failure();
  Type t = xType.getElementType();
  Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(eps, t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value n = inv ? ctx.create<MulOp>({stats->first, inv}) : Value();
  Value sc = n ? perChannel(ctx, scale, rank) : Value();
  Value bc = sc ? perChannel(ctx, bias, rank) : Value();
  Value y = bc ? ctx.create<MulOp>({n, sc}) : Value();
  y = y ? ctx.create<AddOp>({y, bc}) : Value();
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  // Outputs 1 and 2: input * momentum + batch * (1 - momentum), the batch variance the
  // population's (ONNX's ReduceVar). Running statistics kept as buffers for training take
  // PyTorch's update instead, the batch variance unbiased (n / (n - 1)).
  int64_t perChannel = xType.getNumElements() / std::max<int64_t>(channels, 1);
  // The batch mean the centred input subtracted ([1, C, 1, ...]), read again as [C].
  Value batchMean = ctx.reshape(stats->first.getDefiningOp()->getOperand(1), {channels});
  Value batchVar = batchMean ? ctx.reshape(stats->second, {channels}) : Value();
  if (!batchVar)
    return failure();
  for (unsigned out : {1u, 2u}) {
    Value batch = out == 1 ? batchMean : batchVar;
    auto blend = [&](Value running, Value fresh) -> Value {
      Value kept = ctx.create<MulOp>({running, ctx.scalar(momentum, t)});
      Value part = kept ? ctx.create<MulOp>({fresh, ctx.scalar(1.0 - momentum, t)}) : Value();
      return part ? ctx.create<AddOp>({kept, part}) : Value();
    };
    Value nodeOutput;
    Value running = ctx.bufferInput(out + 2, [&](Value buffer) -> Value {
      Value fresh = batch;
      if (out == 2 && perChannel < 2 && !sync) {
        (void)ctx.error("training over one value per channel has no batch variance to "
                        "unbias (PyTorch refuses it too): give a larger batch");
        return {};
      }
      if (out == 2)
        fresh = ctx.create<MulOp>({batch, unbias(ctx, perChannel, t, sync)});
      Value next = fresh ? blend(buffer, fresh) : Value();
      if (out == 1)
        nodeOutput = next;
      return next;
    });
    if (!running)
      return failure();
    if (!ctx.hasOutput(out))
      continue;
    if (!nodeOutput)
      nodeOutput = blend(running, batch);
    if (!nodeOutput)
      return failure();
    ctx.setOutput(out, nodeOutput);
  }
  // PyTorch's third buffer, num_batches_tracked, is not in the export: the forwards of this
  // run are counted under its name, next to the running mean's (`<prefix>.running_mean`), so
  // that the saved weights hold every key of the module's state_dict.
  llvm::StringRef meanName = ctx.inputName(3);
  auto meanParam = ctx.hasInput(3) ? ctx.input(3).getDefiningOp<ParamOp>() : ParamOp();
  if (meanParam && meanParam.getBuffer() && meanName.ends_with(".running_mean"))
    (void)ctx.counterBuffer(meanName.drop_back(strlen(".running_mean")).str() +
                            ".num_batches_tracked");
  // BatchNormalization-9's saved_mean and saved_var: the batch's mean and (population)
  // variance.
  if (ctx.hasOutput(3))
    ctx.setOutput(3, batchMean);
  if (ctx.hasOutput(4))
    ctx.setOutput(4, batchVar);
  return success();
}

LogicalResult importBatchNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  // Training mode: opset 14's attribute; before it (BatchNormalization-9), the running
  // statistics' outputs asked for (as torch.onnx.export writes training-mode BatchNorm at
  // opsets 9-13: outputs Y, mean, var, saved_mean, saved_var).
  if (ctx.intAttr("training_mode", 0) != 0 ||
      (ctx.opset() < 14 && (ctx.hasOutput(1) || ctx.hasOutput(2))))
    return importBatchNormTraining(ctx, xType);
  double eps = ctx.floatAttr("epsilon", 1e-5);
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  // Running statistics are not trained: initializers become constants, not params.
  Value mean = ctx.constantInput(3), var = ctx.constantInput(4);
  if (!x || !scale || !bias || !mean || !var)
    return failure();
  int64_t channels = xType.getDimSize(1);
  for (Value v : {scale, bias, mean, var})
    if (shapeOf(v) != llvm::ArrayRef<int64_t>{channels})
      return ctx.error("scale, B, mean and var must have shape [" + llvm::Twine(channels) + "]");
  Type t = xType.getElementType();
  // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a.
  Value ve = ctx.create<AddOp>({var, ctx.scalar(eps, t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value a = inv ? ctx.create<MulOp>({scale, inv}) : Value();
  Value ma = a ? ctx.create<MulOp>({mean, a}) : Value();
  Value b = ma ? ctx.create<SubOp>({bias, ma}) : Value();
  Value ac = b ? perChannel(ctx, a, xType.getRank()) : Value();
  Value bc = ac ? perChannel(ctx, b, xType.getRank()) : Value();
  Value xa = bc ? ctx.create<MulOp>({x, ac}) : Value();
  return ctx.setResult(xa ? ctx.create<AddOp>({xa, bc}) : Value());
}

/// mean and (biased) variance of `x` over `axes`, kept as size-1 dimensions; returns x - mean and
/// the variance. With `sync`, both are plait.sync_means: the global batch's, each rank holding
/// an equal slice of it.
std::optional<std::pair<Value, Value>> centredAndVariance(NodeContext &ctx, Value x,
                                                          llvm::ArrayRef<int64_t> axes,
                                                          bool sync) {
  llvm::SmallVector<NamedAttribute> attrs{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)};
  auto synced = [&](Value local) { return sync && local ? ctx.create<SyncMeanOp>({local}) : local; };
  Value mean = synced(ctx.create<ReduceMeanOp>({x}, attrs));
  Value d = mean ? ctx.create<SubOp>({x, mean}) : Value();
  Value sq = d ? ctx.create<MulOp>({d, d}) : Value();
  Value var = synced(sq ? ctx.create<ReduceMeanOp>({sq}, attrs) : Value());
  if (!var)
    return std::nullopt;
  return std::make_pair(d, var);
}

LogicalResult importInstanceNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (!x || !scale || !bias)
    return failure();
  Type t = xType.getElementType();
  auto stats = centredAndVariance(ctx, x, spatialAxes(xType.getRank()));
  if (!stats)
    return failure();
  Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(ctx.floatAttr("epsilon", 1e-5), t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value n = inv ? ctx.create<MulOp>({stats->first, inv}) : Value();
  Value sc = n ? perChannel(ctx, scale, xType.getRank()) : Value();
  Value bc = sc ? perChannel(ctx, bias, xType.getRank()) : Value();
  Value y = bc ? ctx.create<MulOp>({n, sc}) : Value();
  return ctx.setResult(y ? ctx.create<AddOp>({y, bc}) : Value());
}

LogicalResult importLayerNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  int64_t rank = xType.getRank();
  int64_t axisAttr = ctx.intAttr("axis", -1);
  auto axis = normalizeAxis(axisAttr, rank);
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisAttr) + " is out of range for rank " +
                     llvm::Twine(rank));
  double eps = ctx.floatAttr("epsilon", 1e-5);
  llvm::ArrayRef<int64_t> normShape = xType.getShape().drop_front(*axis);
  Value x = ctx.input(0), scale = ctx.input(1);
  if (!x || !scale)
    return failure();
  // plait.layer_norm wants scale and bias in the normalised shape; ONNX lets them broadcast.
  scale = ctx.broadcastTo(scale, normShape);
  if (!scale)
    return failure();
  llvm::SmallVector<Value> operands{x, scale};
  if (ctx.hasInput(2)) {
    Value bias = ctx.input(2);
    bias = bias ? ctx.broadcastTo(bias, normShape) : Value();
    if (!bias)
      return failure();
    operands.push_back(bias);
  }
  Value y = ctx.create<LayerNormOp>(operands, {ctx.i64Attr("axis", *axis), ctx.f64Attr("epsilon", eps)},
                                    xType);
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  if (ctx.hasOutput(1) || ctx.hasOutput(2)) {
    llvm::SmallVector<int64_t> axes;
    for (int64_t d = *axis; d < rank; ++d)
      axes.push_back(d);
    auto stats = centredAndVariance(ctx, x, axes);
    if (!stats)
      return failure();
    if (ctx.hasOutput(1)) {
      Value mean = ctx.create<ReduceMeanOp>({x}, {ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)});
      if (!mean)
        return failure();
      ctx.setOutput(1, mean);
    }
    if (ctx.hasOutput(2)) {
      Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(eps, xType.getElementType())});
      Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
      if (!inv)
        return failure();
      ctx.setOutput(2, inv);
    }
  }
  return success();
}

/// MeanVarianceNormalization as ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
LogicalResult importMeanVarianceNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  llvm::SmallVector<int64_t> axes =
      ctx.hasAttr("axes") ? ctx.intsAttr("axes") : llvm::SmallVector<int64_t>{0, 2, 3};
  for (int64_t &a : axes) {
    auto norm = normalizeAxis(a, xType.getRank());
    if (!norm)
      return ctx.error("axis " + llvm::Twine(a) + " is out of range");
    a = *norm;
  }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = xType.getElementType();
  llvm::SmallVector<NamedAttribute> attrs{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)};
  Value mean = ctx.create<ReduceMeanOp>({x}, attrs);
  Value meanSq = mean ? ctx.create<MulOp>({mean, mean}) : Value();
  Value sq = meanSq ? ctx.create<MulOp>({x, x}) : Value();
  Value eSq = sq ? ctx.create<ReduceMeanOp>({sq}, attrs) : Value();
  Value var = eSq ? ctx.create<SubOp>({eSq, meanSq}) : Value();
  Value std = var ? ctx.create<SqrtOp>({var}) : Value();
  Value den = std ? ctx.create<AddOp>({std, ctx.scalar(1e-9, t)}) : Value();
  Value num = den ? ctx.create<SubOp>({x, mean}) : Value();
  return ctx.setResult(num ? ctx.create<DivOp>({num, den}) : Value());
}

template <typename OpT>
LogicalResult importSoftmax(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<OpT>({x}, {ctx.i64Attr("axis", ctx.intAttr("axis", -1))}) : Value());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Reduction Kind>
LogicalResult importReduce(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  int64_t rank = xType.getRank();
  auto axesOr = ctx.intsInputOrAttr(1, "axes");
  if (!axesOr)
    return failure();
  llvm::SmallVector<int64_t> axes = std::move(*axesOr);
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.intAttr("noop_with_empty_axes", 0) != 0)
      return ctx.forwardInput(0, 0);
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    auto norm = normalizeAxis(a, rank);
    if (!norm)
      return ctx.error("axis " + llvm::Twine(a) + " is out of range for rank " + llvm::Twine(rank));
    if (seen[*norm])
      return ctx.error("axis " + llvm::Twine(a) + " is repeated");
    seen[*norm] = true;
    a = *norm;
  }
  llvm::sort(axes);

  constexpr bool simple = Kind == Reduction::Sum || Kind == Reduction::Mean ||
                          Kind == Reduction::Max || Kind == Reduction::Min ||
                          Kind == Reduction::Prod;
  if constexpr (simple) {
    const HostTensor *x = ctx.foldedInput(0);
    if (x && fitsFolding(x->shape())) {
      ReduceFn fn = Kind == Reduction::Sum    ? ReduceFn::Sum
                    : Kind == Reduction::Mean ? ReduceFn::Mean
                    : Kind == Reduction::Max  ? ReduceFn::Max
                    : Kind == Reduction::Min  ? ReduceFn::Min
                                              : ReduceFn::Prod;
      ctx.setOutput(0, foldReduce(fn, *x, axes, keepdims));
      return success();
    }
  }
  bool floatOnly = Kind == Reduction::L2 || Kind == Reduction::LogSum ||
                   Kind == Reduction::LogSumExp;
  if (floatOnly && failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto attrs = [&](bool keep) {
    return llvm::SmallVector<NamedAttribute>{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", keep)};
  };
  switch (Kind) {
  case Reduction::Sum:
    return ctx.setResult(ctx.create<ReduceSumOp>({x}, attrs(keepdims)));
  case Reduction::Mean:
    return ctx.setResult(ctx.create<ReduceMeanOp>({x}, attrs(keepdims)));
  case Reduction::Max:
    return ctx.setResult(ctx.create<ReduceMaxOp>({x}, attrs(keepdims)));
  case Reduction::Min:
    return ctx.setResult(ctx.create<ReduceMinOp>({x}, attrs(keepdims)));
  case Reduction::Prod:
    return ctx.setResult(ctx.create<ReduceProdOp>({x}, attrs(keepdims)));
  case Reduction::L1: {
    Value a = ctx.create<AbsOp>({x});
    return ctx.setResult(a ? ctx.create<ReduceSumOp>({a}, attrs(keepdims)) : Value());
  }
  case Reduction::L2:
  case Reduction::SumSquare: {
    Value sq = ctx.create<MulOp>({x, x});
    Value s = sq ? ctx.create<ReduceSumOp>({sq}, attrs(keepdims)) : Value();
    if (Kind == Reduction::SumSquare)
      return ctx.setResult(s);
    return ctx.setResult(s ? ctx.create<SqrtOp>({s}) : Value());
  }
  case Reduction::LogSum: {
    Value s = ctx.create<ReduceSumOp>({x}, attrs(keepdims));
    return ctx.setResult(s ? ctx.create<LogOp>({s}) : Value());
  }
  case Reduction::LogSumExp: {
    // log(sum(exp(x - m))) + m with m = max(x): no overflow for large inputs.
    Value m = ctx.create<ReduceMaxOp>({x}, attrs(true));
    Value d = m ? ctx.create<SubOp>({x, m}) : Value();
    Value e = d ? ctx.create<ExpOp>({d}) : Value();
    Value s = e ? ctx.create<ReduceSumOp>({e}, attrs(true)) : Value();
    Value l = s ? ctx.create<LogOp>({s}) : Value();
    Value r = l ? ctx.create<AddOp>({l, m}) : Value();
    if (r && !keepdims) {
      llvm::SmallVector<int64_t> shape;
      for (int64_t dim = 0; dim < rank; ++dim)
        if (!seen[dim])
          shape.push_back(xType.getDimSize(dim));
      r = ctx.reshape(r, shape);
    }
    return ctx.setResult(r);
  }
  }
  return failure();
}

template <typename OpT>
LogicalResult importArg(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  return ctx.setResult(ctx.create<OpT>(
                            {x}, {ctx.i64Attr("axis", ctx.intAttr("axis", 0)),
                                  ctx.boolAttr("keepdims", ctx.intAttr("keepdims", 1) != 0),
                                  ctx.boolAttr("select_last_index",
                                               ctx.intAttr("select_last_index", 0) != 0)}));
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult importLoss(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value input = ctx.input(0), target = ctx.input(1);
  if (!input || !target)
    return failure();
  llvm::SmallVector<Value> operands{input, target};
  if (ctx.hasInput(2)) {
    Value weight = ctx.input(2);
    if (!weight)
      return failure();
    operands.push_back(weight);
  }
  std::string reduction = ctx.stringAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return ctx.error("reduction must be mean, sum or none, got '" + reduction + "'");
  llvm::SmallVector<NamedAttribute> attrs{
      ctx.attr("reduction", StringAttr::get(ctx.context(), reduction))};
  if (ctx.hasAttr("ignore_index"))
    attrs.push_back(ctx.i64Attr("ignore_index", ctx.intAttr("ignore_index", 0)));
  Value loss = ctx.create<OpT>(operands, attrs);
  if (!loss)
    return failure();
  ctx.setOutput(0, loss);
  if (ctx.hasOutput(1)) { // SoftmaxCrossEntropyLoss's log_prob
    Value logProb = ctx.create<LogSoftmaxOp>({input}, {ctx.i64Attr("axis", 1)});
    if (!logProb)
      return failure();
    ctx.setOutput(1, logProb);
  }
  return success();
}


/// Hardmax: 1 where an element is the first maximum along `axis`, else 0.
LogicalResult importHardmax(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  int64_t axisAttr = ctx.intAttr("axis", -1);
  auto axis = normalizeAxis(axisAttr, xType.getRank());
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisAttr) + " is out of range");
  Value x = ctx.input(0);
  if (!x)
    return failure();
  int64_t n = xType.getDimSize(*axis);
  if (n > kMaxFoldedElements)
    return ctx.unsupported("Hardmax over more than " + llvm::Twine(kMaxFoldedElements) +
                           " elements");
  Value am = ctx.create<ArgMaxOp>({x}, {ctx.i64Attr("axis", *axis), ctx.boolAttr("keepdims", true)});
  llvm::SmallVector<int64_t> shape(xType.getRank(), 1), iota;
  shape[*axis] = n;
  for (int64_t i = 0; i < n; ++i)
    iota.push_back(i);
  Value range = ctx.constant(HostTensor::fromInts(ElemKind::I64, shape, iota));
  Value hot = am ? ctx.create<EqualOp>({am, range}) : Value();
  return ctx.setResult(hot ? ctx.cast(hot, xType.getElementType()) : Value());
}

/// CumSum along a constant axis as a matmul with a triangular 0/1 matrix: y[j] = sum_i x[i] T[i, j].
LogicalResult importCumSum(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  const HostTensor *axisT = ctx.requireConstInput(1, "axis");
  if (!axisT)
    return failure();
  if (axisT->numElements() != 1)
    return ctx.error("axis must be a scalar");
  int64_t rank = xType.getRank();
  auto axis = normalizeAxis(axisT->getInt(0), rank);
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisT->getInt(0)) + " is out of range");
  bool exclusive = ctx.intAttr("exclusive", 0) != 0, reverse = ctx.intAttr("reverse", 0) != 0;
  int64_t n = xType.getDimSize(*axis);
  if (!fitsFolding({n, n}))
    return ctx.unsupported("CumSum along a dimension of more than 2048 elements (plait computes "
                           "it as a matmul with an n x n constant)");
  HostTensor tri(*kindOf(xType.getElementType()), {n, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool take = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      tri.setInt(i * n + j, take ? 1 : 0);
    }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  // Move the axis last, multiply, move it back.
  AxisMove last = moveAxis(rank, *axis, rank - 1);
  Value v = last.apply(ctx, x);
  v = v ? ctx.create<MatmulOp>({v, ctx.constant(tri)}) : Value();
  return ctx.setResult(last.undo(ctx, v));
}

/// LRN: x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta. The window
/// sum is an average pool over the channel dimension of [N, 1, C, rest] times `size`.
LogicalResult importLRN(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  int64_t size = ctx.intAttr("size", 0);
  if (size < 1)
    return ctx.error("size must be >= 1");
  double alpha = ctx.floatAttr("alpha", 1e-4), beta = ctx.floatAttr("beta", 0.75),
         bias = ctx.floatAttr("bias", 1.0);
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = xType.getElementType();
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1);
  int64_t rest = numElementsOf(xType.getShape().drop_front(2));
  Value sq = ctx.create<MulOp>({x, x});
  Value r = sq ? ctx.reshape(sq, {n, 1, c, rest}) : Value();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = r ? ctx.create<AvgPool2dOp>(
                       {r}, {ctx.arrayAttr("kernel", {size, 1}), ctx.arrayAttr("strides", {1, 1}),
                             ctx.arrayAttr("pads", {before, 0, after, 0}),
                             ctx.boolAttr("count_include_pad", true)})
                 : Value();
  Value sum = mean ? ctx.reshape(mean, xType.getShape()) : Value();
  Value scaled = sum ? ctx.create<MulOp>({sum, ctx.scalar(alpha, t)}) : Value(); // mean * size * alpha / size
  Value base = scaled ? ctx.create<AddOp>({scaled, ctx.scalar(bias, t)}) : Value();
  Value den = base ? ctx.create<PowOp>({base, ctx.scalar(beta, t)}) : Value();
  return ctx.setResult(den ? ctx.create<DivOp>({x, den}) : Value());
}

} // namespace

void registerNeuralOps(OpImporterMap &map) {
  map["MatMul"] = importMatMul;
  map["Gemm"] = importGemm;
  map["GlobalAveragePool"] = importGlobalPool<ReduceMeanOp>;
  map["GlobalMaxPool"] = importGlobalPool<ReduceMaxOp>;
  map["BatchNormalization"] = importBatchNorm;
  map["InstanceNormalization"] = importInstanceNorm;
  map["LayerNormalization"] = importLayerNorm;
  map["MeanVarianceNormalization"] = importMeanVarianceNorm;
  map["Softmax"] = importSoftmax<SoftmaxOp>;
  map["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
  map["ReduceSum"] = importReduce<Reduction::Sum>;
  map["ReduceMean"] = importReduce<Reduction::Mean>;
  map["ReduceMax"] = importReduce<Reduction::Max>;
  map["ReduceMin"] = importReduce<Reduction::Min>;
  map["ReduceProd"] = importReduce<Reduction::Prod>;
  map["ReduceL1"] = importReduce<Reduction::L1>;
  map["ReduceL2"] = importReduce<Reduction::L2>;
  map["ReduceLogSum"] = importReduce<Reduction::LogSum>;
  map["ReduceLogSumExp"] = importReduce<Reduction::LogSumExp>;
  map["ReduceSumSquare"] = importReduce<Reduction::SumSquare>;
  map["ArgMax"] = importArg<ArgMaxOp>;
  map["ArgMin"] = importArg<ArgMinOp>;
  map["Hardmax"] = importHardmax;
  map["CumSum"] = importCumSum;
  map["LRN"] = importLRN;
  map["SoftmaxCrossEntropyLoss"] = importLoss<SoftmaxCrossEntropyOp>;
  map["NegativeLogLikelihoodLoss"] = importLoss<NllLossOp>;
}

} // namespace plait::onnx_import
