// gdn-translate --gdn-to-cuda on the ops a whole-function entry point runs as calls: gdn.linear and every gdn_comm collective as its gdnrt call (group role and ranks from #gdn_comm.group, the IR's dims and chain, staging from the function workspace sized by gdnrt's queries), gdn.split_qkvz and gdn.regroup_sections as strided device copies; result shapes, run-time shape conditions and roles.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s

// A projection's result shape: x's tokens, the static trailing sizes of y.
// CHECK-LABEL: // @linear: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: static const gdn_role_t gdn_linear_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: static size_t gdn_linear_layout(
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: extern "C" int gdn_linear_result_shapes(
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 4;
// CHECK-NEXT:   results[0].shape[2] = 64;
// A function of gdnrt calls only needs the context, not its stream.
// CHECK: extern "C" int gdn_linear(const gdn_tensor_t *args, gdn_tensor_t *results, void *workspace,
// CHECK-NEXT:     gdnrt_context_t *context) {
// CHECK-NOT: cudaStream_t
// CHECK:   if (!results || !context || (bytes && !workspace))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::checkTensor(results[0], GDN_BF16, {args[0].shape[0], 4, 64}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   // gdn.linear at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear(context, &args[0], &args[1], &results[0]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @linear(%x: tensor<?x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<?x4x64xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x4x64xbf16>
  return %y : tensor<?x4x64xbf16>
}

// An f32 projection output from bf16 operands (gdn-expand-layer's
// f32-projections): the same call, checked for an f32 result.
// CHECK-LABEL: // @linear_f32_output: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: static const gdn_dtype_t gdn_linear_f32_output_result_dtypes[] = {GDN_F32};
// CHECK:   if (!gdn::checkTensor(results[0], GDN_F32, {args[0].shape[0], 96}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   // gdn.linear at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear(context, &args[0], &args[1], &results[0]))
func.func @linear_f32_output(%x: tensor<?x64xbf16>, %w: tensor<96x64xbf16>) -> tensor<?x96xf32> {
  %y = gdn.linear %x, %w : (tensor<?x64xbf16>, tensor<96x64xbf16>) -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// The f32 split of such an output: the same copies in 4-byte elements
// (every width and pitch twice the bf16 split's below).
// CHECK-LABEL: // @split_f32: 0 kernel(s)
// CHECK:         {static_cast<char *>(results[0].data) + 0, 16, 112, static_cast<const char *>(args[0].data) + 0, 80, 160, 16, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:    {static_cast<char *>(results[0].data) + 32, 16, 112, static_cast<const char *>(args[0].data) + 16, 80, 160, 16, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:    {static_cast<char *>(results[0].data) + 64, 24, 112, static_cast<const char *>(args[0].data) + 32, 80, 160, 24, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:    {static_cast<char *>(results[1].data) + 0, 24, 48, static_cast<const char *>(args[0].data) + 56, 80, 160, 24, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:    {static_cast<char *>(results[2].data) + 0, 6, 12, static_cast<const char *>(args[1].data) + 0, 12, 24, 6, 2, static_cast<size_t>(args[1].shape[0])},
func.func @split_f32(%qkvz: tensor<?x40xf32>, %ba: tensor<?x12xbf16>)
    -> (tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>) {
  %m, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x40xf32>, tensor<?x12xbf16>)
      -> (tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>)
  return %m, %z, %b, %a : tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>
}

