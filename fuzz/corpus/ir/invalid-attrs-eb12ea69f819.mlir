func.func private @f() attributes {moe.a = #moe.decay_gate<softplus, g_min = -5.0>}
