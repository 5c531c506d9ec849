// RUN: moe-opt %s -split-input-file -verify-diagnostics

// One case per message of the attribute verifiers (MoEAttrs.cpp), plus the
// parse errors of the enum keywords.

//===----------------------------------------------------------------------===//
// #moe.decay_gate
//===----------------------------------------------------------------------===//

// expected-error @+1 {{the softplus gate is unbounded and takes no g_min}}
func.func private @f() attributes {moe.a = #moe.decay_gate<softplus, g_min = -5.0>}

// -----

// expected-error @+1 {{the bounded gate requires g_min}}
func.func private @f() attributes {moe.a = #moe.decay_gate<bounded>}

// -----

// expected-error @+1 {{expects g_min to be finite and negative, got 5.000000e+00}}
func.func private @f() attributes {moe.a = #moe.decay_gate<bounded, g_min = 5.0>}

// -----

// expected-error @+1 {{expects g_min to be finite and negative, got 0.000000e+00}}
func.func private @f() attributes {moe.a = #moe.decay_gate<bounded, g_min = 0.0>}

// -----

// -inf written as the bits of the double.
// expected-error @+1 {{expects g_min to be finite and negative, got -INF}}
func.func private @f() attributes {moe.a = #moe.decay_gate<bounded, g_min = 0xFFF0000000000000>}

// -----

// expected-error @+2 {{expected ::mlir::moe::GateKind to be one of: bounded, softplus}}
// expected-error @+1 {{failed to parse MoE_DecayGateAttr parameter 'kind'}}
func.func private @f() attributes {moe.a = #moe.decay_gate<sigmoid, g_min = -5.0>}

// -----

// g_min is a float: an integer literal is rejected.
// expected-error @+3 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+2 {{add a trailing dot to make the literal a float}}
// expected-error @+1 {{failed to parse MoE_DecayGateAttr parameter 'g_min'}}
func.func private @f() attributes {moe.a = #moe.decay_gate<bounded, g_min = -5>}

//===----------------------------------------------------------------------===//
// #moe.quantile_balance and #moe.sign_bias
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{the exact quantile takes no bin count}}
func.func private @f() attributes {moe.a = #moe.quantile_balance<exact, bins = 512>}

// -----

// expected-error @+1 {{the histogram quantile requires a bin count}}
func.func private @f() attributes {moe.a = #moe.quantile_balance<histogram>}

// -----

// expected-error @+1 {{expects at least 2 histogram bins, got 1}}
func.func private @f() attributes {moe.a = #moe.quantile_balance<histogram, bins = 1>}

// -----

// expected-error @+2 {{expected ::mlir::moe::QuantileMethod to be one of: exact, histogram}}
// expected-error @+1 {{failed to parse MoE_QuantileBalanceAttr parameter 'method'}}
func.func private @f() attributes {moe.a = #moe.quantile_balance<sort>}

// -----

// expected-error @+1 {{expects the sign-bias rate to be finite and positive, got -1.000000e-03}}
func.func private @f() attributes {moe.a = #moe.sign_bias<rate = -1.0e-3>}

// -----

// NaN written as the bits of the double.
// expected-error @+1 {{expects the sign-bias rate to be finite and positive, got nan}}
func.func private @f() attributes {moe.a = #moe.sign_bias<rate = 0x7FF8000000000000>}

//===----------------------------------------------------------------------===//
// #moe.routing
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{expects at least one expert, got 0}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 0, top_k = 1, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}

// -----

// expected-error @+1 {{expects 1 <= top_k (0) <= experts (16)}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 0, scaling = 1.0, balance = #moe.quantile_balance<exact>>}

// -----

// expected-error @+1 {{expects 1 <= top_k (17) <= experts (16)}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 17, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}

// -----

// expected-error @+1 {{expects the routed scaling factor to be finite and positive, got 0.000000e+00}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 4, scaling = 0.0, balance = #moe.quantile_balance<exact>>}

// -----

// +inf written as the bits of the double.
// expected-error @+1 {{expects the routed scaling factor to be finite and positive, got INF}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 4, scaling = 0x7FF0000000000000, balance = #moe.quantile_balance<exact>>}

// -----

// expected-error @+1 {{expects balance to be #moe.quantile_balance or #moe.sign_bias, got #moe.decay_gate<softplus>}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 4, scaling = 2.5, balance = #moe.decay_gate<softplus>>}

// -----

// expected-error @+1 {{expects balance to be #moe.quantile_balance or #moe.sign_bias, got 1 : i64}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 4, scaling = 2.5, balance = 1>}

// -----

// expected-error @+1 {{quantile balancing needs top_k (16) < experts (16): its cut is the (k+1)-th largest score}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 16, scaling = 1.0, balance = #moe.quantile_balance<histogram, bins = 64>>}

// -----

// An invalid balancer is reported where it is written.
// expected-error @+2 {{expects at least 2 histogram bins, got 0}}
// expected-error @+1 {{failed to parse MoE_RoutingAttr parameter 'balance'}}
func.func private @f() attributes {moe.a = #moe.routing<experts = 16, top_k = 4, scaling = 2.5, balance = #moe.quantile_balance<histogram, bins = 0>>}

//===----------------------------------------------------------------------===//
// #moe.state_layout
//===----------------------------------------------------------------------===//

// -----

// expected-error @+2 {{expected ::mlir::moe::StateLayout to be one of: key_major, value_major}}
// expected-error @+1 {{failed to parse MoE_StateLayoutAttr parameter 'value'}}
func.func private @f() attributes {moe.a = #moe.state_layout<row_major>}

//===----------------------------------------------------------------------===//
// #moe.activation
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{swiglu takes no gate_beta or up_beta}}
func.func private @f() attributes {moe.a = #moe.activation<swiglu, gate_beta = 4.0>}

// -----

// expected-error @+1 {{swiglu takes no gate_beta or up_beta}}
func.func private @f() attributes {moe.a = #moe.activation<swiglu, up_beta = 25.0>}

// -----

// expected-error @+1 {{situ_glu requires gate_beta}}
func.func private @f() attributes {moe.a = #moe.activation<situ_glu>}

// -----

// expected-error @+1 {{situ_glu requires gate_beta}}
func.func private @f() attributes {moe.a = #moe.activation<situ_glu, up_beta = 25.0>}

// -----

// expected-error @+1 {{expects gate_beta to be finite and positive, got -4.000000e+00}}
func.func private @f() attributes {moe.a = #moe.activation<situ_glu, gate_beta = -4.0, up_beta = 25.0>}

// -----

// expected-error @+1 {{expects up_beta to be finite and positive, got 0.000000e+00}}
func.func private @f() attributes {moe.a = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 0.0>}

// -----

// expected-error @+2 {{expected ::mlir::moe::Activation to be one of: swiglu, situ_glu}}
// expected-error @+1 {{failed to parse MoE_ActivationAttr parameter 'kind'}}
func.func private @f() attributes {moe.a = #moe.activation<gelu>}

//===----------------------------------------------------------------------===//
// #moe.init
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{init 'zeros' takes no parameters}}
func.func private @f() attributes {moe.a = #moe.init<zeros, std = 1.0>}

// -----

// expected-error @+1 {{init 'ones' takes no parameters}}
func.func private @f() attributes {moe.a = #moe.init<ones, low = 1.0, high = 2.0>}

// -----

// expected-error @+1 {{init 'normal' takes only std}}
func.func private @f() attributes {moe.a = #moe.init<normal, std = 0.02, low = 1.0>}

// -----

// expected-error @+1 {{init 'normal' requires std}}
func.func private @f() attributes {moe.a = #moe.init<normal>}

// -----

// expected-error @+1 {{expects std to be finite and positive, got -2.000000e-02}}
func.func private @f() attributes {moe.a = #moe.init<normal, std = -0.02>}

// -----

// expected-error @+1 {{init 'log_uniform' takes low and high, not std}}
func.func private @f() attributes {moe.a = #moe.init<log_uniform, std = 1.0, low = 1.0, high = 16.0>}

// -----

// expected-error @+1 {{init 'inverse_softplus_dt' requires low and high}}
func.func private @f() attributes {moe.a = #moe.init<inverse_softplus_dt, low = 0.001>}

// -----

// expected-error @+1 {{init 'log_uniform' requires low and high}}
func.func private @f() attributes {moe.a = #moe.init<log_uniform, high = 16.0>}

// -----

// expected-error @+1 {{expects 0 < low < high, got low = 1.600000e+01 and high = 1.000000e+00}}
func.func private @f() attributes {moe.a = #moe.init<log_uniform, low = 16.0, high = 1.0>}

// -----

// expected-error @+1 {{expects 0 < low < high, got low = 0.000000e+00 and high = 1.000000e-01}}
func.func private @f() attributes {moe.a = #moe.init<inverse_softplus_dt, low = 0.0, high = 0.1>}

// -----

// expected-error @+1 {{expects 0 < low < high, got low = 1.000000e-01 and high = 1.000000e-01}}
func.func private @f() attributes {moe.a = #moe.init<inverse_softplus_dt, low = 0.1, high = 0.1>}

// -----

// expected-error @+2 {{expected ::mlir::moe::InitKind to be one of: zeros, ones, normal, log_uniform, inverse_softplus_dt}}
// expected-error @+1 {{failed to parse MoE_InitAttr parameter 'kind'}}
func.func private @f() attributes {moe.a = #moe.init<uniform, low = 1.0, high = 2.0>}

// -----

// A keyword the struct does not know.
// expected-error @+1 {{duplicate or unknown struct parameter name: mean}}
func.func private @f() attributes {moe.a = #moe.init<normal, mean = 0.0>}

// -----

// An invalid init is reported where it is written, also inside moe.param.
func.func @f() {
  // expected-error @+1 {{init 'normal' requires std}}
  %w = moe.param "w" init <normal> : tensor<4xf32>
  return
}
