// Shape rules, case by case. Each function writes an op in the custom form with the result
// type the rule must infer (it has to verify), then the same op in the generic form with a
// wrong result type: the "inferred type(s) ... are incompatible" diagnostic then states the
// inferred type exactly.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @broadcast_trailing(%a: tensor<2x1x3xf32>, %b: tensor<4x1xf32>) {
  // Numpy broadcasting aligns trailing dimensions; size-1 dimensions stretch.
  %0 = plait.add %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  // expected-error @+2 {{'plait.add' op inferred type(s) 'tensor<2x4x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.add' op failed to infer returned types}}
  %1 = "plait.add"(%a, %b) : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x1x3xf32>
  return
}

// -----

func.func @broadcast_scalar(%a: tensor<f32>, %b: tensor<5x2xf32>) {
  %0 = plait.sub %a, %b : (tensor<f32>, tensor<5x2xf32>) -> tensor<5x2xf32>
  // expected-error @+2 {{'plait.sub' op inferred type(s) 'tensor<5x2xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.sub' op failed to infer returned types}}
  %1 = "plait.sub"(%a, %b) : (tensor<f32>, tensor<5x2xf32>) -> tensor<f32>
  return
}

// -----

func.func @broadcast_empty(%a: tensor<0x3xi64>, %b: tensor<1x3xi64>) {
  // A size-1 dimension stretches to size 0 too.
  %0 = plait.mul %a, %b : (tensor<0x3xi64>, tensor<1x3xi64>) -> tensor<0x3xi64>
  // expected-error @+2 {{'plait.mul' op inferred type(s) 'tensor<0x3xi64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.mul' op failed to infer returned types}}
  %1 = "plait.mul"(%a, %b) : (tensor<0x3xi64>, tensor<1x3xi64>) -> tensor<1x3xi64>
  return
}

// -----

func.func @comparison_is_i1(%a: tensor<2x3xi32>, %b: tensor<3xi32>) {
  %0 = plait.greater_equal %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  // expected-error @+2 {{'plait.greater_equal' op inferred type(s) 'tensor<2x3xi1>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.greater_equal' op failed to infer returned types}}
  %1 = "plait.greater_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<3xi1>
  return
}

// -----

func.func @where_three_way(%c: tensor<4x1x1xi1>, %x: tensor<3x1xbf16>, %y: tensor<2xbf16>) {
  // cond, x and y broadcast together; the element type is x's.
  %0 = plait.where %c, %x, %y : (tensor<4x1x1xi1>, tensor<3x1xbf16>, tensor<2xbf16>) -> tensor<4x3x2xbf16>
  // expected-error @+2 {{'plait.where' op inferred type(s) 'tensor<4x3x2xbf16>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.where' op failed to infer returned types}}
  %1 = "plait.where"(%c, %x, %y) : (tensor<4x1x1xi1>, tensor<3x1xbf16>, tensor<2xbf16>) -> tensor<3x2xbf16>
  return
}

// -----

