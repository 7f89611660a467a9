// gdn-lower-state-summaries: chunkwise CP's state summaries (and their
// gradients) become delta-rule runs over the leaving sequence's rows. The
// structure first, then the function: the lowered programs compute what
// the interpreter's summaries compute, forward and backward, on a core
// whose states cross ranks (slow decay, a sequence longer than a shard),
// and a mutation of either run is caught.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_core_bf16_slow_decay.mlir -o %t/cw.mlir
// RUN: gdn-opt --gdn-lower-state-summaries %t/cw.mlir | FileCheck %s
// RUN: gdn-opt --gdn-lower-state-summaries %t/cw.mlir -o %t/lowered.mlir

// CHECK-LABEL: func.func @core
// CHECK-NOT: gdn_comm.state_summary
// CHECK: %[[SP:.*]] = gdn_comm.summary_packing %[[P:.*]] {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = ?, tokens = ?, padded> -> !gdn.packing<seqs = 2, tokens = ?, padded>
// CHECK: %[[HS:.*]], %[[HM:.*]] = gdn_comm.summary_initial_states %[[P]] initial_state(%{{.*}}) {group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>)
// CHECK: %{{.*}}, %[[FS:.*]] = gdn.delta_rule %[[K:.*]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SP]] initial_state(%[[HS]])
// CHECK: %[[ZERO:.*]] = tensor.splat
// CHECK: %{{.*}}, %[[FM:.*]] = gdn.delta_rule %[[K]], %[[K]], %[[ZERO]], %{{.*}}, %{{.*}}, %[[SP]] initial_state(%[[HM]])
// CHECK: %[[M:.*]] = tensor.extract_slice %[[FM]][1, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<2x4x4x4xf32> to tensor<4x4x4xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[FS]][1, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<2x4x4x4xf32> to tensor<4x4x4xf32>
// CHECK: gdn_comm.state_exchange %[[M]], %[[S]]

// The same function as the interpreter's summary, on edge lengths and on a
// sequence across three shards (the only case where M S_in is not zero).
// RUN: gdn-run --compare %t/lowered.mlir %t/cw.mlir --seqlens=0,1,63,64,65,7,200 --slots=8,8,64,72,72,8,208 --rtol=1e-5 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/lowered.mlir %t/cw.mlir --seqlens=5,400,3,0,70 --slots=8,400,8,8,72 --rtol=1e-5 | FileCheck %s --check-prefix=SAME
// SAME: result #0: {{.*}} ok
// SAME: result #1: {{.*}} ok

// A transition run from the wrong initial states, or over the values
// instead of zeros, changes the result.
// RUN: sed 's/initial_state(%%transition)/initial_state(%%partial)/' %t/lowered.mlir > %t/wrong-start.mlir
// RUN: not gdn-run --compare %t/wrong-start.mlir %t/cw.mlir --seqlens=5,400,3,0,70 --slots=8,400,8,8,72 --rtol=1e-5 | FileCheck %s --check-prefix=WRONG
// RUN: sed -E 's/(gdn.delta_rule %%[0-9]+, %%[0-9]+, )%%splat/\1%%v/' %t/lowered.mlir > %t/wrong-values.mlir
// RUN: not gdn-run --compare %t/wrong-values.mlir %t/cw.mlir --seqlens=5,400,3,0,70 --slots=8,400,8,8,72 --rtol=1e-5 | FileCheck %s --check-prefix=WRONG
// WRONG: FAIL

