// RUN: plait-opt --plait-test-print-memory-plan --split-input-file %s -o /dev/null | FileCheck %s
// RUN: plait-opt --plait-test-print-memory-plan='reshape-alias=false collective-alias=false' --split-input-file %s -o /dev/null | FileCheck %s --check-prefix=OFF

// A reshape moves no data: its result is planned in its operand's bytes, a chain of reshapes
// in the first one's, and the operand lives as long as the last of them is read (here to
// the end, returned). The arena drops from 192 to 128 bytes.
// CHECK-LABEL: memory-plan @chain: arena = 128, lower_bound = 128, values = 5
// CHECK-NEXT: %0 "x" input: offset = {{[0-9]+}}, size = 64, live = [0, 1]
// CHECK-NEXT: %1 "exp" activation: offset = [[E:[0-9]+]], size = 64, live = [1, 6]
// CHECK-NEXT: %2 "reshape" activation: offset = [[E]], size = 64, live = [2, 3], in place of %1
// CHECK-NEXT: %3 "reshape" activation: offset = [[E]], size = 64, live = [3, 6], in place of %1
// CHECK-NEXT: %4 "relu" activation: offset = {{[0-9]+}}, size = 64, live = [4, 6]
// OFF-LABEL: memory-plan @chain: arena = 192, lower_bound = 192, values = 5
// OFF-NOT: in place of
func.func @chain(%x: tensor<4x4xf32> {plait.name = "x"}) -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>) {
  %0 = plait.exp %x : tensor<4x4xf32>
  %1 = plait.reshape %0 : (tensor<4x4xf32>) -> tensor<2x8xf32>
  %2 = plait.reshape %1 : (tensor<2x8xf32>) -> tensor<16xf32>
  %3 = plait.relu %2 : tensor<16xf32>
  return %3, %2, %0 : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>
}

// Not aliased: a reshape of a graph input (the runtime binds inputs by their own offset) or
// of a param (an in-place update may overwrite it).
// CHECK-LABEL: memory-plan @sources
// CHECK-NOT: in place of
// CHECK-LABEL: memory-plan @collective
// CHECK: %2 "reshape" activation: offset = {{[0-9]+}}, size = 64, live = [2, 6]{{$}}
// The all-reduce itself runs in place (collective-alias.mlir), in the reshape's own buffer.
// CHECK-NEXT: %3 "all_reduce" activation: {{.*}}, in place of %2
// CHECK-NEXT: %4 "reshape" activation: offset = {{[0-9]+}}, size = 64, live = [4, 6]{{$}}

// -----

func.func @sources(%x: tensor<4x4xf32> {plait.name = "x"}) -> (tensor<16xf32>, tensor<16xf32>) {
  %w = plait.param "w" {init = "zeros"} : tensor<4x4xf32>
  %0 = plait.reshape %x : (tensor<4x4xf32>) -> tensor<16xf32>
  %1 = plait.reshape %w : (tensor<4x4xf32>) -> tensor<16xf32>
  return %0, %1 : tensor<16xf32>, tensor<16xf32>
}

// Not aliased next to a collective: MPI owns both its buffers while it is in flight, so a
// reshape of its result, or one whose result it reduces, keeps a buffer of its own.

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @collective(%x: tensor<4x4xf32> {plait.name = "x"}) -> (tensor<16xf32>, tensor<4x4xf32>) {
    %0 = plait.exp %x : tensor<4x4xf32>
    %1 = plait.reshape %0 : (tensor<4x4xf32>) -> tensor<16xf32>
    %2 = plait.all_reduce %1 {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    %3 = plait.reshape %2 : (tensor<16xf32>) -> tensor<4x4xf32>
    return %2, %3 : tensor<16xf32>, tensor<4x4xf32>
  }
}
