// The delta-rule backward at Qwen3-Next / Qwen3.5 size as one kernel op:
// bf16 gradients of q, k, v (what autograd returns for bf16 inputs), with
// initial states and a final-state cotangent, long chains split for 132
// SMs, both sequential scans on wgmma (the sm_90a choice).
func.func @delta_rule_grad_gqa16x32(%do: tensor<?x32x128xbf16>, %q: tensor<?x16x128xbf16>,
                                    %k: tensor<?x16x128xbf16>, %v: tensor<?x32x128xbf16>,
                                    %g: tensor<?x32xf32>, %beta: tensor<?x32xf32>,
                                    %s0: tensor<?x32x128x128xf32>,
                                    %dht: tensor<?x32x128x128xf32>, %cu: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
        tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32x128x128xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = gdn_kernel.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      initial_state(%s0) final_state_grad(%dht)
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318441 : f64,
       split_target_blocks = 132 : i64, warmup_bits = 24 : i64,
       scan = "wgmma"}
      : (tensor<?x32x128xbf16>, tensor<?x16x128xbf16>, tensor<?x16x128xbf16>,
         tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x32x128x128xf32>,
         tensor<?x32x128x128xf32>)
      -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
          tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32x128x128xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0
      : tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
        tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32x128x128xf32>
}
