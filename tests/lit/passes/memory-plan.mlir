// RUN: plait-opt --plait-test-print-memory-plan='elementwise-alias=false' %s -o /dev/null | FileCheck %s

// Liveness alone (elementwise results over dying operands: memory/map-alias.mlir). Two 64-byte
// intermediates whose lifetimes do not overlap share an offset; the input stays live until
// its last use and the result until the end.
// CHECK-LABEL: memory-plan @main: arena = 192, lower_bound = 192, values = 4
// CHECK-NEXT: %0 "x" input: offset = {{[0-9]+}}, size = 64, live = [0, 2]
// CHECK-NEXT: %1 "exp" activation: offset = {{[0-9]+}}, size = 64, live = [1, 2]
// CHECK-NEXT: %2 "add" activation: offset = {{[0-9]+}}, size = 64, live = [2, 3]
// CHECK-NEXT: %3 "relu" activation: offset = {{[0-9]+}}, size = 64, live = [3, 5]
func.func @main(%x: tensor<4xf32> {plait.name = "x"}) -> tensor<4xf32> {
  %0 = plait.exp %x : tensor<4xf32>
  %1 = plait.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = plait.relu %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// Params live for the whole step; 48 bytes of weights round up to the 64-byte alignment.
// CHECK-LABEL: memory-plan @params: arena = 192, lower_bound = 192, values = 3
// CHECK-NEXT: %0 "x" input: offset = {{[0-9]+}}, size = 64, live = [0, 2]
// CHECK-NEXT: %1 "w" param: offset = {{[0-9]+}}, size = 64, live = [0, 4]
// CHECK-NEXT: %2 "matmul" activation: offset = {{[0-9]+}}, size = 64, live = [2, 4]
func.func @params(%x: tensor<1x4xf32> {plait.name = "x"}) -> tensor<1x3xf32> {
  %w = plait.param "w" {init = "zeros"} : tensor<4x3xf32>
  %0 = plait.matmul %x, %w : (tensor<1x4xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
