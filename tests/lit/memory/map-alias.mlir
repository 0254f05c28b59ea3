// RUN: plait-opt --plait-test-print-memory-plan --split-input-file %s -o /dev/null | FileCheck %s
// RUN: plait-opt --plait-test-print-memory-plan='elementwise-alias=false' --split-input-file %s -o /dev/null | FileCheck %s --check-prefix=OFF

// An elementwise op the fuser left alone stores its result over an operand of its size and
// element type that dies at the op, as a fused kernel does: the exp over the sqrt, then the
// relu over the exp (a chain stays in one buffer), the add over its second operand (its first,
// %m, is read later), and the where over the add. Each reads an element before it writes it
// (UnaryKernels.cpp, BinaryKernels.cpp). Without, the sqrt and the exp are both live at the
// exp, with x, c and x's square: 320 bytes instead of 256.
// CHECK-LABEL: memory-plan @chain: arena = 256, lower_bound = 256, values = 8
// CHECK-NEXT: %0 "x" input
// CHECK-NEXT: %1 "c" input
// CHECK-NEXT: %2 "mul" activation: offset = {{[0-9]+}}, size = 64, live = [1, 8]{{$}}
// CHECK-NEXT: %3 "sqrt" activation: offset = [[S:[0-9]+]], size = 64, live = [2, 8]{{$}}
// CHECK-NEXT: %4 "exp" activation: offset = [[S]], size = 64, live = [3, 4], in place of %3
// CHECK-NEXT: %5 "relu" activation: offset = [[S]], size = 64, live = [4, 5], in place of %3
// CHECK-NEXT: %6 "add" activation: offset = [[S]], size = 64, live = [5, 6], in place of %3
// CHECK-NEXT: %7 "where" activation: offset = [[S]], size = 64, live = [6, 8], in place of %3
// OFF-LABEL: memory-plan @chain: arena = 320
// OFF-NOT: in place of
func.func @chain(%x: tensor<4x4xf32> {plait.name = "x"}, %c: tensor<4x4xi1> {plait.name = "c"}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = plait.mul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = plait.sqrt %x : tensor<4x4xf32>
  %e = plait.exp %s : tensor<4x4xf32>
  %r = plait.relu %e : tensor<4x4xf32>
  %a = plait.add %m, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %w = plait.where %c, %a, %m : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %w, %m, %x : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Dying operands that cannot take the result: one broadcast into it (the row sums, smaller),
// one of another element type (the comparison's i1 result over the exp), one an all-reduce
// produced (MPI owns it until the wait), and an input (not the plan's to overwrite).
// CHECK-LABEL: memory-plan @cannot
// CHECK: %2 "add" activation: offset = {{[0-9]+}}, size = 64, live = [2, 9]{{$}}
// CHECK: %4 "less" activation: offset = {{[0-9]+}}, size = 64, live = [4, 9]{{$}}
// CHECK: %7 "neg" activation: offset = {{[0-9]+}}, size = 64, live = [7, 9]{{$}}
// OFF-LABEL: memory-plan @cannot
module attributes {plait.world_size = 2 : i64} {
  func.func @cannot(%x: tensor<4x4xf32> {plait.name = "x"}) -> (tensor<4x4xf32>, tensor<4x4xi1>, tensor<4x4xf32>) {
    %row = plait.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<4xf32>
    %b = plait.add %x, %row : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %e = plait.exp %x : tensor<4x4xf32>
    %l = plait.less %e, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %g = plait.sqrt %x : tensor<4x4xf32>
    %r = plait.all_reduce %g {groups = [array<i64: 0, 1>]} : tensor<4x4xf32>
    %n = plait.neg %r : tensor<4x4xf32>
    return %b, %l, %n : tensor<4x4xf32>, tensor<4x4xi1>, tensor<4x4xf32>
  }
}
