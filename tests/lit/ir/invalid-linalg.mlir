// Diagnostics of matmul, gemm, conv2d, the pooling ops, det and cofactors.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf64>) {
  // expected-error @+2 {{'plait.matmul' op operands have different element types 'f32' and 'f64'}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'plait.matmul' op operands must have rank >= 1, got ranks 0 and 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op contracting dimensions differ: 2x3 times 4x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_contracting_vectors(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'plait.matmul' op contracting dimensions differ: 3 times 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<4x3x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op batch dimensions of 2x2x3 and 4x3x5 do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<2x2x3xf32>, tensor<4x3x5xf32>) -> tensor<2x2x5xf32>
  return
}

// -----

func.func @matmul_promoted_result(%a: tensor<3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op inferred type(s) 'tensor<5xf32>' are incompatible with return type(s) of operation 'tensor<1x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<1x5xf32>
  return
}

// -----

func.func @matmul_of_bools(%a: tensor<2x2xi1>) {
  // expected-error @+1 {{'plait.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<2x2xi1>'}}
  %0 = plait.matmul %a, %a : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'plait.gemm' op a and b must be 2-D, got ranks 3 and 2}}
  // expected-error @+1 {{'plait.gemm' op failed to infer returned types}}
  %0 = plait.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_element_types(%a: tensor<2x4xf32>, %b: tensor<4x5xbf16>) {
  // expected-error @+2 {{'plait.gemm' op operands have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b : (tensor<2x4xf32>, tensor<4x5xbf16>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_contracting(%a: tensor<2x4xf32>, %b: tensor<8x4xf32>) {
  // The forgotten trans_b: op(b) is 8x4, so K is 4 against 8.
  // expected-error @+2 {{'plait.gemm' op contracting dimensions differ (4 vs 8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gemm_trans_a_contracting(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'plait.gemm' op contracting dimensions differ (2 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b {trans_a = true} : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @gemm_c_element_type(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf16>) {
  // expected-error @+2 {{'plait.gemm' op c has element type 'f16', a and b have 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x5xf32>, tensor<5xf16>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_c_shape(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2xf32>) {
  // c broadcasts one way only, and 2 does not align with N = 5.
  // expected-error @+2 {{'plait.gemm' op c of shape 2 does not broadcast to 2x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x5xf32>, tensor<2xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_c_larger_than_result(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>, %c: tensor<3x2x5xf32>) {
  // expected-error @+2 {{'plait.gemm' op c of shape 3x2x5 does not broadcast to 2x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x5xf32>, tensor<3x2x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op x and w must be 4-D (NCHW and MCkHkW), got ranks 3 and 4}}
  // expected-error @+1 {{'plait.conv2d' op failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  return
}

// -----

