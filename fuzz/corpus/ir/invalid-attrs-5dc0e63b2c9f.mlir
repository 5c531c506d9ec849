func.func private @f() attributes {moe.a = #moe.decay_gate<bounded>}
