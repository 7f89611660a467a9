/*===- gdnrt.h - the GDN runtime: context, communicators, collectives -*- C -*-===*
 *
 * gdnrt is the small host library that generated code and its callers link
 * against. It owns nothing clever: NCCL does the communication, cuBLASLt the
 * projections. What it adds is the glue every framework rewrites by hand:
 *
 *  - a context (device, stream, cuBLASLt handle and workspace, the
 *    communicator bound to each process-group role of the IR);
 *  - communicators made from an NCCL unique id, wrapped around an existing
 *    ncclComm_t, or bootstrapped through a rendezvous (a shared file or a
 *    loopback TCP port) for standalone multi-process runs (`gdnrt-launch`),
 *    or ranks as threads of one process ("threads:<name>", the threads
 *    backend: device copies between the ranks' streams, for tests and for
 *    debugging a P-rank program on one GPU);
 *  - the collectives of the gdn_comm dialect with its exact semantics
 *    (gathers and scatters along any dimension, the conv halo, the
 *    chunkwise-CP state chain) and their transposes for the backward
 *    (all_reduce, local_unshard, replicated_to_partial, return_halo, the
 *    reverse state chain);
 *  - checked errors: every call returns a gdn_error_t, and
 *    gdnrt_last_error() says which call failed, on which rank, and why.
 *    NCCL runs non-blocking: a peer that never answers makes the call fail
 *    after the context's timeout and aborts the communicator, never hangs.
 *    The threads backend fails the same way, and a failed rank aborts its
 *    group: the other ranks' pending and later calls fail at once.
 *
 * Argument checks happen before any CUDA or NCCL call, so a bad call never
 * enqueues work and never touches its outputs.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GDN_RUNTIME_GDNRT_H
#define GDN_RUNTIME_GDNRT_H

#include "gdn/runtime/abi.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; these are its exports. */
#if defined(__GNUC__)
#define GDNRT_API __attribute__((visibility("default")))
#else
#define GDNRT_API
#endif

typedef struct gdnrt_context gdnrt_context_t;
typedef struct gdnrt_comm gdnrt_comm_t;

/** The process-group roles of `#gdn_comm.group<kind, ranks>`. */
typedef enum gdnrt_group {
  GDNRT_GROUP_SP = 0,
  GDNRT_GROUP_CP = 1,
  GDNRT_NUM_GROUPS = 2
} gdnrt_group_t;

/** How state_exchange chains the per-rank summaries (as the IR's chain). */
typedef enum gdnrt_chain {
  GDNRT_CHAIN_ALL_GATHER = 0,
  GDNRT_CHAIN_SCAN = 1
} gdnrt_chain_t;

/** Bytes of an NCCL unique id (NCCL_UNIQUE_ID_BYTES). */
#define GDNRT_UNIQUE_ID_BYTES 128

typedef struct gdnrt_unique_id {
  char bytes[GDNRT_UNIQUE_ID_BYTES];
} gdnrt_unique_id_t;

/** Default timeout of communicator set-up and collectives, in ms. */
#define GDNRT_DEFAULT_TIMEOUT_MS 300000

/*--- Errors ----------------------------------------------------------------*/

/** Why the last gdnrt call on this thread failed: "" after a call that
 *  succeeded, so read it right after the failing call. */
GDNRT_API const char *gdnrt_last_error(void);

/** A short name for an error code ("GDN_ERROR_NCCL"). */
GDNRT_API const char *gdnrt_error_name(int code);

/*--- Context ---------------------------------------------------------------*/

/** A context on `device` that enqueues on `stream` (0: the legacy default
 *  stream). Allocates the cuBLASLt handle and workspace. */
GDNRT_API int gdnrt_context_create(int device, cudaStream_t stream,
                         gdnrt_context_t **context);
GDNRT_API int gdnrt_context_destroy(gdnrt_context_t *context);
GDNRT_API int gdnrt_context_set_stream(gdnrt_context_t *context, cudaStream_t stream);
GDNRT_API cudaStream_t gdnrt_context_stream(const gdnrt_context_t *context);
/** How long communicator set-up and gdnrt_comm_wait may take (ms, > 0). */
GDNRT_API int gdnrt_context_set_timeout(gdnrt_context_t *context, int64_t timeout_ms);

