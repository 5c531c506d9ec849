#id = affine_map<(i) -> (i)>
#sum = affine_map<(i) -> ()>
func.func @max_reduction(%x: tensor<4xf32>) -> tensor<f32> attributes {test.reverse_mode} {
  %e = tensor.empty() : tensor<f32>
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
