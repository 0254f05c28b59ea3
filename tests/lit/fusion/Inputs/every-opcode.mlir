// A forward model whose elementwise ops are every opcode of plan version 6 beyond the first
// eleven (codegen-opcodes.test): unary and binary ops, comparisons, logic, where and an i1
// cast, with a broadcast row and a scalar.
module {
  func.func @main(%x: tensor<4x300xf32> {plait.name = "x"}, %y: tensor<4x300xf32> {plait.name = "y"}, %row: tensor<300xf32> {plait.name = "row"}) -> (tensor<4x300xf32> {plait.name = "a"}, tensor<4x300xf32> {plait.name = "b"}, tensor<4x1xf32> {plait.name = "s"}) {
    %zero = plait.constant dense<0.0> : tensor<f32>
    %0 = plait.tanh %x : tensor<4x300xf32>
    %1 = plait.sigmoid %y : tensor<4x300xf32>
    %2 = plait.silu %x : tensor<4x300xf32>
    %3 = plait.abs %y : tensor<4x300xf32>
    %4 = plait.log %3 : tensor<4x300xf32>
    %5 = plait.rsqrt %3 : tensor<4x300xf32>
    %6 = plait.reciprocal %y : tensor<4x300xf32>
    %7 = plait.sin %x : tensor<4x300xf32>
    %8 = plait.cos %y : tensor<4x300xf32>
    %9 = plait.relu %x : tensor<4x300xf32>
    %10 = plait.max %0, %row : (tensor<4x300xf32>, tensor<300xf32>) -> tensor<4x300xf32>
    %11 = plait.min %1, %row : (tensor<4x300xf32>, tensor<300xf32>) -> tensor<4x300xf32>
    %12 = plait.greater %x, %y : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xi1>
    %13 = plait.greater_equal %x, %row : (tensor<4x300xf32>, tensor<300xf32>) -> tensor<4x300xi1>
    %14 = plait.less %y, %zero : (tensor<4x300xf32>, tensor<f32>) -> tensor<4x300xi1>
    %15 = plait.less_equal %x, %zero : (tensor<4x300xf32>, tensor<f32>) -> tensor<4x300xi1>
    %16 = plait.equal %9, %zero : (tensor<4x300xf32>, tensor<f32>) -> tensor<4x300xi1>
    %17 = plait.not %12 : tensor<4x300xi1>
    %18 = plait.and %13, %14 : (tensor<4x300xi1>, tensor<4x300xi1>) -> tensor<4x300xi1>
    %19 = plait.or %15, %16 : (tensor<4x300xi1>, tensor<4x300xi1>) -> tensor<4x300xi1>
    %20 = plait.where %17, %10, %11 : (tensor<4x300xi1>, tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %21 = plait.where %18, %4, %5 : (tensor<4x300xi1>, tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %22 = plait.cast %19 : (tensor<4x300xi1>) -> tensor<4x300xf32>
    %23 = plait.mul %22, %6 : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %24 = plait.add %20, %21 : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %25 = plait.add %24, %23 : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %26 = plait.mul %7, %8 : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %27 = plait.sub %26, %2 : (tensor<4x300xf32>, tensor<4x300xf32>) -> tensor<4x300xf32>
    %28 = plait.reduce_sum %27 {axes = array<i64: 1>} : (tensor<4x300xf32>) -> tensor<4x1xf32>
    return %25, %27, %28 : tensor<4x300xf32>, tensor<4x300xf32>, tensor<4x1xf32>
  }
}