/** Binds `comm` to a group role: the IR's `#gdn_comm.group<cp, P>` then runs
 *  on it. The context does not own it. NULL unbinds. */
GDNRT_API int gdnrt_context_bind(gdnrt_context_t *context, gdnrt_group_t group,
                       gdnrt_comm_t *comm);
/** The communicator bound to `group`, or NULL. */
GDNRT_API gdnrt_comm_t *gdnrt_context_comm(const gdnrt_context_t *context,
                                           gdnrt_group_t group);

/*--- Communicators ---------------------------------------------------------*/

/** A fresh NCCL unique id (rank 0 makes it and shares it). */
GDNRT_API int gdnrt_unique_id(gdnrt_unique_id_t *id);

/** Joins the communicator of `size` ranks named by `id` as `rank`. Fails
 *  after the context's timeout if the other ranks do not join. */
GDNRT_API int gdnrt_comm_init(gdnrt_context_t *context, const gdnrt_unique_id_t *id,
                    int rank, int size, gdnrt_comm_t **comm);

/** Wraps a communicator the host framework owns (a `ncclComm_t`, passed as
 *  a pointer so that this header needs no nccl.h); destroy does not free it. */
GDNRT_API int gdnrt_comm_wrap(gdnrt_context_t *context, void *nccl_comm,
                    gdnrt_comm_t **comm);

/** Standalone runs: `rendezvous` is "file:<path>" (rank 0 writes the id
 *  there; the path must be fresh for each job) or "tcp:<host>:<port>" (rank
 *  0 listens, the others connect). Every rank must pass the same size.
 *
 *  "threads:<name>" selects the threads backend: the ranks are threads of
 *  this process (each with its own context and stream, on one GPU or
 *  several) that call this with the same name and size; every collective
 *  runs as device copies between their streams, with NCCL's semantics and
 *  stream order. All ranks must join within the context's timeout (else
 *  every joined rank fails with GDN_ERROR_TIMEOUT naming the missing ones);
 *  another size or a rank already taken is refused. The name is free again
 *  once every rank of the job has destroyed its communicator. */
GDNRT_API int gdnrt_comm_bootstrap(gdnrt_context_t *context, const char *rendezvous,
                         int rank, int size, gdnrt_comm_t **comm);

/** gdnrt_comm_bootstrap with the rank, size and rendezvous that
 *  `gdnrt-launch` exports (GDNRT_RANK, GDNRT_WORLD_SIZE, GDNRT_RENDEZVOUS).
 *  Under `gdnrt-launch --threads` (no GDNRT_RANK), call it from a rank that
 *  gdnrt_run_ranks started: it joins as that thread's rank. */
GDNRT_API int gdnrt_comm_from_environment(gdnrt_context_t *context, gdnrt_comm_t **comm);

/** The TCP port on which this process answers other ranks asking how far
 *  its communicators got (its progress service, started on first use, on
 *  the first free port of the 64 from GDNRT_PROGRESS_PORT when set, else
 *  on a port the system picks). A framework that joins its ranks with
 *  gdnrt_comm_init gathers every rank's "host:port" and passes them to
 *  gdnrt_comm_set_progress_peers. */
GDNRT_API int gdnrt_progress_port(int *port);

/** Gives `comm` (made by gdnrt_comm_init; before its first collective and
 *  before gdnrt_comm_split_grid, whose groups take their boards from it) a
 *  progress board kept over the network: `peers[r]` is "host:port" where
 *  rank r's process answers (its gdnrt_progress_port), `count` the
 *  communicator's size, the same list on every rank. A wait that times out
 *  on it, or on a group split from it, then names the ranks that never
 *  entered the collective, and those that no longer answer.
 *  gdnrt_comm_bootstrap does this itself (file: and tcp: rendezvous). */
GDNRT_API int gdnrt_comm_set_progress_peers(gdnrt_comm_t *comm,
                                            const char *const *peers,
                                            int count);

/** Runs a P-rank program under either kind of launch, unchanged: under
 *  `gdnrt-launch -n P` (GDNRT_RANK set) it calls rank_main once with this
 *  process's rank and returns its result; under `gdnrt-launch -n P
 *  --threads` it runs rank_main(r, user) on P threads, r = 0..P-1, and
 *  once all have returned gives the first nonzero result (the first in
 *  time, its last error in gdnrt_last_error()), or 0. Inside rank_main,
 *  gdnrt_comm_from_environment joins as that rank. Without a launcher's
 *  environment it fails with GDN_ERROR_INVALID_ARGUMENT. rank_main must not
 *  throw. */
