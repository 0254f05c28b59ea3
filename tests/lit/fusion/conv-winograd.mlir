// RUN: plait-opt --plait-conv-winograd --split-input-file %s | FileCheck %s
// RUN: plait-opt --plait-conv-winograd --plait-conv-image-blocks --split-input-file %s | FileCheck %s --check-prefix=BLOCKS

// ResNet's 3x3 stride-1 convolutions on 24x24 and 12x12 planes (64 channels in and out; 32 in
// and 32 out, a product of exactly 16 x their sum): the forward, the input gradient and the weight
// gradient by Winograd; on 6x6 planes too, and DenseNet's 128 in and 32 out.
// CHECK: module attributes {plait.conv_winograd = {convolutions = 7 : i64, winograd = 7 : i64}}
// CHECK-LABEL: func.func @resnet_blocks
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d_grad_input %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d_grad_weight %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d_grad_weight %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// CHECK: return
// A Winograd convolution has no columns, so no image block (planes of 144 pixels or more
// have none anyway).
// BLOCKS-LABEL: func.func @resnet_blocks
// BLOCKS: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// BLOCKS: plait.conv2d_grad_input %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, winograd = true}
// BLOCKS: plait.conv2d %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 1>, winograd = true}
// BLOCKS: plait.conv2d_grad_weight %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 1, 1>, winograd = true}
// BLOCKS-NOT: image_block
// BLOCKS: return
func.func @resnet_blocks(%x: tensor<8x64x24x24xf32>, %w: tensor<64x64x3x3xf32>,
                         %dy: tensor<8x64x24x24xf32>, %x3: tensor<8x32x12x12xf32>,
                         %w3: tensor<32x32x3x3xf32>, %x6: tensor<8x256x6x6xf32>,
                         %dy6: tensor<8x256x6x6xf32>, %w6: tensor<256x256x3x3xf32>,
                         %xd: tensor<8x128x12x12xf32>, %wd: tensor<32x128x3x3xf32>)
    -> (tensor<8x64x24x24xf32>, tensor<8x64x24x24xf32>, tensor<8x32x12x12xf32>,
        tensor<32x32x3x3xf32>, tensor<256x256x3x3xf32>, tensor<8x256x6x6xf32>,
        tensor<8x32x12x12xf32>) {
  %y = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x64x24x24xf32>, tensor<64x64x3x3xf32>) -> tensor<8x64x24x24xf32>
  %dx = plait.conv2d_grad_input %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x64x24x24xf32>, tensor<64x64x3x3xf32>) -> tensor<8x64x24x24xf32>
  %p = plait.conv2d %x3, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, dilations = array<i64: 1, 1>} : (tensor<8x32x12x12xf32>, tensor<32x32x3x3xf32>) -> tensor<8x32x12x12xf32>
  %dw = plait.conv2d_grad_weight %x3, %p {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, dilations = array<i64: 1, 1>} : (tensor<8x32x12x12xf32>, tensor<8x32x12x12xf32>) -> tensor<32x32x3x3xf32>
  %dw6 = plait.conv2d_grad_weight %x6, %dy6 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x256x6x6xf32>, tensor<8x256x6x6xf32>) -> tensor<256x256x3x3xf32>
  %y6 = plait.conv2d %x6, %w6 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x256x6x6xf32>, tensor<256x256x3x3xf32>) -> tensor<8x256x6x6xf32>
  %yd = plait.conv2d %xd, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<8x128x12x12xf32>, tensor<32x128x3x3xf32>) -> tensor<8x32x12x12xf32>
  return %y, %dx, %p, %dw, %dw6, %y6, %yd : tensor<8x64x24x24xf32>, tensor<8x64x24x24xf32>, tensor<8x32x12x12xf32>, tensor<32x32x3x3xf32>, tensor<256x256x3x3xf32>, tensor<8x256x6x6xf32>, tensor<8x32x12x12xf32>
}

// -----

// Left to im2col: a stride of 2, a dilation of 2, a 5x5 window, two groups, 8 input channels
// (an RGB stem's 3 would be as few), 8 output channels, 128 in and 16 out (a product of 14.2 x
// their sum), and 4x4 output planes (ResNet's 3x3 ones took 1.75x im2col's time); weight
// gradients of a stride of 2 and of 4x4 planes.
// CHECK: module attributes {plait.conv_winograd = {convolutions = 10 : i64, winograd = 0 : i64}}
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: winograd
// CHECK: return
func.func @left_alone(%x: tensor<2x64x12x12xf32>, %w: tensor<64x64x3x3xf32>,
                      %w5: tensor<64x64x5x5xf32>, %wg: tensor<64x32x3x3xf32>,
                      %x8: tensor<2x8x12x12xf32>, %w8: tensor<64x8x3x3xf32>,
                      %wo: tensor<8x64x3x3xf32>, %xd: tensor<2x128x12x12xf32>,
                      %wd: tensor<16x128x3x3xf32>, %x4: tensor<2x64x4x4xf32>)
    -> (tensor<2x64x6x6xf32>, tensor<2x64x8x8xf32>, tensor<2x64x8x8xf32>,
        tensor<2x64x12x12xf32>, tensor<2x64x12x12xf32>, tensor<2x8x12x12xf32>,
        tensor<2x16x12x12xf32>, tensor<2x64x4x4xf32>, tensor<64x64x3x3xf32>,
        tensor<64x64x3x3xf32>) {
  %a = plait.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x64x3x3xf32>) -> tensor<2x64x6x6xf32>
  %b = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<2x64x12x12xf32>, tensor<64x64x3x3xf32>) -> tensor<2x64x8x8xf32>
  %c = plait.conv2d %x, %w5 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<64x64x5x5xf32>) -> tensor<2x64x8x8xf32>
  %d = plait.conv2d %x, %wg {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<2x64x12x12xf32>, tensor<64x32x3x3xf32>) -> tensor<2x64x12x12xf32>
  %e = plait.conv2d %x8, %w8 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x8x12x12xf32>, tensor<64x8x3x3xf32>) -> tensor<2x64x12x12xf32>
  %f = plait.conv2d %x, %wo {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<8x64x3x3xf32>) -> tensor<2x8x12x12xf32>
  %g = plait.conv2d %xd, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x128x12x12xf32>, tensor<16x128x3x3xf32>) -> tensor<2x16x12x12xf32>
  %h = plait.conv2d %x4, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x64x4x4xf32>, tensor<64x64x3x3xf32>) -> tensor<2x64x4x4xf32>
  %i = plait.conv2d_grad_weight %x, %a {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x64x12x12xf32>, tensor<2x64x6x6xf32>) -> tensor<64x64x3x3xf32>
  %j = plait.conv2d_grad_weight %x4, %x4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x64x4x4xf32>, tensor<2x64x4x4xf32>) -> tensor<64x64x3x3xf32>
  return %a, %b, %c, %d, %e, %f, %g, %h, %i, %j : tensor<2x64x6x6xf32>, tensor<2x64x8x8xf32>, tensor<2x64x8x8xf32>, tensor<2x64x12x12xf32>, tensor<2x64x12x12xf32>, tensor<2x8x12x12xf32>, tensor<2x16x12x12xf32>, tensor<2x64x4x4xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>
}
