// The plait dialect: declarations shared by every layer of the compiler.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/PlaitDialect.h.inc"

#define GET_OP_CLASSES
#include "ir/PlaitOps.h.inc"

#define GET_OP_CLASSES
#include "ir/PlaitTrainOps.h.inc"

#define GET_OP_CLASSES
#include "ir/PlaitDistOps.h.inc"

#include "ir/VJPInterface.h.inc"

namespace mlir {
class DialectRegistry;
}

namespace plait {
/// Attaches the VJP interface (ir/VJP.cpp) to every differentiable plait op.
void registerVJPInterfaces(mlir::DialectRegistry &registry);
} // namespace plait