GDNRT_API int gdnrt_run_ranks(int (*rank_main)(int rank, void *user),
                              void *user);

/** Splits `world` into the groups of an S x P grid, SP innermost (world rank
 *  = cp_rank * sp_size + sp_rank, Megatron's order). Either output may be
 *  NULL when not wanted. */
GDNRT_API int gdnrt_comm_split_grid(gdnrt_comm_t *world, int sp_size,
                          gdnrt_comm_t **sp, gdnrt_comm_t **cp);

GDNRT_API int gdnrt_comm_rank(const gdnrt_comm_t *comm);
GDNRT_API int gdnrt_comm_size(const gdnrt_comm_t *comm);
/** Bytes of this rank's data the communicator's collectives have delivered
 *  to the other ranks since it was made (the same count on every backend: a
 *  send's bytes, but not an all-to-all's piece for the rank itself; an
 *  all-gather's piece once per peer; a reduce-scatter's slices for the
 *  others; an all-reduce as 2 (P - 1) / P of the tensor); 0 for NULL. Read
 *  it before and after a call to measure the call. */
GDNRT_API uint64_t gdnrt_comm_bytes_sent(const gdnrt_comm_t *comm);
/** The wrapped ncclComm_t; NULL for a threads communicator or once the
 *  communicator was aborted. Valid until gdnrt_comm_destroy, or until an
 *  abort (a failed call, a timed-out wait, or the watchdog's) frees it: use
 *  it for queries, not for work of its own. */
GDNRT_API void *gdnrt_comm_nccl(const gdnrt_comm_t *comm);

/** Waits for the context's stream while watching the communicator: returns
 *  when the stream is idle, fails (and aborts the communicator) on an NCCL
 *  error or when the timeout passes. A threads communicator fails at once
 *  when any rank of its group has failed. */
GDNRT_API int gdnrt_comm_wait(gdnrt_comm_t *comm, gdnrt_context_t *context);

/** Frees the communicator (aborting NCCL's if an error or timeout was
 *  seen; a wrapped one is left to its owner). A threads rank leaves its
 *  group: peers still waiting for it fail at once. */
GDNRT_API int gdnrt_comm_destroy(gdnrt_comm_t *comm);

/*--- The collectives of gdn_comm --------------------------------------------
 *
 * Each takes the group role and the group size the IR was compiled for; the
 * bound communicator must have that size. `workspace` is device memory of at
 * least the matching *_workspace_bytes (NULL when that is 0). All enqueue on
 * the context's stream and do not synchronise. The workspace queries read
 * shapes and dtypes only (the data pointers may be NULL) and return 0 for
 * descriptors the call itself would reject.
 *---------------------------------------------------------------------------*/

/** gdn_comm.all_gather: out = rank-ordered concatenation along `dim`. */
GDNRT_API size_t gdnrt_all_gather_workspace_bytes(const gdn_tensor_t *input, int ranks,
                                        int dim);
GDNRT_API int gdnrt_all_gather(gdnrt_context_t *context, gdnrt_group_t group, int ranks,
                     const gdn_tensor_t *input, const gdn_tensor_t *output,
                     int dim, void *workspace);

/** gdn_comm.reduce_scatter: the sum over ranks, slice `rank` along `dim`. */
GDNRT_API size_t gdnrt_reduce_scatter_workspace_bytes(const gdn_tensor_t *input,
                                            int ranks, int dim);
GDNRT_API int gdnrt_reduce_scatter(gdnrt_context_t *context, gdnrt_group_t group,
                         int ranks, const gdn_tensor_t *input,
                         const gdn_tensor_t *output, int dim, void *workspace);

/** gdn_comm.all_to_all: piece j along `split_dim` goes to rank j; received
 *  pieces are concatenated in rank order along `concat_dim`. */
GDNRT_API size_t gdnrt_all_to_all_workspace_bytes(const gdn_tensor_t *input, int ranks,
                                        int split_dim, int concat_dim);
GDNRT_API int gdnrt_all_to_all(gdnrt_context_t *context, gdnrt_group_t group, int ranks,
                     const gdn_tensor_t *input, const gdn_tensor_t *output,
                     int split_dim, int concat_dim, void *workspace);

