/*===- abi.h - the C ABI of generated GDN entry points -------------*- C -*-===*
 *
 * Generated code exposes each compiled function as plain C: tensors are
 * described by gdn_tensor_t (device pointer, shape, dtype), errors by an
 * integer code plus a status record that device-side validation fills in
 * without a host synchronisation. Only C types appear here, so any language
 * with a C FFI (ctypes, Rust, the PyTorch extension) can call it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GDN_RUNTIME_ABI_H
#define GDN_RUNTIME_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types, as in MLIR. */
typedef enum gdn_dtype {
  GDN_BF16 = 0,
  GDN_F16 = 1,
  GDN_F32 = 2,
  GDN_F64 = 3,
  GDN_I32 = 4,
  GDN_I64 = 5
} gdn_dtype_t;

#define GDN_MAX_RANK 6

/** A dense row-major tensor in device memory. */
typedef struct gdn_tensor {
  void *data;
  int64_t shape[GDN_MAX_RANK];
  int32_t rank;
  gdn_dtype_t dtype;
} gdn_tensor_t;

/** What an argument or result is, so that tools can slice packed inputs. */
typedef enum gdn_role {
  GDN_ROLE_TOKENS = 0,     /**< dimension 0 indexes packed tokens */
  GDN_ROLE_CU_SEQLENS = 1, /**< cumulative sequence offsets [N + 1] */
  GDN_ROLE_CU_PADDED = 2,  /**< cumulative padded slot offsets [N + 1] */
  GDN_ROLE_PER_SEQUENCE = 3, /**< dimension 0 indexes sequences (states) */
  GDN_ROLE_PARAMETER = 4   /**< weights and other per-layer tensors */
} gdn_role_t;

/** Return codes of generated entry points. */
typedef enum gdn_error {
  GDN_SUCCESS = 0,
  GDN_ERROR_INVALID_ARGUMENT = 1, /**< a null pointer, wrong rank/shape/dtype */
  GDN_ERROR_INVALID_PACKING = 2,  /**< cu_seqlens / cu_padded break the rules */
  GDN_ERROR_CUDA = 3,             /**< a CUDA call failed */
  GDN_ERROR_NCCL = 4,             /**< an NCCL call failed (gdnrt) */
  GDN_ERROR_TIMEOUT = 5,          /**< a peer did not answer in time (gdnrt) */
  GDN_ERROR_CUBLAS = 6,           /**< a cuBLASLt call failed (gdnrt) */
  GDN_ERROR_SYSTEM = 7            /**< a file or socket call failed (gdnrt) */
} gdn_error_t;

/** Validation codes of a packing's offsets, written by the device into
 *  gdn_status_t.code; the rules and their messages: gdn/runtime/
 *  packing_rules.h. Codes from 7 on arise on the host only (int64 offsets,
 *  two arrays' lengths, a type's max_len). */
typedef enum gdn_status_code {
  GDN_STATUS_OK = 0,
  GDN_STATUS_FIRST_NOT_ZERO = 1,   /**< cu[0] != 0 */
  GDN_STATUS_DECREASING = 2,       /**< cu[index] < cu[index - 1] */
  GDN_STATUS_WRONG_TOTAL = 3,      /**< cu[N] != the buffer's token count */
  GDN_STATUS_SLOT_TOO_SMALL = 4,   /**< real length of sequence index > slot */
  GDN_STATUS_NO_OFFSETS = 5,       /**< cu_seqlens has no entries */
  GDN_STATUS_ZIGZAG_SLOT = 6,      /**< slot of sequence index is no
                                        multiple of bound = 2P (zigzag) */
  GDN_STATUS_TOKEN_LIMIT = 7,      /**< cu[index] > bound = 2^31 - 1 */
  GDN_STATUS_COUNT_MISMATCH = 8,   /**< cu_padded has value entries,
                                        cu_seqlens bound */
  GDN_STATUS_ABOVE_MAX_LEN = 9     /**< sequence index longer than bound */
} gdn_status_code_t;

/** Device-side validation result: the first violation found. */
typedef struct gdn_status {
  int32_t code;      /**< a gdn_status_code_t */
  int32_t index;     /**< the offending entry or sequence */
  int64_t value;     /**< the offending value */
  int64_t bound;     /**< what it was compared against */
  int32_t padded;    /**< 1 when the violation is in cu_padded */
  int32_t reserved;
} gdn_status_t;

/** A packing as kernels take it: the offsets, their counts, and a workspace
 *  holding its device-side metadata (see gdn::device::PackingWorkspace). */
typedef struct gdn_packing {
  const int32_t *cu_seqlens; /**< [num_seqs + 1] */
  const int32_t *cu_padded;  /**< [num_seqs + 1], or NULL when not padded */
  int32_t num_seqs;
  int32_t buffer_tokens;     /**< rows of the packed activation buffers */
  void *workspace;
} gdn_packing_t;

/** What a compiled function takes and returns, for generic callers. */
typedef struct gdn_signature {
  const char *name;
  int32_t num_args;
  int32_t num_results;
  const gdn_dtype_t *arg_dtypes;
  const int32_t *arg_ranks;
  const gdn_role_t *arg_roles;
  const gdn_dtype_t *result_dtypes;
  const int32_t *result_ranks;
  const gdn_role_t *result_roles;
  /** The process groups the function's collectives run on: the ranks of
   *  its SP and CP groups (bind communicators of these sizes to the
   *  context), 0 for a group it does not use. A function with both runs on
   *  an sp_ranks x cp_ranks grid, SP innermost. */
  int32_t sp_ranks;
  int32_t cp_ranks;
} gdn_signature_t;

#ifdef __cplusplus
}
#endif

#endif /* GDN_RUNTIME_ABI_H */
