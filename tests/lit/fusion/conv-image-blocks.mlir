// RUN: plait-opt --plait-conv-image-blocks --split-input-file %s | FileCheck %s

// A deep layer's 3x3 planes (9 pixels): the whole batch of 8 in one GEMM of 72 columns, for
// the forward and both gradients. Planes of 64 pixels (the most that are blocked): 512 / 64 =
// 8 images of a batch of 16.
// CHECK: module attributes {plait.conv_image_blocks = {blocked = 4 : i64, convolutions = 4 : i64, most = 8 : i64}}
// CHECK-LABEL: func.func @small_planes
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, image_block = 8 : i64,
// CHECK: plait.conv2d_grad_input %{{.*}} {dilations = array<i64: 1, 1>, image_block = 8 : i64,
// CHECK: plait.conv2d_grad_weight %{{.*}} {dilations = array<i64: 1, 1>, image_block = 8 : i64,
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, image_block = 8 : i64,
func.func @small_planes(%x: tensor<8x16x3x3xf32>, %w: tensor<32x16x3x3xf32>,
                        %dy: tensor<8x32x3x3xf32>, %x2: tensor<16x2x8x8xf32>,
                        %w2: tensor<4x2x3x3xf32>)
    -> (tensor<8x32x3x3xf32>, tensor<8x16x3x3xf32>, tensor<32x16x3x3xf32>,
        tensor<16x4x8x8xf32>) {
  %y = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x16x3x3xf32>, tensor<32x16x3x3xf32>) -> tensor<8x32x3x3xf32>
  %dx = plait.conv2d_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x32x3x3xf32>, tensor<32x16x3x3xf32>) -> tensor<8x16x3x3xf32>
  %dw = plait.conv2d_grad_weight %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x16x3x3xf32>, tensor<8x32x3x3xf32>) -> tensor<32x16x3x3xf32>
  %p = plait.conv2d %x2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<16x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<16x4x8x8xf32>
  return %y, %dx, %dw, %p : tensor<8x32x3x3xf32>, tensor<8x16x3x3xf32>, tensor<32x16x3x3xf32>, tensor<16x4x8x8xf32>
}

// -----

// Left as they are: planes of more than 64 pixels (10x10), a batch of one, a depthwise
// convolution (no columns: forward and weight gradient), a pointwise one (its columns are x's
// planes) and a grouped one (its weight gradient splits across threads by image). Blocked: a
// strided 1x1 convolution (not pointwise: its columns are gathered anyway).
// CHECK: module attributes {plait.conv_image_blocks = {blocked = 1 : i64, convolutions = 7 : i64, most = 2 : i64}}
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: image_block
// CHECK: plait.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, image_block = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK-NOT: image_block
// CHECK: return
func.func @left_alone(%big: tensor<4x3x10x10xf32>, %w: tensor<4x3x3x3xf32>,
                      %one: tensor<1x3x8x8xf32>, %dwx: tensor<2x4x8x8xf32>,
                      %dww: tensor<4x1x3x3xf32>, %dwdy: tensor<2x4x8x8xf32>,
                      %pw: tensor<2x4x1x1xf32>, %gx: tensor<4x4x8x8xf32>,
                      %gw: tensor<6x2x3x3xf32>)
    -> (tensor<4x4x10x10xf32>, tensor<1x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>,
        tensor<2x2x8x8xf32>, tensor<2x2x4x4xf32>, tensor<4x6x8x8xf32>) {
  %a = plait.conv2d %big, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<4x3x10x10xf32>, tensor<4x3x3x3xf32>) -> tensor<4x4x10x10xf32>
  %b = plait.conv2d %one, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c = plait.conv2d %dwx, %dww {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x8x8xf32>
  %d = plait.conv2d_grad_weight %dwx, %dwdy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x1x3x3xf32>
  %e = plait.conv2d %dwx, %pw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<2x2x8x8xf32>
  %f = plait.conv2d %dwx, %pw {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>) -> tensor<2x2x4x4xf32>
  %g = plait.conv2d %gx, %gw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<4x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<4x6x8x8xf32>
  return %a, %b, %c, %d, %e, %f, %g : tensor<4x4x10x10xf32>, tensor<1x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>, tensor<2x2x8x8xf32>, tensor<2x2x4x4xf32>, tensor<4x6x8x8xf32>
}
