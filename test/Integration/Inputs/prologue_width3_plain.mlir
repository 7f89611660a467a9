// GPU case: the fused prologue at conv width 3 with nothing optional (no
// bias, no conv states, no padding), bf16, the small GQA config of
// prologue_final_state (2 key heads of 64, 4 value heads of 32, 384
// channels). The delta rule is only there so that gdn-fuse sees the whole
// prologue dataflow (--canonicalize drops it once fused).
func.func @prologue_width3_plain(%mixed: tensor<?x384xbf16>, %conv: tensor<384x3xbf16>,
                                 %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                                 %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                                 %cu: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 3 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x3xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x384xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x384xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x4x32xbf16>, tensor<?x4x64x32xf32>)
  return %qn, %kn, %v, %g, %beta
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>
}
