func.func @mla_layer_q_lora(%x: tensor<2x5x64xf32>, %wqd: tensor<64x24xf32>, %qn: tensor<24xf32>,
    %wqu: tensor<24x64xf32>, %wkvd: tensor<64x32xf32>, %kvn: tensor<32xf32>,
    %wkvu: tensor<32x96xf32>, %wo: tensor<32x64xf32>) -> tensor<2x5x64xf32> {
  %y = moe.mla_layer %x q_lora(%wqd, %qn, %wqu) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 4 : i64, nope_head_dim = 16 : i64, rope_head_dim = 0 : i64,
       v_head_dim = 8 : i64}
      : (tensor<2x5x64xf32>, tensor<64x24xf32>, tensor<24xf32>, tensor<24x64xf32>,
         tensor<64x32xf32>, tensor<32xf32>, tensor<32x96xf32>, tensor<32x64xf32>)
      -> tensor<2x5x64xf32>
  return %y : tensor<2x5x64xf32>
}
