// Flatten tensors into one padded 1-D buffer and back.
#include "passes/sharding/FlatUnit.h"

#include "ir/PlaitDialect.h"

using namespace mlir;

namespace plait {

Value flattenInto(OpBuilder &b, Location loc, ValueRange values, int64_t paddedNumel) {
  Type element = cast<RankedTensorType>(values.front().getType()).getElementType();
  SmallVector<Value> parts;
  int64_t total = 0;
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    auto flatType = RankedTensorType::get({type.getNumElements()}, element);
    parts.push_back(type == flatType ? v : b.create<ReshapeOp>(loc, flatType, v).getResult());
    total += type.getNumElements();
  }
  if (paddedNumel > total) {
    auto padType = RankedTensorType::get({paddedNumel - total}, element);
    parts.push_back(b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                                  padType, b.getZeroAttr(element))));
  }
  if (parts.size() == 1)
    return parts.front();
  return b.create<ConcatOp>(loc, RankedTensorType::get({std::max(total, paddedNumel)}, element),
                            parts, b.getI64IntegerAttr(0));
}

SmallVector<Value> unflatten(OpBuilder &b, Location loc, Value flat, TypeRange like) {
  auto flatType = cast<RankedTensorType>(flat.getType());
  SmallVector<int64_t> sizes;
  SmallVector<Type> pieceTypes;
  int64_t total = 0;
  for (Type t : like) {
    int64_t n = cast<RankedTensorType>(t).getNumElements();
    sizes.push_back(n);
    pieceTypes.push_back(RankedTensorType::get({n}, flatType.getElementType()));
    total += n;
  }
  if (total < flatType.getDimSize(0)) {
    sizes.push_back(flatType.getDimSize(0) - total);
    pieceTypes.push_back(RankedTensorType::get({sizes.back()}, flatType.getElementType()));
  }
  SmallVector<Value> flatPieces;
  if (pieceTypes.size() == 1)
    flatPieces.push_back(flat);
  else
    llvm::append_range(flatPieces, b.create<SplitOp>(loc, pieceTypes, flat, b.getI64IntegerAttr(0),
                                                     b.getDenseI64ArrayAttr(sizes))
                                       .getResults());
  SmallVector<Value> out;
  for (auto [t, piece] : llvm::zip(like, flatPieces))
    out.push_back(piece.getType() == t ? piece : b.create<ReshapeOp>(loc, t, piece).getResult());
  return out;
}

} // namespace plait