// SP around a projection: the gather multiplies the shard's tokens by the
// group's ranks, the scatter divides them back (the factors cancel, so no
// divisibility condition is left); the staging of both collectives is laid
// out after the temporaries, sized by gdnrt from the inputs' shapes, and a
// call whose query said 0 bytes gets a null pointer. The SP communicator's
// size is checked before anything is enqueued.
// CHECK-LABEL: // @sequence_parallel: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_sequence_parallel_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK-NEXT: static const gdn_dtype_t gdn_sequence_parallel_result_dtypes[] = {GDN_BF16};
// CHECK-NEXT: static const int32_t gdn_sequence_parallel_result_ranks[] = {2};
// CHECK-NEXT: static const gdn_role_t gdn_sequence_parallel_result_roles[] = {GDN_ROLE_TOKENS};
// CHECK: static size_t gdn_sequence_parallel_layout(const gdn_tensor_t *args, size_t *offsets) {
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes; // temp0
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>((args[0].shape[0] * 2)) * static_cast<size_t>(64));
// CHECK-NEXT:   offsets[1] = bytes; // temp1
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>((args[0].shape[0] * 2)) * static_cast<size_t>(64));
// CHECK-NEXT:   offsets[2] = bytes; // staging of gdn_comm.all_gather at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn_tensor_t tensor0 = gdn::shapeOnlyTensor(GDN_BF16, {args[0].shape[0], 64});
// CHECK-NEXT:     bytes += gdn::alignWorkspace(gdnrt_all_gather_workspace_bytes(&tensor0, 2, 0));
// CHECK-NEXT:   }
// CHECK-NEXT:   offsets[3] = bytes; // staging of gdn_comm.reduce_scatter at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn_tensor_t tensor0 = gdn::shapeOnlyTensor(GDN_BF16, {(args[0].shape[0] * 2), 64});
// CHECK-NEXT:     bytes += gdn::alignWorkspace(gdnrt_reduce_scatter_workspace_bytes(&tensor0, 2, 0));
// CHECK-NEXT:   }
// CHECK-NEXT:   offsets[4] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: static int gdn_sequence_parallel_check_args(
// CHECK-NOT: %
// CHECK:   return GDN_SUCCESS;
// CHECK: extern "C" size_t gdn_sequence_parallel_workspace_bytes(const gdn_tensor_t *args) {
// CHECK-NEXT:   size_t offsets[5];
// CHECK: extern "C" int gdn_sequence_parallel_result_shapes(
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK: extern "C" int gdn_sequence_parallel(
// CHECK:   char *base = static_cast<char *>(workspace);
// CHECK-NEXT:   gdn_tensor_t temp0 = {base + offsets[0], {(args[0].shape[0] * 2), 64}, 2, GDN_BF16};
// CHECK-NEXT:   gdn_tensor_t temp1 = {base + offsets[1], {(args[0].shape[0] * 2), 64}, 2, GDN_BF16};
// CHECK-NEXT:   void *staging0 = offsets[3] > offsets[2] ? base + offsets[2] : nullptr;
// CHECK-NEXT:   void *staging1 = offsets[4] > offsets[3] ? base + offsets[3] : nullptr;
// CHECK-NEXT:   if (!gdn::checkTensor(results[0], GDN_BF16, {args[0].shape[0], 64}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   {{\[\[}}maybe_unused{{\]\]}} int rank_sp = 0;
// CHECK-NEXT:   if (int error = gdnrt_group_rank(context, GDNRT_GROUP_SP, 2, &rank_sp))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // gdn_comm.all_gather at loc(
// CHECK-NEXT:   if (int error = gdnrt_all_gather(context, GDNRT_GROUP_SP, 2, &args[0], &temp0, 0, staging0))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // gdn.linear at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear(context, &temp0, &args[1], &temp1))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // gdn_comm.reduce_scatter at loc(
// CHECK-NEXT:   if (int error = gdnrt_reduce_scatter(context, GDNRT_GROUP_SP, 2, &temp1, &results[0], 0, staging1))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK: extern "C" int gdn_sequence_parallel_check(const gdn_tensor_t *args, const void *workspace,
// CHECK-NEXT:     gdnrt_context_t *context, char *message, size_t size) {
// CHECK:   if (!context || gdn_sequence_parallel_check_args(args))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (gdn_sequence_parallel_layout(args, offsets) && !workspace)
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   cudaStream_t stream = gdnrt_context_stream(context);
// A dead SP peer makes the wait fail after the communicator's timeout
// instead of hanging the synchronisation.
// CHECK-NEXT:   if (gdnrt_comm_t *comm = gdnrt_context_comm(context, GDNRT_GROUP_SP))
// CHECK-NEXT:     if (int error = gdnrt_comm_wait(comm, context))
// CHECK-NEXT:       return error;
// CHECK-NEXT:   if (cudaStreamSynchronize(stream) != cudaSuccess)
func.func @sequence_parallel(%x: tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 2>>,
                             %w: tensor<64x64xbf16>) -> tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 2>> {
  %all = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 2>> -> tensor<?x64xbf16>
  %y = gdn.linear %all, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x64xbf16> -> tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 2>>
  return %r : tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 2>>
}

// A gather along dim 1 (heads of per-sequence states): the token dim stays.
// CHECK-LABEL: // @gather_heads: 0 kernel(s)
// CHECK: const gdn_tensor_t tensor0 = gdn::shapeOnlyTensor(GDN_F32, {args[0].shape[0], 16, 8, 8});
// CHECK-NEXT: bytes += gdn::alignWorkspace(gdnrt_all_gather_workspace_bytes(&tensor0, 2, 1));
// CHECK: results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT: results[0].shape[1] = 32;
// CHECK: if (int error = gdnrt_group_rank(context, GDNRT_GROUP_CP, 2, &rank_cp))
// CHECK: if (int error = gdnrt_all_gather(context, GDNRT_GROUP_CP, 2, &args[0], &results[0], 1, staging0))
func.func @gather_heads(%s: tensor<?x16x8x8xf32>) -> tensor<?x32x8x8xf32> {
  %g = gdn_comm.all_gather %s {group = #gdn_comm.group<cp, 2>, dim = 1 : i64}
      : tensor<?x16x8x8xf32> -> tensor<?x32x8x8xf32>
  return %g : tensor<?x32x8x8xf32>
}

// Ulysses: tokens x 4 and channels / 4, then back; the factors cancel. A
// sharded activation is token-indexed even where no op says so.
// CHECK-LABEL: // @heads_and_back: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_heads_and_back_arg_roles[] = {GDN_ROLE_TOKENS};
// CHECK: static const gdn_role_t gdn_heads_and_back_result_roles[] = {GDN_ROLE_TOKENS};
// CHECK: bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>((args[0].shape[0] * 4)) * static_cast<size_t>(8));
// CHECK: bytes += gdn::alignWorkspace(gdnrt_all_to_all_workspace_bytes(&tensor0, 4, 1, 0));
// CHECK: const gdn_tensor_t tensor0 = gdn::shapeOnlyTensor(GDN_BF16, {(args[0].shape[0] * 4), 8});
// CHECK-NEXT: bytes += gdn::alignWorkspace(gdnrt_all_to_all_workspace_bytes(&tensor0, 4, 0, 1));
// CHECK: results[0].shape[0] = args[0].shape[0];
// CHECK: if (int error = gdnrt_all_to_all(context, GDNRT_GROUP_CP, 4, &args[0], &temp0, 1, 0, staging0))
// CHECK: if (int error = gdnrt_all_to_all(context, GDNRT_GROUP_CP, 4, &temp0, &results[0], 0, 1, staging1))
func.func @heads_and_back(%x: tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64}
      : tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x8xbf16>
  %t = gdn_comm.all_to_all %h {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64}
      : tensor<?x8xbf16> -> tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %t : tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// The halo has the op's row count and takes no staging; its rows are no
// rows of the pack.
// CHECK-LABEL: // @halo: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_halo_arg_roles[] = {GDN_ROLE_TOKENS};
// CHECK: static const gdn_role_t gdn_halo_result_roles[] = {GDN_ROLE_PARAMETER};
// CHECK: results[0].shape[0] = 3;
// CHECK-NEXT: results[0].shape[1] = 64;
// CHECK: if (int error = gdnrt_halo_exchange(context, GDNRT_GROUP_CP, 4, &args[0], &results[0]))
func.func @halo(%x: tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 4>>) -> tensor<3x64xbf16> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64}
      : tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<3x64xbf16>
  return %h : tensor<3x64xbf16>
}

