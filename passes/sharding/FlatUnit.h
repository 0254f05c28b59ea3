// Building blocks of the sharding passes: flatten tensors into one padded 1-D buffer and
// cut it back into the original shapes.
#pragma once

#include "mlir/IR/Builders.h"

namespace plait {

/// Concatenation of `values`, each flattened, followed by zeros up to `paddedNumel`
/// elements (at least their total). One value with no padding is just reshaped.
mlir::Value flattenInto(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange values,
                        int64_t paddedNumel);

/// The inverse: pieces of `flat` with the types of `like` (in order), ignoring padding.
llvm::SmallVector<mlir::Value> unflatten(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::Value flat, mlir::TypeRange like);

} // namespace plait
