func.func @both_adjoints(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
    %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x8x4xf32>,
    %do: tensor<?x?x2x4xf32>, %ds: tensor<?x2x8x4xf32>) -> tensor<?x?x2x4xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      {scale = 0.25 : f64, test.adjoints = array<i64: 6, 7>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}
