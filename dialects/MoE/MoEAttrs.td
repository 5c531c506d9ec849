//===- MoEAttrs.td - moe dialect attributes --------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Attributes that configure moe ops: the KDA decay gate, the router and its
// balancer, the recurrent state layout, the FFN activation and parameter
// initialisers.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEATTRS_TD
#define MOE_DIALECT_MOE_MOEATTRS_TD

include "dialects/MoE/MoEBase.td"

//===----------------------------------------------------------------------===//
// Parameter helpers
//===----------------------------------------------------------------------===//

// A double, printed with MLIR's float printer (exact round trip).
class MoE_F64Parameter<string desc> : AttrParameter<"::llvm::APFloat", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    ::llvm::APFloat value(0.0);
    if (::mlir::failed($_parser.parseFloat(::llvm::APFloat::IEEEdouble(), value)))
      return ::mlir::failure();
    return value;
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
}

class MoE_OptionalF64Parameter<string desc>
    : OptionalParameter<"std::optional<::llvm::APFloat>", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<std::optional<::llvm::APFloat>> {
    ::llvm::APFloat value(0.0);
    if (::mlir::failed($_parser.parseFloat(::llvm::APFloat::IEEEdouble(), value)))
      return ::mlir::failure();
    return std::optional<::llvm::APFloat>(value);
  }() }];
  let printer = [{ $_printer.printFloat(*$_self) }];
  let comparator = [{ $_lhs.has_value() == $_rhs.has_value() &&
                      (!$_lhs || $_lhs->bitwiseIsEqual(*$_rhs)) }];
}

//===----------------------------------------------------------------------===//
// DecayGateAttr
//===----------------------------------------------------------------------===//

def MoE_DecayGateAttr : MoE_Attr<"DecayGate", "decay_gate"> {
  let summary = "Parameterization of the KDA per-channel log decay";
  let description = [{
    Selects how the raw gate projection `z` becomes the log decay `g <= 0`
    (ALGORITHMS.md section 2.1), per head `h` and channel `c`:

    * `bounded` with `g_min`: `g = g_min * sigmoid(exp(A_log[h]) * (z + dt_bias[h, c]))`,
      so `g` lies in `(g_min, 0)`. The decay-bound analysis uses `g_min` to
      prove that a tile's reciprocal decay factors stay representable.
    * `softplus`: `g = -exp(A_log[h]) * softplus(z + dt_bias[h, c])`, unbounded
      below; a tile's safety can only be checked at run time.

    `g_min` must be finite and negative, and is given only for `bounded`.

    Example:

    ```mlir
    #moe.decay_gate<bounded, g_min = -5.0>
    #moe.decay_gate<softplus>
    ```
  }];
  let parameters = (ins
    EnumParameter<MoE_GateKind>:$kind,
    MoE_OptionalF64Parameter<"lower bound of g (bounded only)">:$g_min
  );
  let assemblyFormat = "`<` $kind (`,` `g_min` `=` $g_min^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isBounded() const { return getKind() == GateKind::Bounded; }
    /// g_min as a double; only for the bounded gate.
    double getGMinValue() const { return getGMin()->convertToDouble(); }
  }];
}

//===----------------------------------------------------------------------===//
// Balancers
//===----------------------------------------------------------------------===//

def MoE_QuantileBalanceAttr : MoE_Attr<"QuantileBalance", "quantile_balance"> {
  let summary = "Quantile balancing of the router's selection bias";
  let description = [{
    Quantile balancing (ALGORITHMS.md section 4.3): after each step, expert
    `j`'s selection bias becomes the `k/E` quantile of the bias it would need
    to win each token, centred to zero mean. It replaces the bias; it is not
    an increment, and it has no step size.

    * `exact`: the quantile from a full sort of the batch (the midpoint of the
      q-th and (q+1)-th smallest value, `q = round(N k / E)`).
    * `histogram` with `bins`: a per-expert histogram over
      `[min b - 1, max b + 1]`, linearly interpolated; its counts add up over
      micro-batches and ranks.

    Example:

    ```mlir
    #moe.quantile_balance<exact>
    #moe.quantile_balance<histogram, bins = 512>
    ```
  }];
  let parameters = (ins
    EnumParameter<MoE_QuantileMethod>:$method,
    OptionalParameter<"std::optional<int64_t>", "histogram bin count">:$bins
  );
  let assemblyFormat = "`<` $method (`,` `bins` `=` $bins^)? `>`";
  let genVerifyDecl = 1;
}