// Both chains, each with staging sized for its chain.
// CHECK-LABEL: // @states: 0 kernel(s)
// CHECK: bytes += gdn::alignWorkspace(gdnrt_state_exchange_workspace_bytes(&tensor0, 4, GDNRT_CHAIN_ALL_GATHER));
// CHECK: bytes += gdn::alignWorkspace(gdnrt_state_exchange_workspace_bytes(&tensor0, 4, GDNRT_CHAIN_SCAN));
// CHECK: if (int error = gdnrt_state_exchange(context, GDNRT_GROUP_CP, 4, &args[0], &args[1], &results[0], GDNRT_CHAIN_ALL_GATHER, staging0))
// CHECK: if (int error = gdnrt_state_exchange(context, GDNRT_GROUP_CP, 4, &args[0], &args[1], &results[1], GDNRT_CHAIN_SCAN, staging1))
func.func @states(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xf32>)
    -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %a = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<all_gather>}
      : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %b = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<scan>}
      : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %a, %b : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

// Local shards move no data between ranks, so they take no staging; both
// groups' communicators are checked first.
// CHECK-LABEL: // @shards: 0 kernel(s)
// CHECK: static size_t gdn_shards_layout(
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes;
// CHECK: if (int error = gdnrt_group_rank(context, GDNRT_GROUP_SP, 2, &rank_sp))
// CHECK: if (int error = gdnrt_group_rank(context, GDNRT_GROUP_CP, 2, &rank_cp))
// CHECK: if (int error = gdnrt_local_shard(context, GDNRT_GROUP_SP, 2, &args[0], &results[0], 0))
// CHECK: if (int error = gdnrt_local_shard(context, GDNRT_GROUP_SP, 2, &args[0], &results[1], 1))
// CHECK: if (int error = gdnrt_local_shard(context, GDNRT_GROUP_CP, 2, &args[1], &results[2], 0))
func.func @shards(%w: tensor<64x32xbf16>, %a_log: tensor<8xf32>)
    -> (tensor<32x32xbf16>, tensor<64x16xbf16>, tensor<4xf32>) {
  %rows = gdn_comm.local_shard %w {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<64x32xbf16> -> tensor<32x32xbf16>
  %columns = gdn_comm.local_shard %w {group = #gdn_comm.group<sp, 2>, dim = 1 : i64}
      : tensor<64x32xbf16> -> tensor<64x16xbf16>
  %heads = gdn_comm.local_shard %a_log {group = #gdn_comm.group<cp, 2>, dim = 0 : i64}
      : tensor<8xf32> -> tensor<4xf32>
  return %rows, %columns, %heads : tensor<32x32xbf16>, tensor<64x16xbf16>, tensor<4xf32>
}

// gdn_comm.rank asks gdnrt where the IR does.
// CHECK-LABEL: // @rank: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: // gdn_comm.rank at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     int rank = 0;
// CHECK-NEXT:     if (int error = gdnrt_group_rank(context, GDNRT_GROUP_CP, 4, &rank))
// CHECK-NEXT:       return error;
// CHECK-NEXT:   }
// CHECK-NEXT:   // gdn.linear at loc(
func.func @rank(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %r = gdn_comm.rank {group = #gdn_comm.group<cp, 4>} : index
  %y = gdn.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// split_qkvz, 2 key heads of 4 with 3 value heads of 2 each (row groups of
// 40 bytes in qkvz, conv channels of 56 bytes): one strided copy per
// section over (tokens, key heads), all six in one gdn::stridedCopies
// launch (v's 12-byte parts need row and slice pitches of their own: they
// do not tile the conv channels). Both inputs must have the same token
// count, checked with the arguments.
// CHECK-LABEL: // @split: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_split_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS};
// CHECK: static int gdn_split_check_args(
// CHECK:   if (!(args[0].shape[0] == args[1].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK: extern "C" int gdn_split(
// CHECK:   cudaStream_t stream = gdnrt_context_stream(context);
// CHECK:   // gdn.split_qkvz at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn::StridedCopy copies[] = {
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 0, 8, 56, static_cast<const char *>(args[0].data) + 0, 40, 80, 8, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 16, 8, 56, static_cast<const char *>(args[0].data) + 8, 40, 80, 8, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 32, 12, 56, static_cast<const char *>(args[0].data) + 16, 40, 80, 12, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 0, 12, 24, static_cast<const char *>(args[0].data) + 28, 40, 80, 12, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[2].data) + 0, 6, 12, static_cast<const char *>(args[1].data) + 0, 12, 24, 6, 2, static_cast<size_t>(args[1].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[3].data) + 0, 6, 12, static_cast<const char *>(args[1].data) + 6, 12, 24, 6, 2, static_cast<size_t>(args[1].shape[0])},
// CHECK-NEXT:     };
// CHECK-NEXT:     if (gdn::stridedCopies(copies, 6, stream) != cudaSuccess)
// CHECK-NEXT:       return GDN_ERROR_CUDA;
// CHECK-NEXT:   }
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @split(%qkvz: tensor<?x40xbf16>, %ba: tensor<?x12xbf16>)
    -> (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>) {
  %m, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x40xbf16>, tensor<?x12xbf16>)
      -> (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>)
  return %m, %z, %b, %a : tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>
}

// Qwen3.5's conv sections for 2 groups: along the channels, one copy per
// section over (tokens, groups); the inverse along a weight's rows, one copy
// per section over the groups (a single slice).
// CHECK-LABEL: // @regroup: 0 kernel(s)
// CHECK:   // gdn.regroup_sections at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn::StridedCopy copies[] = {
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 0, 8192, 16384, static_cast<const char *>(args[0].data) + 0, 2048, 16384, 2048, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 2048, 8192, 16384, static_cast<const char *>(args[0].data) + 4096, 2048, 16384, 2048, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 4096, 8192, 16384, static_cast<const char *>(args[0].data) + 8192, 4096, 16384, 4096, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:     };
// CHECK-NEXT:     if (gdn::stridedCopies(copies, 3, stream) != cudaSuccess)
// CHECK-NEXT:       return GDN_ERROR_CUDA;
// CHECK-NEXT:   }
// CHECK-NEXT:   // gdn.regroup_sections at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn::StridedCopy copies[] = {
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 0, 8192, 65536, static_cast<const char *>(args[1].data) + 0, 32768, 65536, 8192, 2, 1},
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 16384, 8192, 65536, static_cast<const char *>(args[1].data) + 8192, 32768, 65536, 8192, 2, 1},
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 32768, 16384, 65536, static_cast<const char *>(args[1].data) + 16384, 32768, 65536, 16384, 2, 1},
// CHECK-NEXT:     };
// CHECK-NEXT:     if (gdn::stridedCopies(copies, 3, stream) != cudaSuccess)
// CHECK-NEXT:       return GDN_ERROR_CUDA;
// CHECK-NEXT:   }
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @regroup(%x: tensor<?x8192xbf16>, %w: tensor<8192x4xbf16>)
    -> (tensor<?x8192xbf16>, tensor<8192x4xbf16>) {
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2048, 2048, 4096>, groups = 2 : i64}
      : tensor<?x8192xbf16> -> tensor<?x8192xbf16>
  %v = gdn.regroup_sections %w {dim = 0 : i64, section_sizes = array<i64: 2048, 2048, 4096>, groups = 2 : i64, inverse = true}
      : tensor<8192x4xbf16> -> tensor<8192x4xbf16>
  return %y, %v : tensor<?x8192xbf16>, tensor<8192x4xbf16>
}

