// Diagnostics of the elementwise ops: unary, binary with broadcasting, where, fused, grouped casts.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @unary_integer_operand(%x: tensor<4xi32>) {
  // expected-error @+1 {{'plait.exp' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4xi32>'}}
  %0 = plait.exp %x : tensor<4xi32>
  return
}

// -----

func.func @unary_dynamic_shape(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'plait.tanh' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = plait.tanh %x : tensor<?x4xf32>
  return
}

// -----

func.func @unary_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'plait.relu' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<*xf32>'}}
  %0 = "plait.relu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// The ODS constraints run before the shape rules, which may therefore assume ranked,
// static operands: an unranked or dynamic operand is a diagnostic, never a crash.
func.func @binary_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'plait.add' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<*xf32>'}}
  %0 = "plait.add"(%x, %x) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @binary_dynamic(%x: tensor<2xf32>, %y: tensor<?xf32>) {
  // expected-error @+1 {{'plait.add' op operand #1 must be statically shaped tensor}}
  %0 = "plait.add"(%x, %y) : (tensor<2xf32>, tensor<?xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @unary_bool_operand(%x: tensor<4xi1>) {
  // expected-error @+1 {{'plait.neg' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = plait.neg %x : tensor<4xi1>
  return
}

// -----

func.func @not_of_floats(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = plait.not %x : tensor<4xf32>
  return
}

// -----

func.func @unary_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.sigmoid' op requires the same type for all operands and results}}
  %0 = "plait.sigmoid"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.gelu' op approximate must be "none" or "tanh", got "erf"}}
  %0 = plait.gelu %x {approximate = "erf"} : tensor<4xf32>
  return
}

// -----

func.func @clamp_nan_min(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.clamp' op bounds must not be NaN}}
  %0 = plait.clamp %x {min = 0x7FF8000000000000 : f64} : tensor<4xf32>
  return
}

// -----

func.func @clamp_nan_max(%x: tensor<4xi32>) {
  // expected-error @+1 {{'plait.clamp' op bounds must not be NaN}}
  %0 = plait.clamp %x {min = 0.0 : f64, max = 0x7FF8000000000000 : f64} : tensor<4xi32>
  return
}

// -----

func.func @clamp_of_bools(%x: tensor<4xi1>) {
  // expected-error @+1 {{'plait.clamp' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<4xi1>'}}
  %0 = plait.clamp %x {min = 0.0 : f64} : tensor<4xi1>
  return
}

// -----

func.func @leaky_relu_alpha_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{invalid properties {alpha = 1 : i64} for op plait.leaky_relu}}
  %0 = "plait.leaky_relu"(%x) <{alpha = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_element_types(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+2 {{'plait.add' op operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'plait.add' op failed to infer returned types}}
  %0 = plait.add %a, %b : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return
}

// -----

func.func @binary_shapes(%a: tensor<2x3xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+2 {{'plait.mul' op shapes 2x3 and 4x1 do not broadcast}}
  // expected-error @+1 {{'plait.mul' op failed to infer returned types}}
  %0 = plait.mul %a, %b : (tensor<2x3xf32>, tensor<4x1xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @binary_shapes_scalar_named(%a: tensor<f32>, %b: tensor<3xf32>, %c: tensor<2xf32>) {
  %0 = plait.sub %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  // expected-error @+2 {{'plait.sub' op shapes 3 and 2 do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %1 = plait.sub %0, %c : (tensor<3xf32>, tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @binary_bool_arithmetic(%a: tensor<2xi1>) {
  // expected-error @+1 {{'plait.add' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<2xi1>'}}
  %0 = plait.add %a, %a : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

func.func @comparison_result_element(%a: tensor<2xf32>) {
  // expected-error @+1 {{'plait.less' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = "plait.less"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @logical_of_integers(%a: tensor<2xi32>) {
  // expected-error @+1 {{'plait.and' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = plait.and %a, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  return
}

// -----

func.func @binary_operand_count(%a: tensor<2xf32>) {
  // expected-error @+1 {{'plait.add' op expected 2 operands, but found 1}}
  %0 = "plait.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @where_cond_type(%c: tensor<2xi32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'plait.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = plait.where %c, %x, %x : (tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @where_element_types(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<2xi1>) {
  // expected-error @+2 {{'plait.where' op x and y have different element types 'f32' and 'i1'}}
  // expected-error @+1 {{'plait.where' op failed to infer returned types}}
  %0 = plait.where %c, %x, %y : (tensor<2xi1>, tensor<2xf32>, tensor<2xi1>) -> tensor<2xf32>
  return
}

// -----

func.func @where_shapes_xy(%c: tensor<2xi1>, %x: tensor<2xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'plait.where' op shapes 2 (cond), 2 (x) and 3 (y) do not broadcast}}
  // expected-error @+1 {{'plait.where' op failed to infer returned types}}
  %0 = plait.where %c, %x, %y : (tensor<2xi1>, tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @where_shapes_cond(%c: tensor<4x1xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>) {
  // expected-error @+2 {{'plait.where' op shapes 4x1 (cond), 2x3 (x) and scalar (y) do not broadcast}}
  // expected-error @+1 {{'plait.where' op failed to infer returned types}}
  %0 = plait.where %c, %x, %y : (tensor<4x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @fused_opcode(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 0 has unknown opcode 42}}
  %0 = plait.fused_elementwise %x {program = array<i64: 42, 0, -1, -1>, outputs = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_register(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 1 reads register 3, not defined before it}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1, 0, 3, 1, -1>, outputs = array<i64: 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_unary_operand(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 0 (exp) has operand b = 0, not -1}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, 0, -1>, outputs = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_where_operand(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 0 (where) has operand c = -1, not defined before it}}
  %0 = plait.fused_elementwise %c, %x {program = array<i64: 31, 0, 1, -1>, outputs = array<i64: 2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_binary_operand(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 0 (greater) has operand c = 0, not -1}}
  %0 = plait.fused_elementwise %x {program = array<i64: 23, 0, 0, 0>, outputs = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_triples(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op program must be a non-empty list of (opcode, a, b, c) quadruples}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1>, outputs = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_output_is_input(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op output register 0 is not an instruction's result}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @fused_output_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op has 2 results but 1 output registers}}
  %0:2 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @fused_broadcast(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op input 1 is 'tensor<4xf32>'; inputs must be f32, bf16 or i1 and broadcast to the results' shape 4x3}}
  %0 = plait.fused_elementwise %x, %y {program = array<i64: 0, 0, 1, -1>, outputs = array<i64: 2>} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @fused_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op results must all be f32 or bf16 tensors whose shapes broadcast together}}
  %0:2 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1, 6, 1, -1, -1>, outputs = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @fused_f16_input(%x: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error @+1 {{'plait.fused_elementwise' op input 1 is 'tensor<4xf16>'; inputs must be f32, bf16 or i1 and broadcast to the results' shape 4}}
  %0 = plait.fused_elementwise %x, %h {program = array<i64: 0, 0, 1, -1>, outputs = array<i64: 2>} : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xbf16>
  return
}

// -----

func.func @fused_f64_result(%x: tensor<4xbf16>) {
  // expected-error @+1 {{'plait.fused_elementwise' op results must all be f32 or bf16 tensors whose shapes broadcast together}}
  %0 = plait.fused_elementwise %x {program = array<i64: 10, 0, -1, -1>, outputs = array<i64: 1>} : (tensor<4xbf16>) -> tensor<4xf64>
  return
}

// -----

func.func @fused_round_arity(%x: tensor<4xbf16>) {
  // expected-error @+1 {{'plait.fused_elementwise' op instruction 0 (round_bf16) has operand b = 0, not -1}}
  %0 = plait.fused_elementwise %x {program = array<i64: 10, 0, 0, -1>, outputs = array<i64: 1>} : (tensor<4xbf16>) -> tensor<4xbf16>
  return
}

// -----

func.func @fused_output_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op output register 1 is listed twice}}
  %0:2 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1, 1>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @fused_stored_smaller(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op result 1 (4x1, iteration 4x3): a stored result must have the iteration shape}}
  %0:2 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1, 6, 1, -1, -1>, outputs = array<i64: 1, 2>} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x1xf32>)
  return
}

// -----

func.func @fused_reductions_count(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op has 2 reductions for 1 results}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1>, reductions = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @fused_reduction_kind(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op result 0 (4x1, iteration 4x3): unknown reduction 3}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1>, reductions = array<i64: 3>} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @fused_reduction_both(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op result 0 (1x1, iteration 4x3): a result may reduce the innermost dimension or others, not both}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1>, reductions = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @fused_reduction_row(%x: tensor<2x300xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op result 0 (2x1, iteration 2x300): a reduced row is longer than 256}}
  %0 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1>, outputs = array<i64: 1>, reductions = array<i64: 2>} : (tensor<2x300xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @fused_reduction_rank(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'plait.fused_elementwise' op result 1 (3, iteration 4x3): a result's rank differs from the iteration shape's}}
  %0:2 = plait.fused_elementwise %x {program = array<i64: 5, 0, -1, -1, 6, 1, -1, -1>, outputs = array<i64: 1, 2>, reductions = array<i64: 0, 1>} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @grouped_cast_counts(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.grouped_cast' op has 2 operands and 1 results, not one result per operand}}
  %0 = plait.grouped_cast %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xbf16>
  return
}

// -----

func.func @grouped_cast_shape(%x: tensor<4xf32>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.grouped_cast' op cast 1 changes the shape from 2x3 to 6}}
  %0:2 = plait.grouped_cast %x, %y : (tensor<4xf32>, tensor<2x3xf32>) -> (tensor<4xbf16>, tensor<6xbf16>)
  return
}

// -----

func.func @grouped_cast_integer(%x: tensor<4xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'plait.grouped_cast' op cast 1 from 'i64' to 'bf16' is not between floats}}
  %0:2 = plait.grouped_cast %x, %y : (tensor<4xf32>, tensor<4xi64>) -> (tensor<4xbf16>, tensor<4xbf16>)
  return
}