func.func @conv_element_types(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+2 {{'plait.conv2d' op x and w have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op group 0 must be >= 1 and divide channels 4 and filters 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_negative(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op group -2 must be >= 1 and divide channels 4 and filters 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = -2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_divides_filters(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op group 2 must be >= 1 and divide channels 4 and filters 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @conv_input_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op w has 4 input channels per group, expected 2 (4 channels / group 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op 'strides' must have 2 entries, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_strides_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op 'strides' entries must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_pads_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // Pads are [top, left, bottom, right]: a symmetric pair is not enough.
  // expected-error @+2 {{'plait.conv2d' op 'pads' must have 4 entries, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_pads_negative(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op 'pads' entries must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, -1, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x6xf32>
  return
}

// -----

func.func @conv_dilations(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'plait.conv2d' op 'dilations' entries must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+2 {{'plait.conv2d' op bias must have shape 4, got 1x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf64>) {
  // expected-error @+2 {{'plait.conv2d' op bias has element type 'f64', x has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf64>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_kernel_too_large(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) {
  // expected-error @+2 {{'plait.conv2d' op the 5x5 kernel (dilated) does not fit the padded 4x4 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @conv_dilated_kernel_too_large(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // A dilation of 4 spreads the 3x3 kernel over 9 rows.
  // expected-error @+2 {{'plait.conv2d' op the 3x3 kernel (dilated) does not fit the padded 8x8 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 4, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_huge_dilation(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // dilation * (kernel - 1) overflows int64: still a diagnostic.
  // expected-error @+2 {{'plait.conv2d' op the 3x3 kernel (dilated) does not fit the padded 8x8 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 9223372036854775807, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_huge_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // H + top + bottom overflows int64.
  // expected-error @+2 {{'plait.conv2d' op the 3x3 kernel (dilated) does not fit the padded 8x8 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 9223372036854775807, 0, 1, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @conv_missing_strides(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'plait.conv2d' op requires attribute 'strides'}}
  %0 = "plait.conv2d"(%x, %w) <{pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_of_integers(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) {
  // expected-error @+1 {{'plait.conv2d' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<1x3x8x8xi32>'}}
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @max_pool_rank(%x: tensor<1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op x must be 4-D (NCHW), got rank 3}}
  // expected-error @+1 {{'plait.max_pool2d' op failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x4xf32>) -> tensor<1x2x2xf32>
  return
}

// -----

func.func @max_pool_kernel_count(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op 'kernel' must have 2 entries, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @max_pool_kernel_zero(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op 'kernel' entries must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 0, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @max_pool_strides(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op 'strides' entries must be >= 1, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: -1, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @max_pool_pads_count(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op 'pads' must have 4 entries, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @max_pool_dilations_count(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op 'dilations' must have 2 entries, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @max_pool_pads_not_smaller_than_window(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op pads of spatial dimension 1 must be smaller than the window (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 2>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x3xf32>
  return
}

// -----

func.func @max_pool_pads_window_is_dilated(%x: tensor<1x1x8x8xf32>) {
  // The dilated window spans 2 * (2 - 1) + 1 = 3 rows, so a pad of 3 is too much but 2 is not.
  // expected-error @+2 {{'plait.max_pool2d' op pads of spatial dimension 0 must be smaller than the window (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 3, 0, 2, 0>, dilations = array<i64: 2, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x9x7xf32>
  return
}

// -----

func.func @max_pool_window_too_large(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.max_pool2d' op the window does not fit the padded 4x4 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 5, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x1x3xf32>
  return
}

// -----

func.func @max_pool_ceil_mode_result(%x: tensor<1x1x5x5xf32>) {
  // Without ceil_mode the last partial window is dropped: 2, not 3.
  // expected-error @+2 {{'plait.max_pool2d' op inferred type(s) 'tensor<1x1x2x2xf32>' are incompatible with return type(s) of operation 'tensor<1x1x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @avg_pool_rank(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{'plait.avg_pool2d' op x must be 4-D (NCHW), got rank 2}}
  // expected-error @+1 {{'plait.avg_pool2d' op failed to infer returned types}}
  %0 = plait.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @avg_pool_pads(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.avg_pool2d' op pads of spatial dimension 0 must be smaller than the window (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x2xf32>
  return
}

// -----

func.func @avg_pool_window_too_large(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'plait.avg_pool2d' op the window does not fit the padded 4x4 input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.avg_pool2d %x {kernel = array<i64: 2, 9>, strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x1xf32>
  return
}

// -----

func.func @avg_pool_ceil_mode_result(%x: tensor<1x1x5x5xf32>) {
  // The window that would start in the end padding is dropped: 3, not 4.
  // expected-error @+2 {{'plait.avg_pool2d' op inferred type(s) 'tensor<1x1x3x3xf32>' are incompatible with return type(s) of operation 'tensor<1x1x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @matmul_transpose_vector(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'plait.matmul' op transpose_lhs/transpose_rhs need an operand of rank >= 2, got ranks 1 and 2}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %0 = plait.matmul %a, %b {transpose_lhs = true} : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_transposed_shapes(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'plait.matmul' op contracting dimensions differ: 2x3 times 4x3}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %0 = plait.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @matmul_perm_not_permutation(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op lhs_perm [0, 0, 2] is not a permutation of the 3 dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b {lhs_perm = array<i64: 0, 0, 2>} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @matmul_perm_not_blas(%a: tensor<4x2x3xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op rhs_perm [2, 0, 1] must keep the innermost dimension among the last two (BLAS reads rows or columns)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %b, %a {rhs_perm = array<i64: 2, 0, 1>} : (tensor<2x4x5xf32>, tensor<4x2x3xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_result_perm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op result_perm [0, 2, 1] must keep the innermost dimension last (BLAS writes rows)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b {result_perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x3xf32>
  return
}

// -----

func.func @matmul_perm_rank(%a: tensor<4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'plait.matmul' op lhs_perm [0] needs rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b {lhs_perm = array<i64: 0>} : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @matmul_result_perm_promoted(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'plait.matmul' op result_perm needs operands of rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b {result_perm = array<i64: 0>} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_bias_size(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{'plait.matmul' op bias must be [4] (the product's columns), got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_bias_type(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<4xf32>) {
  // expected-error @+2 {{'plait.matmul' op bias element type 'f32' differs from the operands' 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b, %c : (tensor<2x3xbf16>, tensor<3x4xbf16>, tensor<4xf32>) -> tensor<2x4xbf16>
  return
}

// -----

func.func @matmul_bias_batched_rhs(%a: tensor<2x2x3xf32>, %b: tensor<2x3x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{'plait.matmul' op a bias needs a 2-D rhs and no result_perm}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.matmul %a, %b, %c : (tensor<2x2x3xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x2x4xf32>
  return
}

// -----

func.func @matmul_bias_integer(%a: tensor<2x3xi64>, %b: tensor<3x4xi64>, %c: tensor<4xi64>) {
  // expected-error @+1 {{'plait.matmul' op operand #2 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4xi64>'}}
  %0 = plait.matmul %a, %b, %c : (tensor<2x3xi64>, tensor<3x4xi64>, tensor<4xi64>) -> tensor<2x4xi64>
  return
}

// -----

func.func @det_not_square(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'plait.det' op the matrices of x must be square and not empty, got 3 x 4}}
  // expected-error @+1 {{'plait.det' op failed to infer returned types}}
  %0 = plait.det %x : (tensor<2x3x4xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @det_of_a_vector(%x: tensor<4xf32>) {
  // expected-error @+2 {{'plait.det' op x must have rank >= 2 (matrices in its last two axes)}}
  // expected-error @+1 {{'plait.det' op failed to infer returned types}}
  %0 = plait.det %x : (tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @det_wrong_result(%x: tensor<2x3x3xf32>) {
  // expected-error @+2 {{'plait.det' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'plait.det' op failed to infer returned types}}
  %0 = plait.det %x : (tensor<2x3x3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @cofactors_not_square(%x: tensor<2x3xf64>) {
  // expected-error @+1 {{'plait.cofactors' op the matrices of x must be square and not empty, got 2 x 3}}
  %0 = plait.cofactors %x : tensor<2x3xf64>
  return
}
