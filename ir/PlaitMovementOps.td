// Data movement of the plait dialect, with the fused elementwise region, casts and the
// random sources.
// Included by ir/PlaitOps.td, the dialect's one TableGen target; each op lowers to the
// runtime kernel of the same mnemonic.
#ifndef PLAIT_MOVEMENT_OPS_TD
#define PLAIT_MOVEMENT_OPS_TD

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Plait_FusedElementwiseOp : Plait_Op<"fused_elementwise", [Pure]> {
  let summary = "a chain of f32 / bf16 elementwise ops computed in one pass "
                "(plait-fuse-elementwise)";
  let description = [{
    Registers 0..N-1 are the N inputs; `program` is a list of (opcode, a, b) triples, the
    k-th defining register N + k from registers a and b (b = -1 for a unary op); the results
    are the registers `outputs` names. Opcodes (codegen/schema/FusedElementwise.h): 0 add,
    1 sub, 2 mul, 3 div, 4 neg, 5 exp, 6 erf, 7 sqrt, 8 pow, 9 broadcast_to (the operand),
    10 round_bf16 (the operand rounded to bf16 and back: a cast to bf16, or the store of a
    bf16 op's result). Registers hold f32 values. Results and inputs are f32 or bf16 (a bf16
    input widens as it is loaded, a bf16 result rounds to nearest even as it is stored) and
    broadcast together (numpy rules) to the iteration shape;
    a result is that shape, or, where `reductions` (one per result: 0 store, 1 sum, 2 mean)
    says so, the register summed or averaged over the dimensions where the result has size 1
    (reduce_sum / reduce_mean with keepdims): over the innermost dimension alone, or over
    others. Each element is computed exactly as the unfused ops compute it.

    ```mlir
    // y = erf(x * c) + x, and x * c too
    %y, %s = plait.fused_elementwise %x, %c {program = array<i64: 2, 0, 1,  6, 2, -1,  0, 3, 0>,
        outputs = array<i64: 4, 2>} : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    // the row means of x * c
    %m = plait.fused_elementwise %x, %c {program = array<i64: 2, 0, 1>, outputs = array<i64: 2>,
        reductions = array<i64: 2>} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, DenseI64ArrayAttr:$program,
                       DenseI64ArrayAttr:$outputs,
                       OptionalAttr<DenseI64ArrayAttr>:$reductions);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Plait_ReshapeOp : Plait_Op<"reshape", [Pure]> {
  let summary = "same elements, new static shape";
  let description = [{
    Same elements in the same row-major order, same element type, same element count.

    ```mlir
    %y = plait.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_TransposeOp : Plait_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute dimensions: result dim i = operand dim perm[i]";
  let description = [{
    `perm` is a permutation of 0..rank-1: result.shape[i] = x.shape[perm[i]] and
    result[i_0, ..., i_r-1] = x at the index whose dimension perm[k] is i_k.

    ```mlir
    %y = plait.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_BroadcastToOp : Plait_Op<"broadcast_to", [Pure]> {
  let summary = "numpy broadcast to the result shape";
  let description = [{
    Aligned at the last dimension, each operand dimension equals the result's or is 1
    (repeated); missing leading dimensions are repeated too. The element type is kept.

    ```mlir
    %y = plait.broadcast_to %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_SliceOp : Plait_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "strided slice with one normalised (start, end, step) per dimension";
  let description = [{
    The importer normalises ONNX Slice (negative and clamped indices, omitted axes) into
    one (start, end, step) per dimension. Per dimension d of size n: step > 0 needs
    0 <= start <= end <= n; step < 0 needs -1 <= end <= start <= n - 1 (end = -1 means
    "through index 0"); step != 0. The result takes indices start, start + step, ... while
    they are before end, so it has ceil((end - start) / step) elements there: [4:0:-2] of
    a size-5 dimension takes indices 4 and 2.

    ```mlir
    %y = plait.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 2, 3>,
        steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_PadOp : Plait_Op<"pad", [Pure, InferTypeOpAdaptor]> {
  let summary = "constant padding";
  let description = [{
    `pads` = (begin of each dimension, then end of each dimension), 2 * rank entries, each
    >= 0 (as ONNX Pad, constant mode, without negative pads). New positions hold `value`
    converted to the element type; for integer tensors it must be a whole number in the
    type's range, for i1 0 or 1.

    ```mlir
    %y = plait.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 0.0 : f64}
        : (tensor<2x2xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_ConcatOp : Plait_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along `axis`";
  let description = [{
    One or more inputs of one element type and rank, equal in every dimension except
    `axis` (in [-rank, rank)); the result's `axis` dimension is the sum of theirs.

    ```mlir
    %y = plait.concat %a, %b {axis = 0 : i64} : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Variadic<Plait_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Plait_SplitOp : Plait_Op<"split", [Pure, InferTypeOpAdaptor]> {
  let summary = "cut a tensor along `axis` into pieces of the given `sizes`";
  let description = [{
    One result per entry of `sizes` (at least one, each >= 0, adding up to the `axis`
    dimension); result i holds the next sizes[i] slices along `axis` (in [-rank, rank)).

    ```mlir
    %a, %b = plait.split %x {axis = 1 : i64, sizes = array<i64: 1, 3>}
        : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>)
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Plait_Tensor>:$results);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_GatherOp : Plait_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices of `data` along `axis` at `indices` (embedding lookup)";
  let description = [{
    As ONNX Gather / numpy.take: result shape data.shape[:axis] + indices.shape +
    data.shape[axis+1:], and result[a..., i..., b...] = data[a..., indices[i...], b...].
    `axis` is in [-rank, rank). Indices (i32 or i64) lie in [-n, n) for n =
    data.shape[axis], negative ones counting from the end; any other index is a runtime
    error. `data` may have any element type, i1 included.

    With `padding_idx` p (axis 0 only, as nn.Embedding's padding_idx): the gradient of row p
    is zero, whatever reads the lookups of it (PyTorch's embedding backward skips those
    lookups); the forward is unchanged. p is in [-n, n), negative counting from the end.

    ```mlir
    %e = plait.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    %p = plait.gather %table, %ids {padding_idx = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$data, Plait_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_CastOp : Plait_Op<"cast", [Pure]> {
  let summary = "convert elements to the result's element type";
  let description = [{
    Elementwise, same shape. Float to float rounds to nearest even (overflow gives +-inf,
    NaN stays NaN; conversions to bf16 and f16 go through f32); integer to float rounds to
    nearest even; float to integer truncates toward zero, saturating values outside the
    target range, and NaN gives 0; integer to integer keeps the low bits (i64 to i32
    wraps); anything to i1 is x != 0 (so NaN gives true); i1 to a number gives 1 or 0.
    Casting to the same type is a copy.

    ```mlir
    %y = plait.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_GroupedCastOp : Plait_Op<"grouped_cast", [Pure]> {
  let summary = "several float casts computed by one kernel (plait-group-casts)";
  let description = [{
    Result i is operand i cast to result i's element type, exactly as `plait.cast` computes
    it: the same number of operands and results, each pair of one shape, every element type
    a float. The kernel walks the list (on CUDA, one launch for many tensors).
    plait-group-casts builds it from the casts of a bf16-mixed step's parameters to bf16, a
    kernel per parameter tensor otherwise.

    ```mlir
    %a, %b = plait.grouped_cast %w, %bias
        : (tensor<96x32xf32>, tensor<96xf32>) -> (tensor<96x32xbf16>, tensor<96xbf16>)
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Plait_TriluOp : Plait_Op<"trilu", [Pure, SameOperandsAndResultType]> {
  let summary = "keep the upper or lower triangle of the last two dimensions";
  let description = [{
    As ONNX Trilu, on each matrix of the last two dimensions (row i, column j; rank >= 2):
    `upper` (the default) keeps elements with j - i >= k, otherwise those with j - i <= k;
    the others become zero (false for i1). `k` (default 0) may be any integer.

    ```mlir
    %m = plait.trilu %x {upper = false, k = 0 : i64} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Plait_DropoutMaskOp : Plait_Op<"dropout_mask", [Pure]> {
  let summary = "a dropout mask drawn for this step: 0 or 1 / (1 - ratio) per element";
  let description = [{
    Element i of the result is 0 with probability `ratio` and 1 / (1 - ratio) otherwise
    (in the result's float type), so x * mask is inverted dropout (ONNX Dropout in training
    mode, torch.nn.Dropout in training). The draw is counter-based
    (codegen/schema/DropoutMask.h): it hashes (`seed`, `stream`, step, rank, i), where step is
    the operand, plait.hyper "step" (the 1-based step number, f32), and rank the rank running
    the plan. So every step, rank and stream draws afresh, while a recomputed or resumed step
    draws the same mask on any thread count or device. The importer gives each Dropout node
    its own `stream`; gradient accumulation gives each micro-batch its own. `ratio` in [0, 1).

    ```mlir
    %step = plait.hyper "step" : tensor<f32>
    %m = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 7 : i64}
        : (tensor<f32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$step, F64Attr:$ratio, I64Attr:$seed,
                       I64Attr:$stream);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$step attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RandomOp : Plait_Op<"random", [Pure]> {
  let summary = "random values drawn for this step: uniform in [low, high), or normal";
  let description = [{
    Each element is an independent draw (codegen/schema/RandomDraw.h): with `distribution`
    "uniform", low + (high - low) * u, u uniform in [0, 1) on the element type's grid
    (`a` = low, `b` = high); with "normal", mean + scale * z, z standard normal by Box-Muller
    (`a` = mean, `b` = scale). The draw is counter-based like plait.dropout_mask's: it hashes
    (`seed`, `stream`, step, rank, element), where step is the operand, plait.hyper "step",
    so every step and rank draws afresh while a recomputed or resumed step draws the same
    values on any thread count or device. ONNX's RandomUniform(Like), RandomNormal(Like) and
    Bernoulli (a uniform draw compared with p) import as it; the importer gives each node its
    own `stream`, and gradient accumulation each micro-batch its own.

    ```mlir
    %step = plait.hyper "step" : tensor<f32>
    %u = plait.random %step {distribution = "uniform", a = 0.0 : f64, b = 1.0 : f64,
        seed = 0 : i64, stream = 7 : i64} : (tensor<f32>) -> tensor<8x1x1xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$step, StrAttr:$distribution, F64Attr:$a,
                       F64Attr:$b, I64Attr:$seed, I64Attr:$stream);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$step attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // PLAIT_MOVEMENT_OPS_TD
