func.func private @decay_gate() attributes {
  moe.bounded = #moe.decay_gate<bounded, g_min = -5.0>,
  moe.bounded_fraction = #moe.decay_gate<bounded, g_min = -5.25>,
  moe.bounded_hex = #moe.decay_gate<bounded, g_min = 0xC015000000000000>,
  moe.bounded_tiny = #moe.decay_gate<bounded, g_min = -1.0e-300>,
  moe.softplus = #moe.decay_gate<softplus>
}

func.func private @balancers() attributes {
  moe.exact = #moe.quantile_balance<exact>,
  moe.histogram = #moe.quantile_balance<histogram, bins = 512>,
  moe.histogram_min = #moe.quantile_balance<histogram, bins = 2>,
  moe.sign_bias = #moe.sign_bias<rate = 1.0e-3>,
  moe.sign_bias_precise = #moe.sign_bias<rate = 0.0001234567>
}

func.func private @routing() attributes {
  moe.exact = #moe.routing<experts = 16, top_k = 4, scaling = 2.446,
                           balance = #moe.quantile_balance<exact>>,
  moe.histogram = #moe.routing<experts = 384, top_k = 8, scaling = 2.5,
                               balance = #moe.quantile_balance<histogram, bins = 256>>,
  moe.precise = #moe.routing<experts = 16, top_k = 4, scaling = 2.4461234567891,
                             balance = #moe.quantile_balance<exact>>,
  moe.sign_bias = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
  moe.sign_bias_all = #moe.routing<experts = 1, top_k = 1, scaling = 1.0,
                                   balance = #moe.sign_bias<rate = 1.0e-3>>
}

func.func private @state_layout() attributes {
  moe.key_major = #moe.state_layout<key_major>,
  moe.value_major = #moe.state_layout<value_major>
}

func.func private @activation() attributes {
  moe.situ_glu = #moe.activation<situ_glu, gate_beta = 4.0>,
  moe.situ_glu_capped = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>,
  moe.situ_glu_swapped = #moe.activation<situ_glu, up_beta = 30.0, gate_beta = 1.5>,
  moe.swiglu = #moe.activation<swiglu>
}

func.func private @init() attributes {
  moe.dt = #moe.init<inverse_softplus_dt, low = 0.001, high = 0.1>,
  moe.log_uniform = #moe.init<log_uniform, low = 1.0, high = 16.0>,
  moe.log_uniform_swapped = #moe.init<log_uniform, high = 16.0, low = 1.0>,
  moe.normal = #moe.init<normal, std = 0.02>,
  moe.normal_precise = #moe.init<normal, std = 0.0156251234>,
  moe.ones = #moe.init<ones>,
  moe.zeros = #moe.init<zeros>
}

func.func @on_ops(%z: tensor<1x8x4x16xf32>, %dtb: tensor<4x16xf32>,
    %x: tensor<8x64xf32>, %wr: tensor<4x64xf32>, %b: tensor<4xf32>,
    %off: tensor<5xi64>, %we: tensor<4x64x32xf32>, %wd: tensor<4x32x64xf32>,
    %v: tensor<1x8x4x8xf32>, %beta: tensor<1x8x4xf32>) {
  %w = moe.param "w" init <normal, std = 0.0625> : tensor<64x4xf32>
  %g = moe.decay_gate <bounded, g_min = -2.718282> %z, %dtb
      : (tensor<1x8x4x16xf32>, tensor<4x16xf32>) -> tensor<1x8x4x16xf32>
  %g2 = moe.decay_gate <bounded, g_min = -2.7182818284590451> %z, %dtb
      : (tensor<1x8x4x16xf32>, tensor<4x16xf32>) -> tensor<1x8x4x16xf32>
  %rw, %ri, %rl, %rb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 4, top_k = 3, scaling = 2.446,
         balance = #moe.quantile_balance<histogram, bins = 64>>}
      : (tensor<8x64xf32>, tensor<4x64xf32>, tensor<4xf32>)
      -> (tensor<8x3xf32>, tensor<8x3xi64>, tensor<4xi64>, tensor<4xf32>)
  %y = moe.expert_ffn %x, %off, %we, %we, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 0.25, up_beta = 0.75>}
      : (tensor<8x64xf32>, tensor<5xi64>, tensor<4x64x32xf32>,
         tensor<4x64x32xf32>, tensor<4x32x64xf32>) -> tensor<8x64xf32>
  %o, %s = moe.kda %z, %z, %v, %g, %beta
      {state_layout = #moe.state_layout<value_major>}
      : (tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x8xf32>,
         tensor<1x8x4x16xf32>, tensor<1x8x4xf32>)
      -> (tensor<1x8x4x8xf32>, tensor<1x4x8x16xf32>)
  return
}