def MoE_SignBiasBalanceAttr : MoE_Attr<"SignBiasBalance", "sign_bias"> {
  let summary = "DeepSeek-V3's auxiliary-loss-free sign-bias balancing";
  let description = [{
    After each step, `b_j <- b_j + rate * sign(mean_load - load_j)`
    (ALGORITHMS.md section 4.2). `rate` must be finite and positive.

    Example:

    ```mlir
    #moe.sign_bias<rate = 1.0e-3>
    ```
  }];
  let parameters = (ins MoE_F64Parameter<"bias step size">:$rate);
  let assemblyFormat = "`<` `rate` `=` $rate `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// RoutingAttr
//===----------------------------------------------------------------------===//

def MoE_RoutingAttr : MoE_Attr<"Routing", "routing"> {
  let summary = "Sigmoid top-k router configuration";
  let description = [{
    Configures the router of ALGORITHMS.md section 4.1: sigmoid scores `s`,
    the `top_k` experts of `s + b` out of `experts`, weights renormalised from
    the unbiased scores and multiplied by `scaling` (the routed scaling
    factor), and the balancer that produces the next step's bias `b`
    (`#moe.quantile_balance` or `#moe.sign_bias`).

    Rules: `experts >= 1`; `1 <= top_k <= experts`; `scaling` finite and
    positive; quantile balancing needs `top_k < experts`, because its cut is
    the (k+1)-th largest biased score.

    Example:

    ```mlir
    #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                 balance = #moe.quantile_balance<exact>>
    ```
  }];
  let parameters = (ins
    "int64_t":$num_experts,
    "int64_t":$top_k,
    MoE_F64Parameter<"routed scaling factor">:$routed_scaling_factor,
    "::mlir::Attribute":$balance
  );
  let extraClassDeclaration = [{
    double getScalingValue() const {
      return getRoutedScalingFactor().convertToDouble();
    }
  }];
  let assemblyFormat = [{
    `<` `experts` `=` $num_experts `,` `top_k` `=` $top_k `,`
        `scaling` `=` $routed_scaling_factor `,` `balance` `=` $balance `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// StateLayoutAttr
//===----------------------------------------------------------------------===//

def MoE_StateLayoutAttr : EnumAttr<MoE_Dialect, MoE_StateLayout, "state_layout"> {
  let summary = "Memory order of a KDA recurrent state";
  let description = [{
    `key_major` stores the per-head state as `[B, H, K, V]` (the math's
    `S in R^{K x V}`); `value_major` stores it as `[B, H, V, K]`, the order of
    flash-linear-attention's Kimi layer.

    Example: `#moe.state_layout<value_major>`
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// ActivationAttr
//===----------------------------------------------------------------------===//

def MoE_ActivationAttr : MoE_Attr<"Activation", "activation"> {
  let summary = "Gated FFN activation";
  let description = [{
    * `swiglu`: `h = silu(x Wg) * (x Wu)`.
    * `situ_glu` with `gate_beta` and an optional `up_beta`:
      `h = gate_beta * tanh(a / gate_beta) * sigmoid(a) * cap(u)` with
      `a = x Wg`, `u = x Wu`, `cap(u) = up_beta * tanh(u / up_beta)` (identity
      when `up_beta` is absent). ALGORITHMS.md section 6.

    The betas must be finite and positive and are given only for `situ_glu`.

    Example:

    ```mlir
    #moe.activation<swiglu>
    #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>
    ```
  }];
  let parameters = (ins
    EnumParameter<MoE_Activation>:$kind,
    MoE_OptionalF64Parameter<"SiTU gate beta">:$gate_beta,
    MoE_OptionalF64Parameter<"SiTU up-projection cap">:$up_beta
  );
  let assemblyFormat = [{
    `<` $kind (`,` struct($gate_beta, $up_beta)^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// gate_beta as a double; only for situ_glu.
    std::optional<double> getGateBetaValue() const {
      if (getKind() != Activation::SiTUGLU || !getGateBeta())
        return std::nullopt;
      return getGateBeta()->convertToDouble();
    }
    /// up_beta as a double; only for situ_glu, and optional there.
    std::optional<double> getUpBetaValue() const {
      if (getKind() != Activation::SiTUGLU || !getUpBeta())
        return std::nullopt;
      return getUpBeta()->convertToDouble();
    }
  }];
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

def MoE_InitAttr : MoE_Attr<"Init", "init"> {
  let summary = "Initial value of a parameter";
  let description = [{
    How `moe.param` is initialised (ALGORITHMS.md sections 2.1 and 7.4):

    * `zeros`, `ones`: constants;
    * `normal` with `std`: `N(0, std^2)`;
    * `log_uniform` with `low`, `high`: `ln U(low, high)` (A_log of the
      softplus gate, `ln U(1, 16)`);
    * `inverse_softplus_dt` with `low`, `high`: `dt = exp(U(ln low, ln high))`
      clamped to at least 1e-4, then `dt + ln(-expm1(-dt))` (dt_bias).

    `std` must be positive; `0 < low < high`; a kind takes only its own
    parameters.

    Example:

    ```mlir
    #moe.init<normal, std = 0.02>
    #moe.init<log_uniform, low = 1.0, high = 16.0>
    ```
  }];
  let parameters = (ins
    EnumParameter<MoE_InitKind>:$kind,
    MoE_OptionalF64Parameter<"standard deviation (normal)">:$std,
    MoE_OptionalF64Parameter<"lower end of the range">:$low,
    MoE_OptionalF64Parameter<"upper end of the range">:$high
  );
  let assemblyFormat = [{
    `<` $kind (`,` struct($std, $low, $high)^)? `>`
  }];
  let genVerifyDecl = 1;
}

#endif // MOE_DIALECT_MOE_MOEATTRS_TD
