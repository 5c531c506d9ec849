func.func @wide(%q: tensor<?x?x1x256xbf16>, %v: tensor<?x?x1x256xbf16>)
    -> tensor<?x?x1x256xbf16> {
  %o, %lse = moe.mla_attention %q, %q, %v
      : (tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>)
      -> (tensor<?x?x1x256xbf16>, tensor<?x1x?xf32>)
  return %o : tensor<?x?x1x256xbf16>
}
