func.func @state_adjoint_only(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>,
    %v: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>,
    %s0: tensor<?x2x8x4xf32>, %ds: tensor<?x2x8x4xf32>) -> tensor<?x2x8x4xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0) {test.adjoints = array<i64: -1, 6>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %s : tensor<?x2x8x4xf32>
}