/** gdn_comm.halo_exchange: the `output.shape[0]` buffer rows before this
 *  rank's contiguous token shard (zeros before the buffer's first row). */
GDNRT_API int gdnrt_halo_exchange(gdnrt_context_t *context, gdnrt_group_t group,
                        int ranks, const gdn_tensor_t *input,
                        const gdn_tensor_t *output);

/** gdn_comm.state_exchange: transition [HV, K, K], partial [HV, K, V] (f32
 *  or f64); incoming = S_in(rank) with S_in(0) = 0 and
 *  S_in(r + 1) = M_r S_in(r) + S_r. */
GDNRT_API size_t gdnrt_state_exchange_workspace_bytes(const gdn_tensor_t *partial,
                                            int ranks, gdnrt_chain_t chain);
GDNRT_API int gdnrt_state_exchange(gdnrt_context_t *context, gdnrt_group_t group,
                         int ranks, const gdn_tensor_t *transition,
                         const gdn_tensor_t *partial,
                         const gdn_tensor_t *incoming, gdnrt_chain_t chain,
                         void *workspace);

/** gdn_comm.local_shard: block `rank` of `ranks` along `dim` (no traffic). */
GDNRT_API int gdnrt_local_shard(gdnrt_context_t *context, gdnrt_group_t group,
                      int ranks, const gdn_tensor_t *input,
                      const gdn_tensor_t *output, int dim);

/** gdn_comm.all_reduce: the elementwise sum of every rank's input (bf16,
 *  f16, f32 or f64), the same bits on every rank; output may be input (in
 *  place). NCCL: ncclAllReduce. Threads backend: the inputs added in rank
 *  order by one GEMM with fp32 accumulation (f64 in f64). The workspace
 *  query returns 0 (neither backend needs one; it is there so that callers
 *  reserve what a later backend might). */
GDNRT_API size_t gdnrt_all_reduce_workspace_bytes(const gdn_tensor_t *input,
                                                  int ranks);
GDNRT_API int gdnrt_all_reduce(gdnrt_context_t *context, gdnrt_group_t group,
                               int ranks, const gdn_tensor_t *input,
                               const gdn_tensor_t *output, void *workspace);

/** gdn_comm.local_unshard, the transpose of gdnrt_local_shard: output has
 *  `ranks` times input's extent along `dim` and holds input as block
 *  `rank`, zeros elsewhere (no traffic). */
GDNRT_API int gdnrt_local_unshard(gdnrt_context_t *context, gdnrt_group_t group,
                                  int ranks, const gdn_tensor_t *input,
                                  const gdn_tensor_t *output, int dim);

/** gdn_comm.replicated_to_partial: rank 0 copies input to output, every
 *  other rank writes zeros, so the group's sum is input once (no traffic). */
GDNRT_API int gdnrt_replicated_to_partial(gdnrt_context_t *context,
                                          gdnrt_group_t group, int ranks,
                                          const gdn_tensor_t *input,
                                          const gdn_tensor_t *output);

/** gdn_comm.return_halo, the transpose of gdnrt_halo_exchange: halo_grad
 *  [tokens, ...] holds the cotangents of the `tokens` buffer rows before
 *  this rank's shard; each row's goes to the rank that holds the row (the
 *  previous one, or further back when shards are shorter) and is added
 *  there to dest (that rank's shard cotangent, [shard, ...], the output's
 *  shape; output may be dest). Rows before the buffer are dropped. The sums
 *  are in the tensors' floating-point type with fp32 accumulation, dest
 *  first, then the later ranks in order. The workspace query plans rank 0,
 *  which gets rows back from the most ranks. */
GDNRT_API size_t gdnrt_return_halo_workspace_bytes(
    const gdn_tensor_t *halo_grad, const gdn_tensor_t *dest, int ranks);
GDNRT_API int gdnrt_return_halo(gdnrt_context_t *context, gdnrt_group_t group,
                                int ranks, const gdn_tensor_t *halo_grad,
                                const gdn_tensor_t *dest,
                                const gdn_tensor_t *output, void *workspace);

