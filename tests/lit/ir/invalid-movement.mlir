// Diagnostics of the data-movement ops: reshape, transpose, broadcast_to, slice, pad,
// concat, split, gather, cast, trilu.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.reshape' op changes the element type from 'f32' to 'f16'}}
  %0 = plait.reshape %x : (tensor<2x3xf32>) -> tensor<6xf16>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.reshape' op cannot reshape 2x3 (6 elements) to 7 (7 elements)}}
  %0 = plait.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  return
}

// -----

func.func @reshape_to_scalar(%x: tensor<2xf32>) {
  // expected-error @+1 {{'plait.reshape' op cannot reshape 2 (2 elements) to scalar (1 elements)}}
  %0 = plait.reshape %x : (tensor<2xf32>) -> tensor<f32>
  return
}

// -----

func.func @reshape_overflowing_count(%x: tensor<4611686018427387904x4xf32>) {
  // 2^62 * 4 wraps to 0 in int64, which must not pass for the 0 elements of the result.
  // expected-error @+1 {{'plait.reshape' op has a shape with more than 2^63 - 1 elements}}
  %0 = plait.reshape %x : (tensor<4611686018427387904x4xf32>) -> tensor<0xf32>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.reshape' op result #0 must be statically shaped tensor}}
  %0 = plait.reshape %x : (tensor<2x3xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.transpose' op perm has 3 entries for rank 2}}
  // expected-error @+1 {{'plait.transpose' op failed to infer returned types}}
  %0 = plait.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_repeated(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.transpose' op perm is not a permutation of 0..1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.transpose %x {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_negative(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.transpose' op perm is not a permutation of 0..1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.transpose %x {perm = array<i64: -1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  // result dim i = operand dim perm[i]: [4, 2, 3], not [3, 4, 2].
  // expected-error @+2 {{'plait.transpose' op inferred type(s) 'tensor<4x2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{'plait.broadcast_to' op changes the element type from 'f32' to 'i32'}}
  %0 = plait.broadcast_to %x : (tensor<3xf32>) -> tensor<2x3xi32>
  return
}

// -----

func.func @broadcast_to_shape(%x: tensor<3x1xf32>) {
  // expected-error @+1 {{'plait.broadcast_to' op cannot broadcast 3x1 to 2x4}}
  %0 = plait.broadcast_to %x : (tensor<3x1xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.broadcast_to' op cannot broadcast 2x3 to 3}}
  %0 = plait.broadcast_to %x : (tensor<2x3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @slice_entry_count(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.slice' op starts, ends and steps need one entry per dimension (2), got 2, 2 and 1}}
  // expected-error @+1 {{'plait.slice' op failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.slice' op step of dimension 1 is zero}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_end_past_size(%x: tensor<2x4xf32>) {
  // Slices arrive normalised: an ONNX end of INT64_MAX is clamped by the importer.
  // expected-error @+2 {{'plait.slice' op slice [0:5:1] of dimension 1 (size 4) is not normalised}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 5>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_negative_start(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.slice' op slice [-1:4:1] of dimension 1 (size 4) is not normalised}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, -1>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @slice_start_after_end(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.slice' op slice [3:1:1] of dimension 1 (size 4) is not normalised}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 3>, ends = array<i64: 2, 1>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x0xf32>
  return
}

// -----

func.func @slice_negative_step_start(%x: tensor<2x4xf32>) {
  // With a negative step, start is at most size - 1.
  // expected-error @+2 {{'plait.slice' op slice [4:0:-1] of dimension 1 (size 4) is not normalised}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 4>, ends = array<i64: 2, 0>, steps = array<i64: 1, -1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_negative_step_end(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.slice' op slice [3:-2:-1] of dimension 1 (size 4) is not normalised}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 3>, ends = array<i64: 2, -2>, steps = array<i64: 1, -1>} : (tensor<2x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @slice_extreme_steps(%x: tensor<2x4xf32>) {
  // Steps of INT64_MAX and INT64_MIN take one element and do not overflow.
  // expected-error @+2 {{'plait.slice' op inferred type(s) 'tensor<1x1xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.slice %x {starts = array<i64: 0, 3>, ends = array<i64: 2, -1>, steps = array<i64: 9223372036854775807, -9223372036854775808>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<2x2xf32>) {
  // expected-error @+2 {{'plait.pad' op 'pads' must have 4 entries, got 2}}
  // expected-error @+1 {{'plait.pad' op failed to infer returned types}}
  %0 = plait.pad %x {pads = array<i64: 1, 1>} : (tensor<2x2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<2x2xf32>) {
  // expected-error @+2 {{'plait.pad' op 'pads' entries must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.pad %x {pads = array<i64: 0, 0, -1, 0>} : (tensor<2x2xf32>) -> tensor<1x2xf32>
  return
}

// -----

func.func @pad_overflow(%x: tensor<2x2xf32>) {
  // expected-error @+2 {{'plait.pad' op padded dimension 1 overflows int64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.pad %x {pads = array<i64: 0, 9223372036854775807, 0, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @pad_layout(%x: tensor<2x3xf32>) {
  // pads are all begins, then all ends: [1, 0, 0, 2] pads dimension 0 at the start and
  // dimension 1 at the end.
  // expected-error @+2 {{'plait.pad' op inferred type(s) 'tensor<3x5xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.pad %x {pads = array<i64: 1, 0, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @pad_fractional_integer_value(%x: tensor<2xi64>) {
  // expected-error @+1 {{'plait.pad' op pad value 5.000000e-01 is not representable in 'i64'}}
  %0 = plait.pad %x {pads = array<i64: 1, 1>, value = 0.5 : f64} : (tensor<2xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @pad_integer_value_out_of_range(%x: tensor<2xi32>) {
  // expected-error @+1 {{'plait.pad' op pad value 2.147484e+09 is not representable in 'i32'}}
  %0 = plait.pad %x {pads = array<i64: 1, 1>, value = 2147483648.0 : f64} : (tensor<2xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @pad_integer_value_nan(%x: tensor<2xi32>) {
  // expected-error @+1 {{'plait.pad' op pad value nan is not representable in 'i32'}}
  %0 = plait.pad %x {pads = array<i64: 1, 1>, value = 0x7FF8000000000000 : f64} : (tensor<2xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @pad_bool_value(%x: tensor<2xi1>) {
  // expected-error @+1 {{'plait.pad' op pad value -1.000000e+00 is not representable in 'i1'}}
  %0 = plait.pad %x {pads = array<i64: 1, 1>, value = -1.0 : f64} : (tensor<2xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{'plait.concat' op needs at least one input}}
  // expected-error @+1 {{'plait.concat' op failed to infer returned types}}
  %0 = "plait.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.concat' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %a {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_of_scalars(%a: tensor<f32>) {
  // expected-error @+2 {{'plait.concat' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %a {axis = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+2 {{'plait.concat' op input 1 has element type 'i32', input 0 has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{'plait.concat' op input 2 has rank 3, input 0 has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<6x3xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.concat' op input 1 has shape 2x4, input 0 has 2x3; they may differ only in dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_overflow(%a: tensor<4611686018427387904xf32>) {
  // expected-error @+2 {{'plait.concat' op concatenated dimension overflows int64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.concat %a, %a {axis = 0 : i64} : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.split' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{'plait.split' op failed to infer returned types}}
  %0:2 = plait.split %x {axis = -3 : i64, sizes = array<i64: 1, 1>} : (tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  return
}

// -----

func.func @split_no_sizes(%x: tensor<0x4xf32>) {
  // expected-error @+2 {{'plait.split' op needs at least one size}}
  // expected-error @+1 {{failed to infer returned types}}
  "plait.split"(%x) <{axis = 0 : i64, sizes = array<i64>}> : (tensor<0x4xf32>) -> ()
  return
}

// -----

func.func @split_negative_size(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.split' op sizes must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = plait.split %x {axis = 1 : i64, sizes = array<i64: -1, 5>} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x5xf32>)
  return
}

// -----

func.func @split_too_large(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.split' op sizes add up to more than dimension 1 (size 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = plait.split %x {axis = 1 : i64, sizes = array<i64: 3, 2>} : (tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @split_wrapping_sizes(%x: tensor<2x4xf32>) {
  // Sizes whose int64 sum wraps around to 4 are still rejected.
  // expected-error @+2 {{'plait.split' op sizes add up to more than dimension 1 (size 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = plait.split %x {axis = 1 : i64, sizes = array<i64: 9223372036854775807, 9223372036854775807, 6>} : (tensor<2x4xf32>) -> (tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x6xf32>)
  return
}

// -----

func.func @split_too_small(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.split' op sizes add up to 3, dimension 1 has size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = plait.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @split_result_count(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'plait.split' op inferred type(s) 'tensor<2x2xf32>', 'tensor<2x2xf32>' are incompatible with return type(s) of operation 'tensor<2x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "plait.split"(%x) <{axis = 1 : i64, sizes = array<i64: 2, 2>}> : (tensor<2x4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @gather_scalar_data(%d: tensor<f32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'plait.gather' op data must have rank >= 1}}
  // expected-error @+1 {{'plait.gather' op failed to infer returned types}}
  %0 = plait.gather %d, %i : (tensor<f32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<10x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'plait.gather' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gather %d, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<10x4x2xf32>
  return
}

// -----

func.func @gather_padding_axis(%d: tensor<10x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'plait.gather' op padding_idx needs axis 0 (an embedding table's rows), got axis 1}}
  %0 = plait.gather %d, %i {axis = 1 : i64, padding_idx = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<10x2xf32>
  return
}

// -----

func.func @gather_padding_row(%d: tensor<10x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'plait.gather' op padding_idx -11 is not a row of a table of 10}}
  %0 = plait.gather %d, %i {padding_idx = -11 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gather_float_indices(%d: tensor<10x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'plait.gather' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = plait.gather %d, %i : (tensor<10x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gather_bool_indices(%d: tensor<10x4xf32>, %i: tensor<2xi1>) {
  // expected-error @+1 {{'plait.gather' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<2xi1>'}}
  %0 = plait.gather %d, %i : (tensor<10x4xf32>, tensor<2xi1>) -> tensor<2x4xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.cast' op changes the shape from 2x3 to 6}}
  %0 = plait.cast %x : (tensor<2x3xf32>) -> tensor<6xi64>
  return
}

// -----

func.func @cast_to_unsupported_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'plait.cast' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<2xi4>'}}
  %0 = plait.cast %x : (tensor<2xf32>) -> tensor<2xi4>
  return
}

// -----

func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{'plait.trilu' op needs rank >= 2, got 1}}
  %0 = plait.trilu %x : tensor<4xf32>
  return
}

// -----

func.func @trilu_result_type(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'plait.trilu' op requires the same type for all operands and results}}
  %0 = "plait.trilu"(%x) : (tensor<4x4xf32>) -> tensor<4x4xi1>
  return
}