func.func @reduce_keepdims(%x: tensor<2x3x4xf32>) {
  // keepdims defaults to true.
  %0 = plait.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // expected-error @+2 {{'plait.reduce_sum' op inferred type(s) 'tensor<1x3x1xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.reduce_sum' op failed to infer returned types}}
  %1 = "plait.reduce_sum"(%x) <{axes = array<i64: 0, 2>}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @reduce_no_keepdims(%x: tensor<2x3x4xf32>) {
  %0 = plait.reduce_max %x {axes = array<i64: -1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // expected-error @+2 {{'plait.reduce_max' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.reduce_max' op failed to infer returned types}}
  %1 = "plait.reduce_max"(%x) <{axes = array<i64: -1>, keepdims = false}> : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return
}

// -----

func.func @reduce_empty_axes(%x: tensor<2x3x4xi32>) {
  // Empty axes reduce every axis.
  %0 = plait.reduce_prod %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xi32>) -> tensor<i32>
  // expected-error @+2 {{'plait.reduce_prod' op inferred type(s) 'tensor<i32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.reduce_prod' op failed to infer returned types}}
  %1 = "plait.reduce_prod"(%x) <{axes = array<i64>, keepdims = false}> : (tensor<2x3x4xi32>) -> tensor<1x1x1xi32>
  return
}

// -----

func.func @reduce_empty_axes_keepdims(%x: tensor<2x3x4xf32>) {
  %0 = plait.reduce_mean %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // expected-error @+2 {{'plait.reduce_mean' op inferred type(s) 'tensor<1x1x1xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.reduce_mean' op failed to infer returned types}}
  %1 = "plait.reduce_mean"(%x) <{axes = array<i64>}> : (tensor<2x3x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @argmax_keepdims(%x: tensor<2x3x4xf16>) {
  // argmax and argmin give i64 indices whatever the input's element type.
  %0 = plait.argmax %x {axis = -2 : i64} : (tensor<2x3x4xf16>) -> tensor<2x1x4xi64>
  // expected-error @+2 {{'plait.argmax' op inferred type(s) 'tensor<2x1x4xi64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.argmax' op failed to infer returned types}}
  %1 = "plait.argmax"(%x) <{axis = -2 : i64}> : (tensor<2x3x4xf16>) -> tensor<2x4xi64>
  return
}

// -----

func.func @argmin_no_keepdims(%x: tensor<2x3xi32>) {
  %0 = plait.argmin %x {axis = 1 : i64, keepdims = false} : (tensor<2x3xi32>) -> tensor<2xi64>
  // expected-error @+2 {{'plait.argmin' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.argmin' op failed to infer returned types}}
  %1 = "plait.argmin"(%x) <{axis = 1 : i64, keepdims = false}> : (tensor<2x3xi32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmax_empty_axis_empty_result(%x: tensor<0x0xf32>) {
  // An empty axis is fine when the result is empty too.
  %0 = plait.argmax %x {axis = 1 : i64} : (tensor<0x0xf32>) -> tensor<0x1xi64>
  // expected-error @+2 {{'plait.argmax' op inferred type(s) 'tensor<0x1xi64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.argmax' op failed to infer returned types}}
  %1 = "plait.argmax"(%x) <{axis = 1 : i64}> : (tensor<0x0xf32>) -> tensor<0xi64>
  return
}

// -----

func.func @matmul_vector_matrix(%a: tensor<3xf32>, %b: tensor<2x3x5xf32>) {
  // A 1-D lhs is promoted to 1xK, and the promoted dimension removed.
  %0 = plait.matmul %a, %b : (tensor<3xf32>, tensor<2x3x5xf32>) -> tensor<2x5xf32>
  // expected-error @+2 {{'plait.matmul' op inferred type(s) 'tensor<2x5xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %1 = "plait.matmul"(%a, %b) : (tensor<3xf32>, tensor<2x3x5xf32>) -> tensor<2x1x5xf32>
  return
}

// -----

func.func @matmul_matrix_vector(%a: tensor<2x4x3xf32>, %b: tensor<3xf32>) {
  // A 1-D rhs is promoted to Kx1, and the promoted dimension removed.
  %0 = plait.matmul %a, %b : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  // expected-error @+2 {{'plait.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %1 = "plait.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x1xf32>
  return
}

// -----

func.func @matmul_dot(%a: tensor<3xi32>) {
  %0 = plait.matmul %a, %a : (tensor<3xi32>, tensor<3xi32>) -> tensor<i32>
  // expected-error @+2 {{'plait.matmul' op inferred type(s) 'tensor<i32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %1 = "plait.matmul"(%a, %a) : (tensor<3xi32>, tensor<3xi32>) -> tensor<1xi32>
  return
}

// -----

func.func @matmul_batch_broadcast(%a: tensor<5x1x2x3xf32>, %b: tensor<4x3x6xf32>) {
  // Batch dimensions [5, 1] and [4] broadcast to [5, 4].
  %0 = plait.matmul %a, %b : (tensor<5x1x2x3xf32>, tensor<4x3x6xf32>) -> tensor<5x4x2x6xf32>
  // expected-error @+2 {{'plait.matmul' op inferred type(s) 'tensor<5x4x2x6xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.matmul' op failed to infer returned types}}
  %1 = "plait.matmul"(%a, %b) : (tensor<5x1x2x3xf32>, tensor<4x3x6xf32>) -> tensor<5x1x2x6xf32>
  return
}

// -----

func.func @gemm_no_transpose(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = plait.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  // expected-error @+2 {{'plait.gemm' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.gemm' op failed to infer returned types}}
  %1 = "plait.gemm"(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_trans_a(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>) {
  %0 = plait.gemm %a, %b {trans_a = true} : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  // expected-error @+2 {{'plait.gemm' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.gemm' op failed to infer returned types}}
  %1 = "plait.gemm"(%a, %b) <{trans_a = true}> : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gemm_trans_b_with_c(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>) {
  // c of shape 2x1 broadcasts to MxN.
  %0 = plait.gemm %a, %b, %c {trans_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  // expected-error @+2 {{'plait.gemm' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.gemm' op failed to infer returned types}}
  %1 = "plait.gemm"(%a, %b, %c) <{trans_b = true}> : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @gemm_both_transposed(%a: tensor<3x2xf64>, %b: tensor<4x3xf64>) {
  %0 = plait.gemm %a, %b {trans_a = true, trans_b = true} : (tensor<3x2xf64>, tensor<4x3xf64>) -> tensor<2x4xf64>
  // expected-error @+2 {{'plait.gemm' op inferred type(s) 'tensor<2x4xf64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.gemm' op failed to infer returned types}}
  %1 = "plait.gemm"(%a, %b) <{trans_a = true, trans_b = true}> : (tensor<3x2xf64>, tensor<4x3xf64>) -> tensor<3x3xf64>
  return
}

// -----

func.func @conv_same_padding(%x: tensor<2x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  %0 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x32x32xf32>
  // expected-error @+2 {{'plait.conv2d' op inferred type(s) 'tensor<2x16x32x32xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.conv2d' op failed to infer returned types}}
  %1 = "plait.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}> : (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x30x30xf32>
  return
}

// -----

func.func @conv_strided_asymmetric_pads(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>) {
  // floor((224 + 3 + 3 - 7) / 2) + 1 = 112; floor((224 + 2 + 4 - 7) / 2) + 1 = 112.
  %0 = plait.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 3, 2, 3, 4>, dilations = array<i64: 1, 1>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
  // expected-error @+2 {{'plait.conv2d' op inferred type(s) 'tensor<1x64x112x112xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.conv2d' op failed to infer returned types}}
  %1 = "plait.conv2d"(%x, %w) <{strides = array<i64: 2, 2>, pads = array<i64: 3, 2, 3, 4>, dilations = array<i64: 1, 1>}> : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x224x224xf32>
  return
}

// -----

func.func @conv_dilated_strided(%x: tensor<1x2x10x9xf32>, %w: tensor<4x2x3x2xf32>) {
  // Spans 2 * 2 + 1 = 5 and 3 * 1 + 1 = 4: floor((10 - 5) / 3) + 1 = 2, floor((9 - 4) / 2) + 1 = 3.
  %0 = plait.conv2d %x, %w {strides = array<i64: 3, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>} : (tensor<1x2x10x9xf32>, tensor<4x2x3x2xf32>) -> tensor<1x4x2x3xf32>
  // expected-error @+2 {{'plait.conv2d' op inferred type(s) 'tensor<1x4x2x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.conv2d' op failed to infer returned types}}
  %1 = "plait.conv2d"(%x, %w) <{strides = array<i64: 3, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>}> : (tensor<1x2x10x9xf32>, tensor<4x2x3x2xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_depthwise(%x: tensor<1x8x5x5xf16>, %w: tensor<8x1x3x3xf16>, %b: tensor<8xf16>) {
  // Depthwise: group = C, one input channel per filter.
  %0 = plait.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x5x5xf16>, tensor<8x1x3x3xf16>, tensor<8xf16>) -> tensor<1x8x3x3xf16>
  // expected-error @+2 {{'plait.conv2d' op inferred type(s) 'tensor<1x8x3x3xf16>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.conv2d' op failed to infer returned types}}
  %1 = "plait.conv2d"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 8 : i64}> : (tensor<1x8x5x5xf16>, tensor<8x1x3x3xf16>, tensor<8xf16>) -> tensor<1x1x3x3xf16>
  return
}

// -----

func.func @max_pool_floor(%x: tensor<1x2x7x7xf32>) {
  %0 = plait.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x3x3xf32>
  // expected-error @+2 {{'plait.max_pool2d' op inferred type(s) 'tensor<1x2x3x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.max_pool2d' op failed to infer returned types}}
  %1 = "plait.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @max_pool_ceil(%x: tensor<1x2x8x8xf32>) {
  // ceil((8 - 3) / 2) + 1 = 4 (floor would give 3); the last window starts at 6 < 8.
  %0 = plait.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  // expected-error @+2 {{'plait.max_pool2d' op inferred type(s) 'tensor<1x2x4x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.max_pool2d' op failed to infer returned types}}
  %1 = "plait.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true}> : (tensor<1x2x8x8xf32>) -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @max_pool_ceil_drops_window_in_end_padding(%x: tensor<1x1x6x6xf32>) {
  // ceil((6 + 2 - 2) / 2) + 1 = 4 exactly: no window to drop. (Compare ops.mlir's 5x5 case.)
  %0 = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32>
  // expected-error @+2 {{'plait.max_pool2d' op inferred type(s) 'tensor<1x1x4x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.max_pool2d' op failed to infer returned types}}
  %1 = "plait.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true}> : (tensor<1x1x6x6xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @avg_pool_ceil(%x: tensor<1x1x5x5xf32>) {
  // ceil((5 + 2 - 3) / 2) + 1 = 3.
  %0 = plait.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  // expected-error @+2 {{'plait.avg_pool2d' op inferred type(s) 'tensor<1x1x3x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.avg_pool2d' op failed to infer returned types}}
  %1 = "plait.avg_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true}> : (tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @transpose(%x: tensor<2x3x4x5xi1>) {
  // result dim i = operand dim perm[i].
  %0 = plait.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xi1>) -> tensor<2x4x5x3xi1>
  // expected-error @+2 {{'plait.transpose' op inferred type(s) 'tensor<2x4x5x3xi1>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.transpose' op failed to infer returned types}}
  %1 = "plait.transpose"(%x) <{perm = array<i64: 0, 2, 3, 1>}> : (tensor<2x3x4x5xi1>) -> tensor<2x5x3x4xi1>
  return
}

// -----

func.func @slice_negative_steps(%x: tensor<10x7xf32>) {
  // [9:-1:-3] takes 9, 6, 3, 0; [6:0:-4] takes 6, 2.
  %0 = plait.slice %x {starts = array<i64: 9, 6>, ends = array<i64: -1, 0>, steps = array<i64: -3, -4>} : (tensor<10x7xf32>) -> tensor<4x2xf32>
  // expected-error @+2 {{'plait.slice' op inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.slice' op failed to infer returned types}}
  %1 = "plait.slice"(%x) <{starts = array<i64: 9, 6>, ends = array<i64: -1, 0>, steps = array<i64: -3, -4>}> : (tensor<10x7xf32>) -> tensor<3x1xf32>
  return
}

// -----

func.func @slice_positive_steps(%x: tensor<10x7xf32>) {
  // [1:10:4] takes 1, 5, 9.
  %0 = plait.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 10, 7>, steps = array<i64: 4, 7>} : (tensor<10x7xf32>) -> tensor<3x1xf32>
  // expected-error @+2 {{'plait.slice' op inferred type(s) 'tensor<3x1xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.slice' op failed to infer returned types}}
  %1 = "plait.slice"(%x) <{starts = array<i64: 1, 0>, ends = array<i64: 10, 7>, steps = array<i64: 4, 7>}> : (tensor<10x7xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @pad(%x: tensor<2x3x4xi32>) {
  // pads = begins (0, 1, 2), then ends (3, 0, 1).
  %0 = plait.pad %x {pads = array<i64: 0, 1, 2, 3, 0, 1>, value = 7.0 : f64} : (tensor<2x3x4xi32>) -> tensor<5x4x7xi32>
  // expected-error @+2 {{'plait.pad' op inferred type(s) 'tensor<5x4x7xi32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.pad' op failed to infer returned types}}
  %1 = "plait.pad"(%x) <{pads = array<i64: 0, 1, 2, 3, 0, 1>, value = 7.0 : f64}> : (tensor<2x3x4xi32>) -> tensor<2x4x6xi32>
  return
}

// -----

func.func @concat(%a: tensor<2x1x4xf32>, %b: tensor<2x5x4xf32>) {
  %0 = plait.concat %a, %b, %a {axis = -2 : i64} : (tensor<2x1x4xf32>, tensor<2x5x4xf32>, tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
  // expected-error @+2 {{'plait.concat' op inferred type(s) 'tensor<2x7x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.concat' op failed to infer returned types}}
  %1 = "plait.concat"(%a, %b, %a) <{axis = -2 : i64}> : (tensor<2x1x4xf32>, tensor<2x5x4xf32>, tensor<2x1x4xf32>) -> tensor<6x1x4xf32>
  return
}

// -----

func.func @split(%x: tensor<6x4xf32>) {
  // One result per size.
  %0:3 = plait.split %x {axis = 0 : i64, sizes = array<i64: 1, 2, 3>} : (tensor<6x4xf32>) -> (tensor<1x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>)
  // expected-error @+2 {{'plait.split' op inferred type(s) 'tensor<1x4xf32>', 'tensor<2x4xf32>', 'tensor<3x4xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.split' op failed to infer returned types}}
  %1:3 = "plait.split"(%x) <{axis = 0 : i64, sizes = array<i64: 1, 2, 3>}> : (tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @gather_middle_axis(%d: tensor<2x5x3xf32>, %i: tensor<4x1xi32>) {
  // data[:axis] + indices.shape + data[axis+1:].
  %0 = plait.gather %d, %i {axis = 1 : i64} : (tensor<2x5x3xf32>, tensor<4x1xi32>) -> tensor<2x4x1x3xf32>
  // expected-error @+2 {{'plait.gather' op inferred type(s) 'tensor<2x4x1x3xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.gather' op failed to infer returned types}}
  %1 = "plait.gather"(%d, %i) <{axis = 1 : i64}> : (tensor<2x5x3xf32>, tensor<4x1xi32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @cross_entropy_mean(%x: tensor<4x5x3xf32>, %t: tensor<4x3xi64>) {
  // reduction defaults to mean: a scalar.
  %0 = plait.softmax_cross_entropy %x, %t : (tensor<4x5x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  // expected-error @+2 {{'plait.softmax_cross_entropy' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.softmax_cross_entropy' op failed to infer returned types}}
  %1 = "plait.softmax_cross_entropy"(%x, %t) : (tensor<4x5x3xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @cross_entropy_none(%x: tensor<4x5x3xbf16>, %t: tensor<4x3xi32>) {
  // reduction = none: shaped like target, typed like input.
  %0 = plait.softmax_cross_entropy %x, %t {reduction = "none"} : (tensor<4x5x3xbf16>, tensor<4x3xi32>) -> tensor<4x3xbf16>
  // expected-error @+2 {{'plait.softmax_cross_entropy' op inferred type(s) 'tensor<4x3xbf16>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.softmax_cross_entropy' op failed to infer returned types}}
  %1 = "plait.softmax_cross_entropy"(%x, %t) <{reduction = "none"}> : (tensor<4x5x3xbf16>, tensor<4x3xi32>) -> tensor<bf16>
  return
}

// -----

func.func @nll_sum(%x: tensor<4x5xf64>, %t: tensor<4xi64>) {
  %0 = plait.nll_loss %x, %t {reduction = "sum"} : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<f64>
  // expected-error @+2 {{'plait.nll_loss' op inferred type(s) 'tensor<f64>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.nll_loss' op failed to infer returned types}}
  %1 = "plait.nll_loss"(%x, %t) <{reduction = "sum"}> : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<4xf64>
  return
}

// -----

func.func @constant() {
  // A constant's type is its value's.
  %0 = plait.constant dense<[[1, 2, 3]]> : tensor<1x3xi32>
  // expected-error @+2 {{'plait.constant' op inferred type(s) 'tensor<1x3xi32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{'plait.constant' op failed to infer returned types}}
  %1 = "plait.constant"() <{value = dense<[[1, 2, 3]]> : tensor<1x3xi32>}> : () -> tensor<3xi32>
  return
}
