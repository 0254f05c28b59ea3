// RUN: plait-opt %s --verify-diagnostics --plait-build-train-step --plait-shard='world-size=4 strategy=zero4'
// RUN: not plait-opt %s --plait-build-train-step --plait-shard='world-size=4 strategy=hsdp:3' 2>&1 | FileCheck %s --check-prefix=HSDP
// RUN: not plait-opt %s --plait-build-train-step --plait-shard='world-size=4 placement=blocks=fsdp' 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not plait-opt %s --plait-build-train-step='clip-grad-norm=1.0' --plait-shard='world-size=2' 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not plait-opt %s --plait-build-train-step='clip-grad-value=1.0' --plait-shard='world-size=2' 2>&1 | FileCheck %s --check-prefix=CLIPVALUE
// RUN: not plait-opt %s --plait-build-train-step --plait-shard='world-size=2 clip-grad-value=-1.0' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not plait-opt %s --plait-build-train-step --plait-shard='world-size=2 clip-grad-norm=1.0 clip-grad-norm-type=0' 2>&1 | FileCheck %s --check-prefix=NORMTYPE
// RUN: not plait-opt %s --plait-build-train-step='log-grad-norm=true' --plait-shard='world-size=2' 2>&1 | FileCheck %s --check-prefix=LOGNORM

// HSDP: error: --strategy: hsdp:3: the group size must divide the world size 4
// NOMATCH: error: --placement: rule 'blocks' matches no unit (units: layers.0)
// CLIP: error: the training step already clips local gradients; with world size > 1 give the norm to plait-shard (clip-grad-norm) instead
// CLIPVALUE: error: the training step already clips local gradients; with world size > 1 give the value to plait-shard (clip-grad-value) instead
// NEGATIVE: error: clip-grad-value must be >= 0, got -1
// NORMTYPE: error: clip-grad-norm-type must be > 0 or inf, got 0
// LOGNORM: error: the training step already outputs the local gradients' norm; with world size > 1 give log-grad-norm to plait-shard instead

// expected-error @+1 {{--strategy: unknown strategy 'zero4' (expected ddp, zero1, zero2, zero3, fsdp or hsdp:G)}}
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
    %w = plait.param "layers.0.w" {init = "ones"} : tensor<4xf32>
    %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %s : tensor<f32>
  }
}
