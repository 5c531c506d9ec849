func.func @no_adjoint(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x8xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<?x?x2x4xf32> {
  %o, %s = moe.kda %q, %q, %v, %g, %beta {test.adjoints = array<i64: -1, -1>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}
