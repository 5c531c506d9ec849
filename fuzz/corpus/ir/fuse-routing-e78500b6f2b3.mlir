func.func @standalone(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                      %slot: tensor<?xi64>, %yp: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>, tensor<?x16xbf16>) {
  %xp, %off, %slot2 = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x16xbf16>, tensor<?x2xi32>)
      -> (tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>)
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x16xbf16>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x16xbf16>
  return %xp, %off, %slot2, %y : tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>, tensor<?x16xbf16>
}
