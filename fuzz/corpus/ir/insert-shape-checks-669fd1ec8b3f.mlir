func.func @kda(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x8xf32>, %g: tensor<?x?x2x16xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<?x?x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>)
  return %o : tensor<?x?x2x8xf32>
}
