func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 9223372036854775807 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<12x64xf32>, tensor<9xi64>, tensor<12xi64>)
  return
}
