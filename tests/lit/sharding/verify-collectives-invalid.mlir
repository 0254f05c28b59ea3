// RUN: plait-opt %s --split-input-file --verify-diagnostics --plait-verify-collectives

// Functions with plait.ranks run on those ranks only (a hand-written MPMD plan). Rank 1
// gathers before it reduces: each rank would wait in a different collective.
module attributes {plait.world_size = 2 : i64} {
  func.func @rank0(%x: tensor<4xf32>, %s: tensor<2xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 0>} {
    // expected-error @+1 {{collective order differs between ranks: rank 0's collective #0 (all_reduce of 4 x f32 (sum) over [0, 1]) meets rank 1's #0 (all_gather of 2 x f32 over [0, 1]); the ranks would hang or corrupt data}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    %g = plait.all_gather %s {groups = [array<i64: 0, 1>]} : tensor<2xf32> -> tensor<4xf32>
    %y = plait.add %r, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func @rank1(%x: tensor<4xf32>, %s: tensor<2xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 1>} {
    // expected-note @+1 {{rank 1's collective}}
    %g = plait.all_gather %s {groups = [array<i64: 0, 1>]} : tensor<2xf32> -> tensor<4xf32>
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    %y = plait.add %r, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// Same kind, different sizes: MPI would read past the smaller buffer.
module attributes {plait.world_size = 2 : i64} {
  func.func @rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 0>} {
    // expected-error @+1 {{rank 0's collective #0 (all_reduce of 4 x f32 (mean) over [0, 1]) meets rank 1's #0 (all_reduce of 8 x f32 (mean) over [0, 1])}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @rank1(%x: tensor<8xf32>) -> tensor<8xf32> attributes {plait.ranks = array<i64: 1>} {
    // expected-note @+1 {{rank 1's collective}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

// Rank 1 stops early: rank 0's second all-reduce would wait forever.
module attributes {plait.world_size = 2 : i64} {
  func.func @rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 0>} {
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    // expected-error @+1 {{rank 0 waits in its collective #1 (all_reduce of 4 x f32 (sum) over [0, 1]) for rank 1, which runs no further collective; the ranks would hang}}
    %s = plait.all_reduce %r {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    return %s : tensor<4xf32>
  }
  func.func @rank1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 1>} {
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Crossed groups on three ranks: 0 waits for 1 in {0,1}, 1 waits for 2 in {1,2}, 2 waits
// for 0 in {0,2}: a cycle no replay can break.
module attributes {plait.world_size = 3 : i64} {
  func.func @rank0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 0>} {
    // expected-error @+1 {{rank 0 waits in its collective #0 (all_reduce of 4 x f32 (sum) over [0, 1]) for rank 1, which is in its collective #0 (all_reduce of 4 x f32 (sum) over [1, 2]); the ranks would hang}}
    %a = plait.all_reduce %x {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    %b = plait.all_reduce %a {groups = [array<i64: 0, 2>]} : tensor<4xf32>
    return %b : tensor<4xf32>
  }
  func.func @rank1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 1>} {
    // expected-note @+1 {{rank 1's collective}}
    %a = plait.all_reduce %x {groups = [array<i64: 1, 2>]} : tensor<4xf32>
    %b = plait.all_reduce %a {groups = [array<i64: 0, 1>]} : tensor<4xf32>
    return %b : tensor<4xf32>
  }
  func.func @rank2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {plait.ranks = array<i64: 2>} {
    %a = plait.all_reduce %x {groups = [array<i64: 0, 2>]} : tensor<4xf32>
    %b = plait.all_reduce %a {groups = [array<i64: 1, 2>]} : tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// One SPMD function in which every rank runs the same sequence (with two group layouts)
// passes the check.
module attributes {plait.world_size = 4 : i64} {
  func.func @main(%x: tensor<8xf32>) -> tensor<4xf32> {
    %r = plait.reduce_scatter %x {groups = [array<i64: 0, 1>, array<i64: 2, 3>], reduce = "mean"} : tensor<8xf32> -> tensor<4xf32>
    %a = plait.all_reduce %r {groups = [array<i64: 0, 2>, array<i64: 1, 3>], reduce = "mean"} : tensor<4xf32>
    return %a : tensor<4xf32>
  }
}
