// GPU case: the delta-rule backward with the real models' head dims (2 key and 4
// value heads of 128, bf16, alignment padding), with initial states and a final-state
// cotangent, as gdn-generate-backward emits it: gdn-fuse lowers it to the
// backward kernels (gdn_kernel.delta_rule_grad), checked against gdn-run's
// float64 sweep.
func.func @delta_rule_grad_gqa2x4_padded(%do: tensor<?x4x128xbf16>, %q: tensor<?x2x128xbf16>,
                                    %k: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>,
                                    %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>,
                                    %s0: tensor<?x4x128x128xf32>,
                                    %dht: tensor<?x4x128x128xf32>, %cu: tensor<?xi32>,
                                    %cu_padded: tensor<?xi32>)
    -> (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x128x128xf32>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      initial_state(%s0) final_state_grad(%dht)
      : (tensor<?x4x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>,
         tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<?x4x128x128xf32>,
         tensor<?x4x128x128xf32>)
      -> (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>,
          tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x128x128xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x128x128xf32>
}
