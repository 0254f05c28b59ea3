// RUN: plait-opt --plait-conv-grouped-direct %s | FileCheck %s

// plait-conv-grouped-direct: grouped convolutions of at most 16 channels and 16 filters a
// group (RegNet's width 8: conv2d and both gradients; 4 channels against 16 filters; a
// depthwise multiplier of 2) are marked `direct`; a group of 32 channels, a depthwise
// convolution (computed directly anyway: not counted) and an ungrouped one are left alone. On
// planes of more than 256 pixels only groups of 16 filters are (every lane used).
// CHECK: module attributes {plait.conv_grouped_direct = {direct = 6 : i64, grouped = 8 : i64}}
// CHECK-LABEL: func.func @regnet
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>
// CHECK: plait.conv2d_grad_input %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 8 : i64
// CHECK: plait.conv2d_grad_weight %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 8 : i64
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 4 : i64
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 8 : i64, pads = array<i64: 0
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, group = 64 : i64
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x64x1x1xf32>)
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x24x24xf32>
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, direct = true, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x24x24xf32>
func.func @regnet(%x: tensor<2x64x12x12xf32>, %w: tensor<64x8x3x3xf32>,
                  %dy: tensor<2x64x12x12xf32>, %w4: tensor<64x16x1x1xf32>,
                  %xm: tensor<2x8x12x12xf32>, %wm: tensor<16x1x3x3xf32>,
                  %w32: tensor<64x32x1x1xf32>, %wdw: tensor<64x1x3x3xf32>,
                  %w1: tensor<64x64x1x1xf32>, %x24: tensor<2x64x24x24xf32>,
                  %w16: tensor<64x16x3x3xf32>) {
  %y = plait.conv2d %x, %w {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x8x3x3xf32>) -> tensor<2x64x12x12xf32>
  %dx = plait.conv2d_grad_input %dy, %w {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x8x3x3xf32>) -> tensor<2x64x12x12xf32>
  %dw = plait.conv2d_grad_weight %x, %dy {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<2x64x12x12xf32>) -> tensor<64x8x3x3xf32>
  %y4 = plait.conv2d %x, %w4 {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x16x1x1xf32>) -> tensor<2x64x12x12xf32>
  %ym = plait.conv2d %xm, %wm {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x8x12x12xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x10x10xf32>
  %y32 = plait.conv2d %x, %w32 {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x32x1x1xf32>) -> tensor<2x64x12x12xf32>
  %ydw = plait.conv2d %x, %wdw {dilations = array<i64: 1, 1>, group = 64 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x1x3x3xf32>) -> tensor<2x64x10x10xf32>
  %y1 = plait.conv2d %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x64x1x1xf32>) -> tensor<2x64x12x12xf32>
  %y24 = plait.conv2d %x24, %w {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x24x24xf32>, tensor<64x8x3x3xf32>) -> tensor<2x64x24x24xf32>
  %y16 = plait.conv2d %x24, %w16 {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x64x24x24xf32>, tensor<64x16x3x3xf32>) -> tensor<2x64x24x24xf32>
  return
}
