// Diagnostics of attention and attention_grad.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @rank(%q: tensor<2x16x32xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op 'q' must have rank 4 ([batch, seq, heads, dim]), got 2x16x32}}
  %o, %l = plait.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x16x32xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @key_dim(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x4xf32>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op 'k' has shape 2x16x4x4, expected 2xTx4x8 to match q 2x16x4x8}}
  %o, %l = plait.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x4xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @value_keys(%q: tensor<2x16x4x8xf32>, %k: tensor<2x12x4x8xf32>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op 'v' has shape 2x16x4x8, expected 2x12x4xE to match q and k}}
  %o, %l = plait.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x12x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @element_types(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x8xbf16>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op 'k' element type 'bf16' differs from q's 'f32'}}
  %o, %l = plait.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @f64(%q: tensor<2x16x4x8xf64>) {
  // expected-error @+1 {{'plait.attention' op 'q' must be f32 or bf16, got 'f64'}}
  %o, %l = plait.attention %q, %q, %q {scale = 0.5 : f64} : (tensor<2x16x4x8xf64>, tensor<2x16x4x8xf64>, tensor<2x16x4x8xf64>) -> (tensor<2x16x4x8xf64>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @scale(%q: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op scale must be a finite number > 0, got 0}}
  %o, %l = plait.attention %q, %q, %q {scale = 0.0 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @out_type(%q: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x6xf32>) {
  // expected-error @+1 {{'plait.attention' op 'out' has type 'tensor<2x16x4x8xf32>', expected 'tensor<2x16x4x6xf32>'}}
  %o, %l = plait.attention %q, %q, %v {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x6xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @lse_type(%q: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'plait.attention' op 'lse' has type 'tensor<2x16x4xf32>', expected 'tensor<2x4x16xf32>'}}
  %o, %l = plait.attention %q, %q, %q {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x4xf32>)
  return
}

// -----

func.func @grad_dout(%q: tensor<2x16x4x8xf32>, %l: tensor<2x4x16xf32>, %do: tensor<2x16x4x6xf32>) {
  // expected-error @+1 {{'plait.attention_grad' op 'dout' has type 'tensor<2x16x4x6xf32>', expected 'tensor<2x16x4x8xf32>'}}
  %dq, %dk, %dv = plait.attention_grad %q, %q, %q, %q, %l, %do {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x4x16xf32>, tensor<2x16x4x6xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>)
  return
}

// -----

func.func @grad_results(%q: tensor<2x16x4x8xf32>, %l: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'plait.attention_grad' op results must have the types of q, k and v}}
  %dq, %dk, %dv = plait.attention_grad %q, %q, %q, %q, %l, %q {scale = 0.5 : f64} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x4x16xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xf32>)
  return
}


// -----

func.func @dropout_without_step(%q: tensor<1x2x1x4xf32>) {
  // expected-error @+1 {{'plait.attention' op dropout needs the step operand}}
  %o, %l = plait.attention %q, %q, %q {scale = 0.5 : f64, dropout = 0.1 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xf32>)
  return
}

// -----

func.func @step_without_dropout(%q: tensor<1x2x1x4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.attention' op a step operand needs dropout > 0}}
  %o, %l = plait.attention %q, %q, %q, %step {scale = 0.5 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<f32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xf32>)
  return
}

// -----

func.func @dropout_ratio(%q: tensor<1x2x1x4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.attention' op dropout 1.000000e+00 is not in [0, 1)}}
  %o, %l = plait.attention %q, %q, %q, %step {scale = 0.5 : f64, dropout = 1.0 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<f32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xf32>)
  return
}

// -----

func.func @grad_step_rank(%q: tensor<1x2x1x4xf32>, %l: tensor<1x1x2xf32>, %step: tensor<1xf32>) {
  // expected-error @+1 {{'plait.attention_grad' op step must be a scalar}}
  %dq, %dk, %dv = plait.attention_grad %q, %q, %q, %q, %l, %q, %step {scale = 0.5 : f64, dropout = 0.1 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x1x2xf32>, tensor<1x2x1x4xf32>, tensor<1xf32>) -> (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>)
  return
}
