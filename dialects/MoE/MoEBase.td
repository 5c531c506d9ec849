//===- MoEBase.td - moe dialect record, base classes and enums -*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// The `moe` dialect record, the base class of its ops and attributes, and the
// enums that attributes and ops share.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEBASE_TD
#define MOE_DIALECT_MOE_MOEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def MoE_Dialect : Dialect {
  let name = "moe";
  let cppNamespace = "::mlir::moe";
  let summary = "Hybrid-attention Mixture-of-Experts language model layers";
  let description = [{
    The `moe` dialect describes Kimi-Linear-style language models: KDA linear
    attention with a (possibly lower-bounded) per-channel decay, gated MLA
    attention, Mixture-of-Experts feed-forward layers with quantile-balanced
    routing, and Block Attention Residuals.

    It has two levels. *Layer* ops (`moe.kda_layer`, `moe.mla_layer`,
    `moe.moe_ffn`, `moe.attn_res`, `moe.lm_head`) describe a model the way a
    configuration file does; `-moe-decompose` rewrites them into *primitive*
    ops (`moe.kda`, `moe.decay_gate`, `moe.mla_attention`, `moe.route`, ...)
    plus upstream `linalg`, `arith` and `tensor` ops. Every op works on
    value-semantic tensors; weights are operands (declared by `moe.param`), so
    that a later pass can differentiate and shard every op without hidden
    state.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; defined next to their storage classes.
    void registerAttributes();
    /// Register each family of gradient ops; defined next to their
    /// verifiers (MoE<Family>GradOps.cpp).
    void registerLinearAttentionGradOps();
    void registerCommonGradOps();
    void registerAttentionGradOps();
    void registerRoutingGradOps();
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class MoE_Op<string mnemonic, list<Trait> traits = []>
    : Op<MoE_Dialect, mnemonic, traits>;

class MoE_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<MoE_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def MoE_GateKind : I32EnumAttr<"GateKind", "parameterization of the KDA decay",
    [
      I32EnumAttrCase<"Bounded", 0, "bounded">,
      I32EnumAttrCase<"Softplus", 1, "softplus">
    ]> {
  let cppNamespace = "::mlir::moe";
  let genSpecializedAttr = 0;
}

def MoE_QuantileMethod : I32EnumAttr<"QuantileMethod",
    "how quantile balancing finds each expert's quantile",
    [
      I32EnumAttrCase<"Exact", 0, "exact">,
      I32EnumAttrCase<"Histogram", 1, "histogram">
    ]> {
  let cppNamespace = "::mlir::moe";
  let genSpecializedAttr = 0;
}

def MoE_StateLayout : I32EnumAttr<"StateLayout",
    "memory order of a KDA recurrent state",
    [
      // [B, H, K, V]: the state as the math writes it, S in R^{K x V}.
      I32EnumAttrCase<"KeyMajor", 0, "key_major">,
      // [B, H, V, K]: flash-linear-attention's Kimi layer ("V-first").
      I32EnumAttrCase<"ValueMajor", 1, "value_major">
    ]> {
  let cppNamespace = "::mlir::moe";
  let genSpecializedAttr = 0;
}

def MoE_Activation : I32EnumAttr<"Activation",
    "gated FFN activation",
    [
      // silu(x Wg) * (x Wu)
      I32EnumAttrCase<"SwiGLU", 0, "swiglu">,
      // SiTU(x Wg) * cap(x Wu), ALGORITHMS.md section 6
      I32EnumAttrCase<"SiTUGLU", 1, "situ_glu">
    ]> {
  let cppNamespace = "::mlir::moe";
  let genSpecializedAttr = 0;
}

def MoE_InitKind : I32EnumAttr<"InitKind",
    "how a parameter is initialised",
    [
      I32EnumAttrCase<"Zeros", 0, "zeros">,
      I32EnumAttrCase<"Ones", 1, "ones">,
      I32EnumAttrCase<"Normal", 2, "normal">,
      // ln U(low, high): KDA's A_log for the softplus gate.
      I32EnumAttrCase<"LogUniform", 3, "log_uniform">,
      // inverse softplus of exp(U(ln low, ln high)): KDA's dt_bias.
      I32EnumAttrCase<"InverseSoftplusDt", 4, "inverse_softplus_dt">
    ]> {
  let cppNamespace = "::mlir::moe";
  let genSpecializedAttr = 0;
}

#endif // MOE_DIALECT_MOE_MOEBASE_TD
