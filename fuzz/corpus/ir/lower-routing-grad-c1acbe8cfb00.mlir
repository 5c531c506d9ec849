func.func @slots(%g: tensor<?x16xf32>, %slot: tensor<?xi64>,
    %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %dy: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x2xf32>) {
  %dx = moe.dispatch_grad %g, %slot, %idx
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xi64>) -> tensor<?x16xf32>
  %dyp, %dw = moe.combine_grad %g, %slot, %w, %dy
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xf32>, tensor<?x16xf32>)
      -> (tensor<?x16xf32>, tensor<?x2xf32>)
  return %dx, %dyp, %dw : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x2xf32>
}
