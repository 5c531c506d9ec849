func.func @mla_layer(%x: tensor<?x?x64xf32>, %wq: tensor<64x48xf32>, %wkvd: tensor<64x40xf32>,
    %kvn: tensor<32xf32>, %wkvu: tensor<32x64xf32>, %wg: tensor<64x32xf32>,
    %wo: tensor<32x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 16 : i64}
      : (tensor<?x?x64xf32>, tensor<64x48xf32>, tensor<64x40xf32>, tensor<32xf32>,
         tensor<32x64xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
