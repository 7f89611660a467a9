// The ops a whole-function entry point runs as small kernels of the device
// header library (lib/Target/CUDA/DeviceCalls.cpp).
//
// Sums of cotangents that no projection GEMM folds (GradientSums.h) run as
// gdn::device::addTensors: a sum of arguments, of weight gradients, a term
// used twice, a gradient the function also returns; a partial sum used twice
// leaves the first addition folded and the second as a kernel.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s --check-prefix=SUMS
//
// Chunkwise CP's per-rank steps, zigzag conversions, fills and slices, in a
// whole layer and its backward (the small Qwen3-Next layer of the GPU suite,
// under chunkwise CP with zigzag shards over 2 ranks).
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=2 mode=chunkwise layout=zigzag" --gdn-pipeline \
// RUN:   %gdn_src_root/test/Integration/Inputs/layer_qwen3_next_small.mlir | gdn-translate --gdn-to-cuda \
// RUN:   | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=2 mode=chunkwise layout=zigzag" --gdn-generate-backward --gdn-pipeline \
// RUN:   %gdn_src_root/test/Integration/Inputs/layer_qwen3_next_small.mlir | gdn-translate --gdn-to-cuda \
// RUN:   | FileCheck %s --check-prefix=BACKWARD

// SUMS-LABEL: extern "C" int gdn_sum_of_arguments(
// SUMS: gdn::device::addTensors<__nv_bfloat16>(args[0].data, args[1].data, results[0].data, static_cast<int64_t>(results[0].shape[0]) * 8, stream)
// SUMS-LABEL: extern "C" int gdn_sum_of_weight_gradients(
// SUMS: gdn::device::addTensors<__nv_bfloat16>(temp0.data, temp1.data, results[2].data, static_cast<int64_t>(results[2].shape[0]) * 8, stream)
// SUMS-LABEL: extern "C" int gdn_doubled_gradient(
// SUMS: gdn::device::addTensors<__nv_bfloat16>(temp0.data, temp0.data, results[0].data,
// SUMS-LABEL: extern "C" int gdn_term_also_returned(
// SUMS: gdn::device::addTensors<__nv_bfloat16>(results[1].data, temp1.data, results[0].data,
// SUMS-LABEL: extern "C" int gdn_partial_sum_used_twice(
// SUMS: gdnrt_linear_grad(context, &args[0], &args[1], &args[2], &results[0], &temp0)
// SUMS: gdnrt_linear_grad_accumulate(context, &args[3], &args[1], &args[2], &results[0], &temp1)
// SUMS: summed in place by the gdn.linear_grad calls of its terms
// SUMS: gdn::device::addTensors<__nv_bfloat16>(results[0].data, temp2.data, results[1].data,

