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
