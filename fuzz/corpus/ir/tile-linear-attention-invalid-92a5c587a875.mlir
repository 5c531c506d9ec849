func.func @dynamic_value(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %g: tensor<?x?x2x8xf32>, %b: tensor<?x?x2xf32>) -> tensor<?x?x2x?xf32> {
  %o, %s = moe.kda %q, %q, %v, %g, %b : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x?xf32>, tensor<?x2x8x?xf32>)
  return %o : tensor<?x?x2x?xf32>
}