// What the calls need of dynamic sizes is checked with the arguments, so
// that _result_shapes and _workspace_bytes refuse them too and no call
// fails after others ran: a scatter and an all_to_all that divide a dynamic
// token count, and a gather from a dynamic shard into a static buffer.
// CHECK-LABEL: // @conditions: 0 kernel(s)
// CHECK: static int gdn_conditions_check_args(const gdn_tensor_t *args) {
// CHECK:   if (!gdn::checkTensor(args[2], GDN_BF16, {gdn::kAnySize, 8}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[0].shape[0] % 2 == 0))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[1].shape[0] % 4 == 0))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!((args[2].shape[0] * 2) == 64))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK: extern "C" int gdn_conditions_result_shapes(
// CHECK:   results[0].shape[0] = (args[0].shape[0] / 2);
// CHECK:   results[1].shape[0] = (args[1].shape[0] / 4);
// CHECK-NEXT:   results[1].shape[1] = 32;
// CHECK:   results[2].shape[0] = 64;
func.func @conditions(%y: tensor<?x8xbf16>, %o: tensor<?x8xbf16>, %x: tensor<?x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<?x32xbf16>, tensor<64x8xbf16>) {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x8xbf16> -> tensor<?x8xbf16>
  %t = gdn_comm.all_to_all %o {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64}
      : tensor<?x8xbf16> -> tensor<?x32xbf16>
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x8xbf16> -> tensor<64x8xbf16>
  return %r, %t, %g : tensor<?x8xbf16>, tensor<?x32xbf16>, tensor<64x8xbf16>
}
