// RUN: moe-opt %s -test-moe-adjoints -split-input-file | FileCheck %s

// DifferentiableOpInterface of moe.kda: it builds one moe.kda_grad from the
// forward's operands, attributes and the result adjoints (here function
// arguments); a null output adjoint becomes zeros, a null final-state
// adjoint is left out, and when both are null nothing is built and no
// gradient flows. The initial state gets its gradient only when it exists.

// CHECK-LABEL: func.func @both_adjoints
// CHECK-SAME: (%[[Q:.*]]: tensor<?x?x2x8xf32>, %[[K:.*]]: tensor<?x?x2x8xf32>, %[[V:.*]]: tensor<?x?x2x4xf32>, %[[G:.*]]: tensor<?x?x2x8xf32>, %[[BETA:.*]]: tensor<?x?x2xf32>, %[[S0:.*]]: tensor<?x2x8x4xf32>, %[[DO:.*]]: tensor<?x?x2x4xf32>, %[[DS:.*]]: tensor<?x2x8x4xf32>)
// CHECK-SAME: -> (tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x2x8x4xf32>)
// CHECK: %[[O:.*]], %{{.*}} = moe.kda
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DG:.*]], %[[DB:.*]], %[[DS0:.*]] = moe.kda_grad %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[S0]]) output_adjoint(%[[DO]]) final_state_adjoint(%[[DS]]) {scale = 2.500000e-01 : f64}
// CHECK: return %[[O]], %[[DQ]], %[[DK]], %[[DV]], %[[DG]], %[[DB]], %[[DS0]]
func.func @both_adjoints(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
    %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x8x4xf32>,
    %do: tensor<?x?x2x4xf32>, %ds: tensor<?x2x8x4xf32>) -> tensor<?x?x2x4xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      {scale = 0.25 : f64, test.adjoints = array<i64: 6, 7>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}

// -----

// Only the output reaches the loss; no initial state: five gradients.

// CHECK-LABEL: func.func @output_adjoint_only
// CHECK: moe.kda_grad %arg0, %arg1, %arg2, %arg3, %arg4 output_adjoint(%arg5) {state_layout = #moe.state_layout<value_major>} : (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>, tensor<3x?x2xbf16>, tensor<3x?x2x4xbf16>) -> (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>, tensor<3x?x2xbf16>, tensor<3x2x4x8xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x?x2x4xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>, tensor<3x?x2xbf16>
func.func @output_adjoint_only(%q: tensor<3x?x2x8xbf16>, %k: tensor<3x?x2x8xbf16>,
    %v: tensor<3x?x2x4xbf16>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xbf16>,
    %do: tensor<3x?x2x4xbf16>) -> tensor<3x?x2x4xbf16> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      {state_layout = #moe.state_layout<value_major>, test.adjoints = array<i64: 5, -1>}
      : (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xbf16>) -> (tensor<3x?x2x4xbf16>, tensor<3x2x4x8xf32>)
  return %o : tensor<3x?x2x4xbf16>
}

// -----

// Only the final state reaches the loss: the output adjoint is zeros of the
// output's (dynamic) shape.

// CHECK-LABEL: func.func @state_adjoint_only
// CHECK: %[[O:.*]], %{{.*}} = moe.kda
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[O]], %c0
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[O]], %c1
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[B]], %[[T]]) : tensor<?x?x2x4xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[EMPTY]] : tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32>
// CHECK: moe.kda_grad %arg0, %arg1, %arg2, %arg3, %arg4 initial_state(%arg5) output_adjoint(%[[ZEROS]]) final_state_adjoint(%arg6)
func.func @state_adjoint_only(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>,
    %v: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>,
    %s0: tensor<?x2x8x4xf32>, %ds: tensor<?x2x8x4xf32>) -> tensor<?x2x8x4xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0) {test.adjoints = array<i64: -1, 6>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %s : tensor<?x2x8x4xf32>
}

// -----

// Neither result reaches the loss: nothing is built.

// CHECK-LABEL: func.func @no_adjoint
// CHECK-NOT: moe.kda_grad
// CHECK: return %{{.*}} : tensor<?x?x2x4xf32>
func.func @no_adjoint(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x8xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<?x?x2x4xf32> {
  %o, %s = moe.kda %q, %q, %v, %g, %beta {test.adjoints = array<i64: -1, -1>}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}
