// The backward of a P-rank program (generated after gdn-context-parallel or
// gdn-sequence-parallel) is one too: every collective becomes its
// transpose, the cotangents of results every rank holds whole enter
// through gdn_comm.replicated_to_partial, the gradients of arguments every
// rank holds whole leave through gdn_comm.all_reduce, slices of them return
// through gdn_comm.local_unshard. test/Interpreter/Gradients checks the
// numbers against P = 1.
// RUN: gdn-opt --gdn-context-parallel="ranks=4" --gdn-generate-backward %S/Inputs/cp_core.mlir | FileCheck %s --check-prefix=HEADWISE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward %S/Inputs/cp_core.mlir | FileCheck %s --check-prefix=CHUNKWISE
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-generate-backward="functions=qwen3_5" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=SP
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" --gdn-generate-backward %S/Inputs/cp_core.mlir | FileCheck %s --check-prefix=ZIGZAG

// HEADWISE-LABEL: func.func @core_backward(
// HEADWISE-COUNT-2: gdn_comm.replicated_to_partial %{{.*}} {group = #gdn_comm.group<cp, 4>}
// HEADWISE:         gdn_comm.reduce_scatter %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<cp, 4>}
// HEADWISE:         gdn_comm.all_to_all %{{.*}} {concat_dim = 0 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64} : tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x4x2xf64>
// HEADWISE:         gdn.delta_rule_grad
// HEADWISE:         gdn.causal_conv1d_grad
// HEADWISE:         gdn_comm.all_to_all %{{.*}} {concat_dim = 1 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64} : tensor<?x4xf64> -> tensor<?x16xf64, #gdn.seq<contiguous, ranks = 4>>
// HEADWISE:         gdn_comm.local_unshard %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<cp, 4>} : tensor<16x4xf64> -> tensor<64x4xf64>
// HEADWISE-NEXT:    gdn.regroup_sections %{{.*}} {dim = 0 : i64, groups = 4 : i64, inverse = true, section_sizes = array<i64: 16, 16, 32>}
// HEADWISE:         gdn_comm.all_to_all %{{.*}} {concat_dim = 1 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64} : tensor<?x16xf64> -> tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>
// HEADWISE-NEXT:    gdn.regroup_sections %{{.*}} {dim = 1 : i64, groups = 4 : i64, inverse = true, section_sizes = array<i64: 16, 16, 32>}
// HEADWISE-COUNT-6: gdn_comm.all_reduce %{{.*}} {group = #gdn_comm.group<cp, 4>}
// HEADWISE:         return

// CHUNKWISE-LABEL: func.func @core_forward(
// CHUNKWISE:         return %{{.*}} : {{.*}}, tensor<3x64xf64>, tensor<16x2x2xf64>, tensor<16x2x2xf64>, tensor<16x2x2xf64>
// CHUNKWISE-LABEL: func.func @core_backward(
// CHUNKWISE-COUNT-2: gdn_comm.replicated_to_partial
// CHUNKWISE:         gdn_comm.reduce_sequence_states
// CHUNKWISE:         gdn_comm.reduce_sequence_states
// CHUNKWISE:         gdn.delta_rule_grad
// CHUNKWISE:         gdn_comm.continue_state_grad %{{.*}} : (tensor<?x16x2x2xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>) -> (tensor<16x2x2xf64>, tensor<?x16x2x2xf64>)
// CHUNKWISE:         gdn_comm.reverse_state_exchange %{{.*}}, %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>}
// CHUNKWISE:         gdn_comm.state_summary_grad %{{.*}} initial_state(%{{.*}}) {group = #gdn_comm.group<cp, 4>}
// CHUNKWISE:         gdn.causal_conv1d_grad
// CHUNKWISE:         gdn_comm.continue_conv_state_grad
// CHUNKWISE:         gdn_comm.return_halo %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>} : tensor<3x64xf64>, tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>
// CHUNKWISE:         gdn_comm.all_reduce
// CHUNKWISE:         return

// Under SP, the all-gather of the hidden states returns through a
// reduce-scatter, out_proj's reduce-scatter through an all-gather.
// SP-LABEL: func.func @qwen3_5_backward(
// SP:         gdn_comm.all_gather %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>} : tensor<?x8xf64, #gdn.seq<contiguous, ranks = 2>> -> tensor<?x8xf64>
// SP:         gdn.linear_grad
// SP:         gdn_comm.reduce_scatter %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>} : tensor<?x8xf64> -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 2>>
// SP:         gdn_comm.all_reduce %{{.*}} {group = #gdn_comm.group<sp, 2>}
// SP:         return

// Zigzag shards: the conversions to contiguous shards go back.
// ZIGZAG-LABEL: func.func @core_backward(
// ZIGZAG:         gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<?x16x2xf64, #gdn.seq<zigzag, ranks = 4>>, {{.*}}) -> tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 4>>
// ZIGZAG:         gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>, {{.*}}) -> tensor<?x64xf64, #gdn.seq<zigzag, ranks = 4>>