/** gdn_comm.reverse_state_exchange, the VJP of gdnrt_state_exchange at
 *  transition M [HV, K, K] and partial S [HV, K, V] given each rank's
 *  incoming_grad (the cotangent of S_in, [HV, K, V]): with G(P) = 0 and
 *  G(r) = incoming_grad(r) + M_r^T G(r + 1), rank r gets
 *  partial_grad = G(r + 1) and transition_grad = G(r + 1) S_in(r)^T, S_in
 *  recomputed as the forward chains it. f32 (fp32 GEMMs, never TF32) or
 *  f64. Both chains gather M, S and incoming_grad and chain locally. */
GDNRT_API size_t gdnrt_reverse_state_exchange_workspace_bytes(
    const gdn_tensor_t *partial, int ranks, gdnrt_chain_t chain);
GDNRT_API int gdnrt_reverse_state_exchange(
    gdnrt_context_t *context, gdnrt_group_t group, int ranks,
    const gdn_tensor_t *incoming_grad, const gdn_tensor_t *transition,
    const gdn_tensor_t *partial, const gdn_tensor_t *transition_grad,
    const gdn_tensor_t *partial_grad, gdnrt_chain_t chain, void *workspace);

/** gdn_comm.rank: this process's rank in the bound group. */
GDNRT_API int gdnrt_group_rank(const gdnrt_context_t *context, gdnrt_group_t group,
                     int ranks, int *rank);

/*--- Projections -----------------------------------------------------------*/

/** gdn.linear: y[t] = W x[t] for every token; x [T, In...], weight
 *  [Out, In] (nn.Linear), y [T, Out...]; one dtype (bf16, f16 or f32), or
 *  an f32 y from bf16 or f16 x and weight; fp32 accumulation. Runs on
 *  cuBLASLt with the context's workspace. */
GDNRT_API int gdnrt_linear(gdnrt_context_t *context, const gdn_tensor_t *x,
                 const gdn_tensor_t *weight, const gdn_tensor_t *y);

/** gdn.linear_grad, the backward of gdnrt_linear: given dy [T, Out...],
 *  x [T, In...] and weight [Out, In], writes dx[t] = W^T dy[t] (dx has x's
 *  shape) and dweight = sum_t dy[t] x[t]^T ([Out, In]; zero when T = 0).
 *  One dtype (bf16, f16 or f32), fp32 accumulation, two cuBLASLt GEMMs with
 *  ordered reductions: the results are bit-identical run to run. dx and
 *  dweight must not overlap each other or the inputs. */
GDNRT_API int gdnrt_linear_grad(gdnrt_context_t *context,
                                const gdn_tensor_t *dy, const gdn_tensor_t *x,
                                const gdn_tensor_t *weight,
                                const gdn_tensor_t *dx,
                                const gdn_tensor_t *dweight);

/** gdnrt_linear_grad that adds W^T dy[t] onto what dx holds (dx +=, in the
 *  GEMM's fp32 epilogue: one rounding) instead of overwriting it; dweight
 *  is overwritten as before. Sums the input gradients of two projections
 *  of one x without a separate addition. */
GDNRT_API int gdnrt_linear_grad_accumulate(gdnrt_context_t *context,
                                           const gdn_tensor_t *dy,
                                           const gdn_tensor_t *x,
                                           const gdn_tensor_t *weight,
                                           const gdn_tensor_t *dx,
                                           const gdn_tensor_t *dweight);

/** The data GEMM of gdnrt_linear_grad alone: dx[t] = W^T dy[t] (dx [T,
 *  In...]), with the same checks (dx's shape stands for x's). With
 *  gdnrt_linear_weight_grad it lets a caller compute x after dx: the
 *  generated backward writes the gated RMSNorm's recomputed output in the
 *  norm's backward, which needs out_proj's dx first. */
GDNRT_API int gdnrt_linear_data_grad(gdnrt_context_t *context,
                                     const gdn_tensor_t *dy,
                                     const gdn_tensor_t *weight,
                                     const gdn_tensor_t *dx);

/** The weight GEMM of gdnrt_linear_grad alone: dweight = sum_t dy[t]
 *  x[t]^T ([Out, In]; zero when T = 0), ordered reductions as there. */
GDNRT_API int gdnrt_linear_weight_grad(gdnrt_context_t *context,
                                       const gdn_tensor_t *dy,
                                       const gdn_tensor_t *x,
                                       const gdn_tensor_t *dweight);

#ifdef __cplusplus
}
#endif

#endif /* GDN_RUNTIME_GDNRT_H */
