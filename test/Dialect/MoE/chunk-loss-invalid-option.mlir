// RUN: not moe-opt %s --pass-pipeline='builtin.module(func.func(moe-chunk-loss{vocab-chunk=0}))' 2>&1 | FileCheck %s
// CHECK: -moe-chunk-loss: vocab-chunk must be positive, got 0
func.func @f() {
  return
}