// The backward: the generated backward's summary gradient takes its
// cotangents from the reverse state chain, so it becomes one gradient run
// (zero output cotangents, G as the final state's cotangent) from the
// state the leaving sequence has at the shard's start (S_in, the forward
// chain recomputed), and the initial states' cotangent is scattered back to
// the leaving sequence. So lowered, the generated backward gives the P = 1
// program's gradients within bf16 rounding; started from another state
// than S_in, it does not: over 15 rows of K = 4 the transition still
// carries weight (over the 124 rows of the first packing it has all but
// vanished).
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward %S/Inputs/cp_core_bf16_slow_decay.mlir -o %t/train.mlir
// RUN: gdn-opt --gdn-lower-state-summaries %t/train.mlir -o %t/train-lowered.mlir
// RUN: FileCheck %s --check-prefix=GRAD < %t/train-lowered.mlir
// RUN: gdn-run --compare %t/train-lowered.mlir %S/Inputs/cp_core_bf16_slow_decay.mlir --entry=core --run-backward --seqlens=5,400,3,0,70 --slots=8,400,8,8,72 --rtol=5e-3 | FileCheck %s --check-prefix=TRAIN
// RUN: gdn-run --compare %t/train-lowered.mlir %S/Inputs/cp_core_bf16_slow_decay.mlir --entry=core --run-backward --seqlens=2,40,1,0,5 --slots=4,40,4,4,8 --rtol=5e-3 | FileCheck %s --check-prefix=TRAIN
// TRAIN-COUNT-7: gradient #{{[0-6]}}: {{.*}} ok
// RUN: sed -E 's/incoming\(%%[0-9a-z_]+\)/incoming(%%partial_state_grad)/' %t/train-lowered.mlir > %t/train-wrong.mlir
// RUN: not gdn-run --compare %t/train-wrong.mlir %S/Inputs/cp_core_bf16_slow_decay.mlir --entry=core --run-backward --seqlens=2,40,1,0,5 --slots=4,40,4,4,8 --rtol=5e-3 | FileCheck %s --check-prefix=WRONG

// GRAD-LABEL: func.func @core_backward
// GRAD-NOT: gdn_comm.state_summary_grad
// GRAD: %[[DM:.*]], %[[DS:.*]] = gdn_comm.reverse_state_exchange %{{.*}}, %[[M:.*]], %[[S:.*]] {group
// GRAD: %[[SIN:.*]] = gdn_comm.state_exchange %[[M]], %[[S]] {group = #gdn_comm.group<cp, 4>}
// GRAD: %[[PARTIAL:.*]], %{{.*}} = gdn_comm.summary_initial_states %{{.*}} initial_state(%{{.*}}) incoming(%[[SIN]])
// GRAD: %[[DHT:.*]] = tensor.insert_slice %[[DS]] into %{{.*}}[1, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<4x4x4xf32> into tensor<2x4x4x4xf32>
// GRAD: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DH0:.*]] = gdn.delta_rule_grad {{.*}} initial_state(%[[PARTIAL]]) final_state_grad(%[[DHT]])
// GRAD-NOT: gdn.delta_rule_grad {{.*}} final_state_grad
// GRAD: gdn_comm.summary_initial_states_grad %[[DH0]]

// Cotangents from elsewhere (here: the function's arguments) take both
// runs' gradients; the lowered function computes the op's gradients.
// RUN: gdn-opt --gdn-lower-state-summaries %S/Inputs/state_summary_grad_bf16.mlir | FileCheck %s --check-prefix=TWO
// RUN: gdn-opt --gdn-lower-state-summaries %S/Inputs/state_summary_grad_bf16.mlir -o %t/two-runs.mlir
// RUN: gdn-run --compare %t/two-runs.mlir %S/Inputs/state_summary_grad_bf16.mlir --seqlens=5,400,3,0,70 --slots=8,400,8,8,72 --rtol=1e-2 | FileCheck %s --check-prefix=TWO-SAME
// TWO-COUNT-2: gdn.delta_rule_grad
// TWO: arith.addf
// TWO-SAME-COUNT-5: result #{{[0-4]}}: {{.*}} ok

// bf16 summaries over f64 activations (a reference program) stay for the
// interpreter.
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_core_slow_decay.mlir | gdn-opt --gdn-lower-state-summaries | FileCheck %s --check-prefix=F64
// F64: gdn_comm.state_summary
// F64-NOT: gdn_comm.summary_packing
