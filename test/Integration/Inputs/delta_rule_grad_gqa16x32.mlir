// GPU case: the delta-rule backward at Qwen3-Next / Qwen3.5 size (16 key and
// 32 value heads of 128, bf16), with initial states and a final-state
// cotangent, as gdn-generate-backward emits it: gdn-fuse lowers it to the
// backward kernels (gdn_kernel.delta_rule_grad), checked against gdn-run's
// float64 sweep.
func.func @delta_rule_grad_gqa16x32(%do: tensor<?x32x128xbf16>, %q: tensor<?x16x128xbf16>,
                                    %k: tensor<?x16x128xbf16>, %v: tensor<?x32x128xbf16>,
                                    %g: tensor<?x32xf32>, %beta: tensor<?x32xf32>,
                                    %s0: tensor<?x32x128x128xf32>,
                                    %dht: tensor<?x32x128x128xf32>, %cu: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
        tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32x128x128xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      initial_state(%s0) final_state_grad(%dht)
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
