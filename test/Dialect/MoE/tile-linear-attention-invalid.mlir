// RUN: not moe-opt %s --moe-tile-linear-attention 2>&1 | FileCheck %s --check-prefix=DYNV
// RUN: not moe-opt %s --moe-tile-linear-attention="chunk-size=48" 2>&1 | FileCheck %s --check-prefix=SIZES
// RUN: not moe-opt %s --moe-tile-linear-attention="chunk-size=16 sub-chunk-size=32" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not moe-opt %s --moe-tile-linear-attention="reference=middle" 2>&1 | FileCheck %s --check-prefix=REF

// Tiles have a static value width: a dynamic V is reported at the op.
// DYNV: tile-linear-attention-invalid.mlir:[[# @LINE + 5]]:12: error: 'moe.kda' op needs a static value dimension V to be tiled
// SIZES: error: expects powers of two 2 <= sub-chunk-size (16) <= chunk-size (48)
// ORDER: error: expects powers of two 2 <= sub-chunk-size (32) <= chunk-size (16)
// REF: error: unknown reference 'middle', expected pre, start or mid
func.func @dynamic_value(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %g: tensor<?x?x2x8xf32>, %b: tensor<?x?x2xf32>) -> tensor<?x?x2x?xf32> {
  %o, %s = moe.kda %q, %q, %v, %g, %b : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x?xf32>, tensor<?x2x8x?xf32>)
  return %o : tensor<?x?x2x?xf32>
}