// The global packing (validated first), the shard's packing and the
// summary's, each with its offsets in its workspace slot.
// LAYER-LABEL: extern "C" int gdn_layer_qwen3_next_small(
// LAYER: gdn_packing_t p0 = {static_cast<const int32_t *>(args[1].data), nullptr, static_cast<int32_t>(args[1].shape[0] - 1), static_cast<int32_t>((args[0].shape[0] * 2)), base + offsets[0]};
// LAYER-NEXT: gdn_packing_t p1 = {gdn::device::DerivedPackingWorkspace::cuSeqlens(base + offsets[1]), nullptr, static_cast<int32_t>((args[1].shape[0] - 1)), static_cast<int32_t>(args[0].shape[0]), base + offsets[1]};
// LAYER-NEXT: gdn_packing_t p2 = {gdn::device::DerivedPackingWorkspace::cuSeqlens(base + offsets[2]), gdn::device::DerivedPackingWorkspace::cuPadded(base + offsets[2], 2), static_cast<int32_t>(2), static_cast<int32_t>(args[0].shape[0]), base + offsets[2]};
// The summary run's second sequence: rows of its states and transitions,
// viewed where they lie (SliceViews.h).
// LAYER: gdn_tensor_t view{{[0-9]+}} = {static_cast<char *>(temp{{[0-9]+}}.data) + 262144, {4, 128, 128}, 3, GDN_F32};
// LAYER-NEXT: gdn_tensor_t view{{[0-9]+}} = {static_cast<char *>(temp{{[0-9]+}}.data) + 262144, {4, 128, 128}, 3, GDN_F32};
// LAYER: {{\[\[}}maybe_unused{{\]\]}} int rank_cp = 0;
// LAYER-NEXT: if (int error = gdnrt_group_rank(context, GDNRT_GROUP_CP, 2, &rank_cp))
// LAYER: gdn::device::buildPackingMetadata({p0.cu_seqlens,
// LAYER: // gdn_comm.local_packing at
// LAYER-NEXT: gdn::device::buildLocalPacking({gdn::device::PackingView{p0.cu_seqlens, p0.cu_padded, p0.num_seqs, p0.buffer_tokens}, gdn::device::PackingWorkspace::carve(p0.workspace).status, rank_cp, 2,
// LAYER: // gdn.convert_layout at
// LAYER: gdnrt_all_gather(context, GDNRT_GROUP_CP, 2, &{{.*}}, &gathered, 0, gatherStaging)
// LAYER: gdn::device::selectZigzagRows(rows,
// LAYER: // gdn_comm.halo_exchange at
// LAYER: // gdn_comm.continue_conv_state at
// LAYER-NEXT: gdn::device::continueConvState<__nv_bfloat16>({
// LAYER-SAME: rank_cp, 2, static_cast<const __nv_bfloat16 *>(temp{{[0-9]+}}.data), nullptr, static_cast<__nv_bfloat16 *>(temp{{[0-9]+}}.data), 1024, 3}, stream)
// LAYER: // gdn_comm.summary_packing at
// LAYER-NEXT: gdn::device::buildSummaryPacking(
// LAYER: // gdn_comm.summary_initial_states at
// LAYER: step.incoming = nullptr;
// LAYER: gdn::device::summaryStates(step, stream)
// LAYER: _prologue(operands, outputs, &p1, stream)
// LAYER: _delta_rule(operands, outputs, &p2, scratch{{[0-9]+}}, stream)
// LAYER: // tensor.splat at
// LAYER-NEXT: cudaMemsetAsync(
// LAYER: _delta_rule(operands, outputs, &p2, scratch{{[0-9]+}}, stream)
// No copy for them.
// LAYER: // tensor.extract_slice at
// LAYER-NEXT: // [[STATES:view[0-9]+]]: rows of temp{{[0-9]+}}, read in place
// LAYER: // tensor.extract_slice at
// LAYER-NEXT: // [[TRANSITIONS:view[0-9]+]]: rows of temp{{[0-9]+}}, read in place
// LAYER: // gdn_comm.state_exchange at
// LAYER-NEXT: gdnrt_state_exchange(context, GDNRT_GROUP_CP, 2, &[[STATES]], &[[TRANSITIONS]],
// LAYER: // gdn_comm.continue_state at
// LAYER: gdn::device::continueState(step, stream)
// LAYER: _delta_rule(operands, outputs, &p1, scratch{{[0-9]+}}, stream)
// LAYER: // gdn_comm.gather_sequence_states at
// LAYER-NEXT: gdn::device::keepOwnedSequences<float>({
// LAYER-SAME: rank_cp, 2, 65536,
// LAYER-NEXT: return GDN_ERROR_CUDA;
// LAYER-NEXT: if (int error = gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2, &[[FINAL:temp[0-9]+]], &[[FINAL]], staging{{[0-9]+}}))

