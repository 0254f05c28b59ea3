// RUN: plait-opt --plait-test-print-memory-plan --split-input-file %s -o /dev/null | FileCheck %s
// RUN: plait-opt --plait-test-print-memory-plan='elementwise-alias=false' --split-input-file %s -o /dev/null | FileCheck %s --check-prefix=OFF

// A fused kernel's stored result goes into the bytes of an operand that no op reads after the
// kernel (%4 over %3, the neg dying there), not into one read later (%2, the exp, returned).
// A reshape's view of the result (%5) follows it into the operand's bytes, whose life now
// runs to the end. At the kernel x, row, exp and neg are live: the arena drops from 320 to
// 256 bytes.
// CHECK-LABEL: memory-plan @dies: arena = 256, lower_bound = 256, values = 7
// CHECK-NEXT: %0 "x" input
// CHECK-NEXT: %1 "row" input
// CHECK-NEXT: %2 "exp" activation: offset = {{[0-9]+}}, size = 64, live = [1, 7]
// CHECK-NEXT: %3 "neg" activation: offset = [[N:[0-9]+]], size = 64, live = [2, 7]
// CHECK-NEXT: %4 "fused_elementwise" activation: offset = [[N]], size = 64, live = [3, 7], in place of %3
// CHECK-NEXT: %5 "reshape" activation: offset = [[N]], size = 64, live = [4, 7], in place of %3
// CHECK-NEXT: %6 "sqrt" activation
// OFF-LABEL: memory-plan @dies: arena = 320
// OFF-NOT: in place of %3
func.func @dies(%x: tensor<4x4xf32> {plait.name = "x"}, %row: tensor<4xf32> {plait.name = "row"}) -> (tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>) {
  %e = plait.exp %x : tensor<4x4xf32>
  %n = plait.neg %x : tensor<4x4xf32>
  %f = plait.fused_elementwise %n, %e, %row {program = array<i64: 0, 0, 1, -1, 2, 3, 2, -1>, outputs = array<i64: 4>} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %v = plait.reshape %f : (tensor<4x4xf32>) -> tensor<16xf32>
  %k = plait.sqrt %x : tensor<4x4xf32>
  return %e, %v, %k : tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>
}

// -----

// Dying operands that cannot take the result: a smaller one (the row maxima, broadcast) and
// one of another element type (bf16 for an f32 result). A reduced result never goes into an
// operand's bytes.
// CHECK-LABEL: memory-plan @cannot
// CHECK-NOT: in place of
func.func @cannot(%x: tensor<4x4xf32> {plait.name = "x"}, %b: tensor<4x4xbf16> {plait.name = "b"}) -> (tensor<4x4xf32>, tensor<4x1xf32>) {
  %m = plait.reduce_max %x {axes = array<i64: 1>} : (tensor<4x4xf32>) -> tensor<4x1xf32>
  %c = plait.neg %b : tensor<4x4xbf16>
  %f:2 = plait.fused_elementwise %m, %c {program = array<i64: 0, 0, 1, -1, 9, 2, -1, -1>, outputs = array<i64: 2, 3>, reductions = array<i64: 0, 1>} : (tensor<4x1xf32>, tensor<4x4xbf16>) -> (tensor<4x4xf32>, tensor<4x1xf32>)
  return %f#0, %f#1 : tensor<4x4xf32>, tensor<4x1xf32>
}
