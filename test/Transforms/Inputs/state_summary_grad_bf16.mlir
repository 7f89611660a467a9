// A chunkwise-CP state summary's gradient on its own, with cotangents that
// come from the function's arguments rather than a reverse state chain (so
// gdn-lower-state-summaries takes both runs' gradients): 4 ranks, bf16
// keys and values, fp32 gates and states, slow decay, padding, initial
// states. The initial states' cotangent is summed over the ranks (each
// rank holds the leaving sequence's share).
func.func @summary_grad(%dm: tensor<4x4x4xf32>, %ds: tensor<4x4x4xf32>,
                        %k: tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
                        %v: tensor<?x4x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
                        %a: tensor<?x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
                        %b: tensor<?x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
                        %dt_bias: tensor<4xf32>, %s0: tensor<?x4x4x4xf32>,
                        %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
        tensor<?x4x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
        tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
        tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x4x4xf32>) {
  %a_log = arith.constant dense<[-7.0, -5.5, -4.0, -2.5]> : tensor<4xf32>
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %kn = gdn.l2norm %k : tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
         tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>)
  %dk, %dv, %dg, %dbeta, %dh0 = gdn_comm.state_summary_grad %dm, %ds, %kn, %v, %g, %beta, %p
      initial_state(%s0) {group = #gdn_comm.group<cp, 4>}
      : (tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
         tensor<?x4x4xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
         tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<?x4x4x4xf32>)
      -> (tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
          tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
          tensor<?x4x4x4xf32>)
  %total = gdn_comm.all_reduce %dh0 {group = #gdn_comm.group<cp, 4>} : tensor<?x4x4x4xf32>
  return %dk, %dv, %dg, %dbeta, %total
      : tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x4xbf16, #gdn.seq<contiguous, ranks = 4>>,
        tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
        tensor<?x4x4x4xf32>
}
