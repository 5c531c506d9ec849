#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @combine_shared(%out: tensor<?x128xbf16>, %slot: tensor<?xi64>,
                          %w: tensor<?x4xf32>, %x: tensor<?x128xbf16>,
                          %sg: tensor<128x128xbf16>, %su: tensor<128x128xbf16>,
                          %sd: tensor<128x128xbf16>) -> tensor<?x128xbf16> {
  %y = moe.combine %out, %slot, %w
      : (tensor<?x128xbf16>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x128xbf16>
  %s = moe.glu_ffn %x, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x128xbf16>
  %init = tensor.empty(%n) : tensor<?x128xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%y, %s : tensor<?x128xbf16>, tensor<?x128xbf16>)
      outs(%init : tensor<?x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.addf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<?x128xbf16>
  return %sum : tensor<?x128xbf16>
}
