// The shape rules' shared pieces for the ops' inferReturnTypes (PlaitOps.cpp,
// PlaitMovementOps.cpp, PlaitLossOps.cpp): the failure reporter worded like the verifier, the
// guard every rule starts with, and the check of an array attribute's entries.
#pragma once

#include <optional>
#include <utility>

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Value.h"

namespace plait {

// Every plait operand is a statically shaped tensor: the verifier checks the ODS constraints
// before the shape rules run, and checkShapeRuleInputs() below guards the other callers.
inline mlir::RankedTensorType rankedType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// Reports a shape-rule failure of one op, worded like emitOpError: "'plait.add' op ...".
/// Silent when there is no location (a builder probing whether an op would be valid).
class ShapeRule {
public:
  ShapeRule(std::optional<mlir::Location> loc, llvm::StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args> mlir::LogicalResult fail(Args &&...args) const {
    return mlir::emitOptionalError(loc, "'", opName, "' op ", std::forward<Args>(args)...);
  }

private:
  std::optional<mlir::Location> loc;
  llvm::StringRef opName;
};

/// First step of every shape rule. The verifier runs the ODS checks (required attributes,
/// operand types) before the shape rules, but callers that infer types on an op they have
/// not verified yet (the ONNX importer does) reach the rules without them. So: required
/// attributes are checked here with the verifier's own messages, and operands that are not
/// statically shaped tensors fail quietly -- the verifier's type constraint reports them --
/// instead of reaching rankedType()'s cast.
template <typename Adaptor>
mlir::LogicalResult checkShapeRuleInputs(mlir::MLIRContext *context,
                                         std::optional<mlir::Location> loc, Adaptor adaptor) {
  if (mlir::failed(adaptor.verify(loc ? *loc : mlir::UnknownLoc::get(context))))
    return mlir::failure();
  for (mlir::Value operand : adaptor.getOperands()) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape())
      return mlir::failure();
  }
  return mlir::success();
}

/// Checks that `attr` has `count` entries, each >= `minValue`.
inline mlir::LogicalResult checkArray(const ShapeRule &rule, llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> attr, size_t count,
                                      int64_t minValue) {
  if (attr.size() != count)
    return rule.fail("'", name, "' must have ", count, " entries, got ", attr.size());
  for (int64_t v : attr)
    if (v < minValue)
      return rule.fail("'", name, "' entries must be >= ", minValue, ", got ", v);
  return mlir::success();
}

} // namespace plait
