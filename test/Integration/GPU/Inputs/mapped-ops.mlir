// Ops that no kernel generator takes, for the GPU suite
// (scripts/gpu-test.sh): moe-lower-to-nvvm maps them with
// -moe-map-forall-to-gpu, the row reductions (norms, a narrow projection,
// the cross-entropy's log-sum-exp and its mean) one warp per output; the
// embedding's gradient by -moe-generate-embedding-grad-kernels.
func.func @rms_norm(%x: tensor<?x?x256xf32>, %w: tensor<256xf32>) -> tensor<?x?x256xf32> {
  %y = moe.rms_norm %x, %w : tensor<?x?x256xf32>, tensor<256xf32>
  return %y : tensor<?x?x256xf32>
}

func.func @l2_norm(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.l2_norm %x : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

func.func @cross_entropy(%z: tensor<?x?x300xf32>, %labels: tensor<?x?xi32>) -> tensor<f32> {
  %loss = moe.cross_entropy %z, %labels : (tensor<?x?x300xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @embedding(%tokens: tensor<?x?xi32>, %table: tensor<300x48xf32>) -> tensor<?x?x48xf32> {
  %h = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<300x48xf32> -> tensor<?x?x48xf32>
  return %h : tensor<?x?x48xf32>
}

func.func @embedding_grad(%dh: tensor<?x?x48xf32>, %tokens: tensor<?x?xi32>, %table: tensor<300x48xf32>) -> tensor<300x48xf32> {
  %d = moe.embedding_grad %dh, %tokens, %table : tensor<?x?x48xf32>, tensor<?x?xi32>, tensor<300x48xf32>
  return %d : tensor<300x48xf32>
}

func.func @embedding_grad_wide(%dh: tensor<?x600xf32>, %ids: tensor<?xi64>, %table: tensor<?x600xf32>) -> tensor<?x600xf32> {
  %d = moe.embedding_grad %dh, %ids, %table : tensor<?x600xf32>, tensor<?xi64>, tensor<?x600xf32>
  return %d : tensor<?x600xf32>
}
