// RUN: not moe-opt %s --moe-tile-linear-attention 2>&1 | FileCheck %s

// Tiles have a static value width: a dynamic V of moe.kda_grad is reported
// at the op, as for moe.kda.
// CHECK: tile-linear-attention-grad-invalid.mlir:[[# @LINE + 3]]:10: error: 'moe.kda_grad' op needs a static value dimension V to be tiled
func.func @dynamic_value(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %g: tensor<?x?x2x8xf32>,
                         %b: tensor<?x?x2xf32>) -> tensor<?x?x2x?xf32> {
  %0:6 = moe.kda_grad %q, %q, %v, %g, %b output_adjoint(%v)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x?x2x?xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?x2xf32>, tensor<?x2x8x?xf32>)
  return %0#2 : tensor<?x?x2x?xf32>
}
