// Registration of the plait dialect.
#include "ir/PlaitDialect.h"

using namespace mlir;

#include "ir/PlaitDialect.cpp.inc"
#include "ir/VJPInterface.cpp.inc"

namespace plait {

void PlaitDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/PlaitOps.cpp.inc"
      ,
#define GET_OP_LIST
#include "ir/PlaitTrainOps.cpp.inc"
      ,
#define GET_OP_LIST
#include "ir/PlaitDistOps.cpp.inc"
      >();
}

Operation *PlaitDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                             Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

} // namespace plait
