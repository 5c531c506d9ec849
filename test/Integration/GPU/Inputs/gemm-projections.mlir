// Dense contractions for the GPU suite (scripts/gpu-test.sh), each of which
// -moe-generate-gemm-kernels turns into a generated tensor-core GEMM (bf16
// operands, fp32 accumulation): projections as TensorBuilder::project
// builds them (input maps (m..., k), weights (k, n) or transposed (n, k)),
// f32 and bf16 operands in every combination, widths that are and are not
// multiples of the 128-column tile, a linalg.matmul whose accumulators start
// at a filled constant, and a chain of two projections whose operands are
// not exact in bf16 (the suite's inputs are), so that the rounding to bf16
// is exercised. The row counts are dynamic.

#in3 = affine_map<(b, t, n, k) -> (b, t, k)>
#w3 = affine_map<(b, t, n, k) -> (k, n)>
#out3 = affine_map<(b, t, n, k) -> (b, t, n)>
#in = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#wt = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, k) -> (m, k)>

// f32 [B, T, 256] x [256, 192]: 64-column tiles, operands staged through
// registers.
func.func @project_f32(%x: tensor<?x?x256xf32>, %w: tensor<256x192xf32>) -> tensor<?x?x192xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x256xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b, %t) : tensor<?x?x192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x192xf32>) -> tensor<?x?x192xf32>
  %y = linalg.generic {indexing_maps = [#in3, #w3, #out3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x256xf32>, tensor<256x192xf32>) outs(%f : tensor<?x?x192xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x192xf32>
  return %y : tensor<?x?x192xf32>
}

// bf16 [M, 512] x transposed bf16 [128, 512]: cp.async for both operands,
// sixteen reduction steps.
func.func @project_bf16_t(%x: tensor<?x512xbf16>, %w: tensor<128x512xbf16>) -> tensor<?x128xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x512xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %y = linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x512xbf16>, tensor<128x512xbf16>) outs(%f : tensor<?x128xf32>) {
  ^bb0(%a: bf16, %bw: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %bw : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// f32 [M, 128] x bf16 [128, 80]: A through registers, B by cp.async; the
// second 64-column tile is 16 columns wide (clamped reads, guarded stores).
func.func @project_mixed(%x: tensor<?x128xf32>, %w: tensor<128x80xbf16>) -> tensor<?x80xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x128xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x80xf32>) -> tensor<?x80xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x128xf32>, tensor<128x80xbf16>) outs(%f : tensor<?x80xf32>) {
  ^bb0(%a: f32, %bw: bf16, %acc: f32):
    %b32 = arith.extf %bw : bf16 to f32
    %m = arith.mulf %a, %b32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x80xf32>
  return %y : tensor<?x80xf32>
}

