// The plait dialect: tensor ops with value semantics and static shapes.
#ifndef PLAIT_DIALECT_TD
#define PLAIT_DIALECT_TD

include "mlir/IR/OpBase.td"

def Plait_Dialect : Dialect {
  let name = "plait";
  let summary = "plait's training-graph dialect";
  let description = [{
    Tensor operations with value semantics and fully static shapes. A model is a
    `func.func` whose arguments are the batch inputs and whose results are the model
    outputs; trainable tensors are `plait.param` ops inside the body. Every op knows
    its shape rule (verified), and the plan writer lowers each op to one runtime
    kernel of the same name.

    Each op's description is the contract its kernels implement on every backend.
    Conventions shared by all ops: tensors are dense and row-major; i1 is stored as
    one byte holding 0 or 1; "numpy broadcasting" aligns shapes at their last
    dimension and each pair of sizes must be equal or contain a 1; axes are given in
    [-rank, rank) with negative values counting from the end; integer arithmetic
    wraps (two's complement) instead of trapping; float math follows IEEE 754, with
    bf16 and f16 computed in f32 and rounded to nearest even. Attributes with a
    default may be absent from the IR and from the plan.
  }];
  let cppNamespace = "::plait";
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

class Plait_Op<string mnemonic, list<Trait> traits = []> :
    Op<Plait_Dialect, mnemonic, traits>;

// Element types every op may carry. i8 and i16 are signed, ui8..ui64 unsigned: data types
// (inputs, constants, casts, integer arithmetic, comparisons, movement), never trained.
def Plait_ElementType : AnyTypeOf<[F32, F64, BF16, F16, I64, I32, I1,
                                   I8, I16, UI8, UI16, UI32, UI64]>;
def Plait_FloatType : AnyTypeOf<[F32, F64, BF16, F16]>;
def Plait_IndexType : AnyTypeOf<[I64, I32]>;
def Plait_Tensor : StaticShapeTensorOf<[F32, F64, BF16, F16, I64, I32, I1,
                                        I8, I16, UI8, UI16, UI32, UI64]>;
def Plait_FloatTensor : StaticShapeTensorOf<[F32, F64, BF16, F16]>;
def Plait_NumericTensor : StaticShapeTensorOf<[F32, F64, BF16, F16, I64, I32,
                                               I8, I16, UI8, UI16, UI32, UI64]>;
def Plait_BoolTensor : StaticShapeTensorOf<[I1]>;
def Plait_UnsignedTensor : StaticShapeTensorOf<[UI8, UI16, UI32, UI64]>;
def Plait_IndexTensor : StaticShapeTensorOf<[I64, I32]>;

// Rank groups (the data-parallel ops' `groups`, ir/PlaitDistOps.td): a list of rank lists.
def Plait_RankGroups : TypedArrayAttrBase<DenseI64ArrayAttr, "list of rank groups">;

#endif // PLAIT_DIALECT_TD
