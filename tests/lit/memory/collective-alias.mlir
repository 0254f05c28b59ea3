// RUN: plait-opt --plait-test-print-memory-plan --split-input-file %s -o /dev/null | FileCheck %s
// RUN: plait-opt --plait-test-print-memory-plan='collective-alias=false' --split-input-file %s -o /dev/null | FileCheck %s --check-prefix=OFF

// An all-reduce whose operand no op reads from its start on reduces in place (MPI_IN_PLACE):
// its result is planned in the operand's bytes, which live until the result's last read.
// Without, both buffers are live from the start to the wait: 192 bytes instead of 128.
// CHECK-LABEL: memory-plan @dies: arena = 128, lower_bound = 128, values = 4
// CHECK-NEXT: %0 "x" input
// CHECK-NEXT: %1 "exp" activation: offset = [[E:[0-9]+]], size = 64, live = [1, 3]
// CHECK-NEXT: %2 "all_reduce" activation: offset = [[E]], size = 64, live = [2, 3], in place of %1
// CHECK-NEXT: %3 "neg" activation
// OFF-LABEL: memory-plan @dies: arena = 192, lower_bound = 192, values = 4
// OFF-NOT: in place of
module attributes {plait.world_size = 2 : i64} {
  func.func @dies(%x: tensor<16xf32> {plait.name = "x"}) -> tensor<16xf32> {
    %e = plait.exp %x : tensor<16xf32>
    %r = plait.all_reduce %e {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    %n = plait.neg %r : tensor<16xf32>
    return %n : tensor<16xf32>
  }
}

// -----

// Not in place: an operand read by another op after the all-reduce starts (the exp, negated
// while the reduction is in flight), one read by a second collective (MPI owns it until that
// one completes too), one returned, and a graph input (bound at its own offset).
// CHECK-LABEL: memory-plan @live
// CHECK-NOT: in place of
// CHECK-LABEL: memory-plan @input
// CHECK-NOT: in place of
module attributes {plait.world_size = 2 : i64} {
  func.func @live(%x: tensor<16xf32> {plait.name = "x"}) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %e = plait.exp %x : tensor<16xf32>
    %r = plait.all_reduce %e {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    %n = plait.neg %e : tensor<16xf32>
    %s = plait.sqrt %x : tensor<16xf32>
    %a = plait.all_reduce %s {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    %b = plait.all_reduce %s {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<16xf32>
    %t = plait.tanh %x : tensor<16xf32>
    %c = plait.all_reduce %t {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    return %r, %n, %a, %b, %t : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @input(%x: tensor<16xf32> {plait.name = "x"}) -> tensor<16xf32> {
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<16xf32>
    return %r : tensor<16xf32>
  }
}