// bf16 [M, 64] x transposed f32 [256, 64]: A by cp.async, B through
// registers; two reduction steps (fewer than the pipeline's depth).
func.func @project_mixed_t(%x: tensor<?x64xbf16>, %w: tensor<256x64xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x64xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %y = linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xbf16>, tensor<256x64xf32>) outs(%f : tensor<?x256xf32>) {
  ^bb0(%a: bf16, %bw: f32, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %m = arith.mulf %a32, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// 0.5 + [M, 32] x [32, 512] as a linalg.matmul: one reduction step, four
// 128-column tiles, accumulators starting at the filled 0.5.
func.func @matmul_k32(%x: tensor<?x32xf32>, %w: tensor<32x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x32xf32>
  %half = arith.constant 0.5 : f32
  %e = tensor.empty(%rows) : tensor<?x512xf32>
  %f = linalg.fill ins(%half : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x32xf32>, tensor<32x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}

// Reductions that are no multiple of the 32 a pipeline step takes: bf16
// [M, 80] x f32 [80, 256] (MLA's kv-down input gradient; A's chunks past 80
// by zero-filling cp.async, B's rows past 80 selected to zeros) and f32
// [M, 40] x transposed bf16 [96, 40] (A through registers, B's n-major
// chunks past 40 zero-filled; the second step holds 8 of its 32).
func.func @project_k80(%x: tensor<?x80xbf16>, %w: tensor<80x256xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x80xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x80xbf16>, tensor<80x256xf32>) outs(%f : tensor<?x256xf32>) {
  ^bb0(%a: bf16, %bw: f32, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %m = arith.mulf %a32, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

func.func @project_k40_t(%x: tensor<?x40xf32>, %w: tensor<96x40xbf16>) -> tensor<?x96xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x40xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x96xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x96xf32>) -> tensor<?x96xf32>
  %y = linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x40xf32>, tensor<96x40xbf16>) outs(%f : tensor<?x96xf32>) {
  ^bb0(%a: f32, %bw: bf16, %acc: f32):
    %b32 = arith.extf %bw : bf16 to f32
    %m = arith.mulf %a, %b32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// ((x / 3) W1) W2 with W1 [256, 64] and W2 [64, 256] (a low-rank gate's
// shape): neither x / 3 nor the hidden product is exact in bf16, so both
// GEMMs round their A operand.
func.func @rounded_chain(%x: tensor<?x256xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x256xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x256xf32>
  %zero = arith.constant 0.0 : f32
  %third = arith.constant 0.333333343 : f32
  %ex = tensor.empty(%rows) : tensor<?x256xf32>
  %xs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x256xf32>) outs(%ex : tensor<?x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %third : f32
    linalg.yield %m : f32
  } -> tensor<?x256xf32>
  %eh = tensor.empty(%rows) : tensor<?x64xf32>
  %fh = linalg.fill ins(%zero : f32) outs(%eh : tensor<?x64xf32>) -> tensor<?x64xf32>
  %h = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xs, %w1 : tensor<?x256xf32>, tensor<256x64xf32>) outs(%fh : tensor<?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %fy = linalg.fill ins(%zero : f32) outs(%ex : tensor<?x256xf32>) -> tensor<?x256xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %w2 : tensor<?x64xf32>, tensor<64x256xf32>) outs(%fy : tensor<?x256xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// Weight gradients, as the training step's reverse mode builds them: the
// sum over the rows of an input times an output gradient, [rows..., m] x
// [rows..., n] -> [m, n], the reduction loops first. They become row-split
// GEMMs: A read transposed, the rows split over blocks (zero-filled past a
// split's end), the splits' partials added in order by a second kernel.
#xr3 = affine_map<(b, t, m, n) -> (b, t, m)>
#yr3 = affine_map<(b, t, m, n) -> (b, t, n)>
#g3 = affine_map<(b, t, m, n) -> (m, n)>
#xr = affine_map<(r, m, n) -> (r, m)>
#yr = affine_map<(r, m, n) -> (r, n)>
#g = affine_map<(r, m, n) -> (m, n)>
#gt = affine_map<(r, m, n) -> (n, m)>

// f32 [B, T, 256] x f32 [B, T, 80] -> [256, 80]: both through registers, two
// 128-row tiles, 64-column tiles (the second 16 wide).
func.func @wgrad_f32(%x: tensor<?x?x256xf32>, %dy: tensor<?x?x80xf32>) -> tensor<256x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x80xf32>) -> tensor<256x80xf32>
  %g = linalg.generic {indexing_maps = [#xr3, #yr3, #g3], iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<?x?x256xf32>, tensor<?x?x80xf32>) outs(%f : tensor<256x80xf32>) {
  ^bb0(%a: f32, %d: f32, %acc: f32):
    %one = arith.constant 1.0 : f32
    %a1 = arith.mulf %one, %a : f32
    %m = arith.mulf %d, %a1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<256x80xf32>
  return %g : tensor<256x80xf32>
}

// 0.5 + bf16 [M, 64]^T bf16 [M, 128]: both by cp.async (zero-filled past
// the split), one 128-row tile of which 64 rows are stored.
func.func @wgrad_bf16(%x: tensor<?x64xbf16>, %dy: tensor<?x128xbf16>) -> tensor<64x128xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%half : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %g = linalg.generic {indexing_maps = [#xr, #yr, #g], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<?x64xbf16>, tensor<?x128xbf16>) outs(%f : tensor<64x128xf32>) {
  ^bb0(%a: bf16, %d: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %d32 = arith.extf %d : bf16 to f32
    %m = arith.mulf %a32, %d32 : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64x128xf32>
  return %g : tensor<64x128xf32>
}

// The transposed form: f32 [M, 128] and bf16 [M, 192] -> [192, 128] (the
// output's rows follow the second operand): A through registers, B by
// cp.async.
func.func @wgrad_mixed_t(%x: tensor<?x128xf32>, %dy: tensor<?x192xbf16>) -> tensor<192x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<192x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<192x128xf32>) -> tensor<192x128xf32>
  %g = linalg.generic {indexing_maps = [#xr, #yr, #gt], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<?x128xf32>, tensor<?x192xbf16>) outs(%f : tensor<192x128xf32>) {
  ^bb0(%a: f32, %d: bf16, %acc: f32):
    %d32 = arith.extf %d : bf16 to f32
    %m = arith.mulf %a, %d32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<192x128xf32>
  return %g : tensor<192x128xf32>
}

// A projection's input gradient as the reverse mode builds it: dy [B, T,
// 256] times the weight [128, 256] read transposed, the reduction loop
// before the output's column loop, the weight times 1.
#gx3 = affine_map<(b, t, n, k) -> (b, t, k)>
#gw3 = affine_map<(b, t, n, k) -> (k, n)>
#gy3 = affine_map<(b, t, n, k) -> (b, t, n)>
func.func @input_grad(%dy: tensor<?x?x256xf32>, %w: tensor<128x256xf32>) -> tensor<?x?x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %dy, %c0 : tensor<?x?x256xf32>
  %t = tensor.dim %dy, %c1 : tensor<?x?x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b, %t) : tensor<?x?x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  %g = linalg.generic {indexing_maps = [#gy3, #gw3, #gx3], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%dy, %w : tensor<?x?x256xf32>, tensor<128x256xf32>) outs(%f : tensor<?x?x128xf32>) {
  ^bb0(%d: f32, %wv: f32, %out: f32):
    %one = arith.constant 1.000000e+00 : f32
    %w1 = arith.mulf %one, %wv : f32
    %m = arith.mulf %d, %w1 : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x128xf32>
  return %g : tensor<?x?x128xf32>
}
