// RUN: plait-opt %s --split-input-file --verify-diagnostics

module attributes {plait.world_size = 4 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<3xf32> {
    // expected-error @+1 {{'plait.reduce_scatter' op needs the whole buffer (8 elements) to be the chunk (3) times the group size (2)}}
    %r = plait.reduce_scatter %x {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<8xf32> -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.all_reduce' op groups names rank 2, outside world size 2}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 2>]} : tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

module attributes {plait.world_size = 4 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.all_reduce' op groups names rank 1 twice}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>, array<i64: 1, 2>]} : tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

module attributes {plait.world_size = 4 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.all_reduce' op groups must have groups of equal, non-zero size}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1, 2>, array<i64: 3>], reduce = "mean"} : tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.all_reduce' op reduce must be sum or mean, got 'max'}}
    %r = plait.all_reduce %x {groups = [array<i64: 0, 1>], reduce = "max"} : tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @f() -> tensor<4xf32> {
    // expected-error @+1 {{'plait.param_shard' op piece 'b' [2, 6) overlaps another or lies outside the unit}}
    %s = plait.param_shard "u" {groups = [array<i64: 0, 1>], padded_numel = 8 : i64, pieces = [
        {name = "a", shape = array<i64: 3>, offset = 0 : i64, init = "ones"},
        {name = "b", shape = array<i64: 4>, offset = 2 : i64, init = "ones"}]} : tensor<4xf32>
    return %s : tensor<4xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.unshard' op groups must include every rank of world size 2}}
    %r = plait.unshard %x {groups = [array<i64: 0>]} : tensor<8xf32> -> tensor<8xf32>
    return %r : tensor<8xf32>
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'plait.sync_grad' op needs shard_groups, replica_groups or both}}
    %r = plait.sync_grad %x : tensor<8xf32> -> tensor<8xf32>
    return %r : tensor<8xf32>
  }
}
