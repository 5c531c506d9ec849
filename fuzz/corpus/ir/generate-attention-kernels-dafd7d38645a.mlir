func.func @bf16(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>,
                %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2x128xbf16>)
    -> tensor<?x?x2x128xbf16> {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>,
         tensor<?x?x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x128xbf16>
}