// The backward: the reverse chain, the state the leaving sequence starts
// from recomputed, one gradient run from it, the sums of the runs'
// gradients into the main delta rule's, the halo's cotangent returned, and
// the weights' gradients summed over the ranks.
// The summary run's final-state cotangent is zeros but for its second
// sequence, which the reverse exchange writes in place (InsertChains.h):
// the zeros are filled first, and the insertion copies nothing.
// BACKWARD-LABEL: extern "C" int gdn_layer_qwen3_next_small_backward(
// BACKWARD: gdn_tensor_t [[PARTIAL:view[0-9]+]] = {static_cast<char *>([[FINAL:temp[0-9]+]].data) + 262144, {4, 128, 128}, 3, GDN_F32};
// BACKWARD: cudaMemsetAsync([[FINAL]].data, 0,
// BACKWARD: // gdn_comm.continue_state_grad at
// BACKWARD: step.gradient = true;
// BACKWARD: // gdn_comm.reverse_state_exchange at
// BACKWARD-NEXT: gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, {{.*}}, &[[PARTIAL]], GDNRT_CHAIN_ALL_GATHER,
// BACKWARD: // gdn_comm.state_exchange at
// BACKWARD: // gdn_comm.summary_initial_states at
// BACKWARD: step.incoming = static_cast<const float *>(
// BACKWARD: // tensor.insert_slice at
// BACKWARD-NEXT: // [[PARTIAL]]: rows of [[FINAL]], written in place by its op
// BACKWARD-NOT: cudaMemcpyAsync
// BACKWARD: _delta_rule_grad(operands, outputs, &p2, scratch{{[0-9]+}}, stream)
// BACKWARD: // arith.addf at
// BACKWARD-NEXT: gdn::device::addTensors<__nv_bfloat16>(
// BACKWARD: _prologue_grad(operands, outputs, &p1, scratch{{[0-9]+}}, stream)
// BACKWARD: // gdn_comm.continue_conv_state_grad at
// BACKWARD-NEXT: gdn::device::continueConvStateGrad<__nv_bfloat16, __nv_bfloat16>({
// BACKWARD: // gdn_comm.return_halo at
// BACKWARD-NEXT: gdnrt_return_halo(context, GDNRT_GROUP_CP, 2,
// BACKWARD: gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2,

func.func @sum_of_arguments(%a: tensor<?x8xbf16>, %b: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %s = arith.addf %a, %b : tensor<?x8xbf16>
  return %s : tensor<?x8xbf16>
}

func.func @sum_of_weight_gradients(%dy: tensor<?x4xbf16>, %x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>,
                                   %dy2: tensor<?x4xbf16>) -> (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %dx2, %dw2 = gdn.linear_grad %dy2, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %s = arith.addf %dw, %dw2 : tensor<4x8xbf16>
  return %dx, %dx2, %s : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>
}

func.func @doubled_gradient(%dy: tensor<?x4xbf16>, %x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<4x8xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %s = arith.addf %dx, %dx : tensor<?x8xbf16>
  return %s, %dw : tensor<?x8xbf16>, tensor<4x8xbf16>
}

func.func @term_also_returned(%dy: tensor<?x4xbf16>, %x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>,
                              %dy2: tensor<?x4xbf16>) -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %dx2, %dw2 = gdn.linear_grad %dy2, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %s = arith.addf %dx, %dx2 : tensor<?x8xbf16>
  return %s, %dx : tensor<?x8xbf16>, tensor<?x8xbf16>
}

func.func @partial_sum_used_twice(%dy: tensor<?x4xbf16>, %x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>,
                                  %dy2: tensor<?x4xbf16>, %dy3: tensor<?x4xbf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %dx2, %dw2 = gdn.linear_grad %dy2, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %dx3, %dw3 = gdn.linear_grad %dy3, %x, %w
      : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  %s = arith.addf %dx, %dx2 : tensor<?x8xbf16>
  %t = arith.addf %s, %dx3 : tensor<?x8xbf16>
  return %s, %t : tensor<?x8xbf16>, tensor<?x8xbf16>
}
