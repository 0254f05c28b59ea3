// The classification losses' shape rules (softmax_cross_entropy, nll_loss): the loss's shape
// from the reduction, and the f32 result and f32 class weights a half-precision input may
// have.
#include <sstream>

#include "ir/OpShapeRule.h"
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

using namespace mlir;

namespace plait {

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {
template <typename Adaptor>
LogicalResult inferLoss(const ShapeRule &rule, Adaptor adaptor, bool fromLogits,
                        SmallVectorImpl<Type> &results) {
  if (auto smoothing = adaptor.getLabelSmoothingAttr()) {
    double e = smoothing.getValueAsDouble();
    if (!fromLogits)
      return rule.fail("label_smoothing is softmax_cross_entropy's (torch's NLLLoss has none)");
    if (!(e >= 0 && e <= 1)) {
      std::ostringstream value; // as written (Diagnostic prints doubles as %e)
      value << e;
      return rule.fail("label_smoothing must be in [0, 1], got ", value.str());
    }
  }
  auto input = rankedType(adaptor.getInput()), target = rankedType(adaptor.getTarget());
  if (input.getRank() < 2)
    return rule.fail("input must be [N, C, ...], got rank ", input.getRank());
  SmallVector<int64_t> expected{input.getDimSize(0)};
  llvm::append_range(expected, input.getShape().drop_front(2));
  if (target.getShape() != ArrayRef<int64_t>(expected))
    return rule.fail("target has shape ", shapeToString(target.getShape()), ", expected ",
                     shapeToString(expected));
  if (Value weight = adaptor.getWeight()) {
    auto wt = rankedType(weight);
    if (wt.getRank() != 1 || wt.getDimSize(0) != input.getDimSize(1))
      return rule.fail("weight must have shape ", input.getDimSize(1), ", got ",
                       shapeToString(wt.getShape()));
    // f32 weights of bf16 / f16 logits: plait-fuse-loss-cast's form of the loss of their cast
    Type element = input.getElementType();
    bool halfForm = wt.getElementType().isF32() && (element.isBF16() || element.isF16());
    if (wt.getElementType() != element && !halfForm)
      return rule.fail("weight has element type ", wt.getElementType(), ", input has ",
                       element);
  }
  StringRef reduction = adaptor.getReduction();
  if (reduction == "none")
    results.push_back(RankedTensorType::get(expected, input.getElementType()));
  else if (reduction == "mean" || reduction == "sum")
    results.push_back(RankedTensorType::get({}, input.getElementType()));
  else
    return rule.fail("reduction must be mean, sum or none, got '", reduction, "'");
  return success();
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(MLIRContext *context,
                                                      std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  return inferLoss(ShapeRule(loc, getOperationName()), adaptor, true, results);
}

namespace {
bool lossResultCompatible(TypeRange inferred, TypeRange actual) {
  if (inferred == actual)
    return true;
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inferred.front());
  auto out = dyn_cast<RankedTensorType>(actual.front());
  return in && out && (in.getElementType().isBF16() || in.getElementType().isF16()) &&
         out == in.clone(Float32Type::get(in.getContext()));
}
} // namespace

bool SoftmaxCrossEntropyOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  return lossResultCompatible(inferred, actual);
}

bool NllLossOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  return lossResultCompatible(inferred, actual);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  return inferLoss(ShapeRule(loc, getOperationName()), adaptor, false, results);
}

} // namespace plait
