/* A C (not C++) user of a generated header: it must compile as plain C, and
 * each whole-function entry point must have the type generic callers use.
 * GDN_HEADER names the header, GDN_FN the function's prefix. */
#include GDN_HEADER

#define GDN_CAT2(a, b) a##b
#define GDN_CAT(a, b) GDN_CAT2(a, b)

int main(void) {
  const gdn_signature_t *signature = &GDN_CAT(GDN_FN, _signature);
  size_t (*workspace)(const gdn_tensor_t *) = GDN_CAT(GDN_FN, _workspace_bytes);
  int (*shapes)(const gdn_tensor_t *, gdn_tensor_t *) = GDN_CAT(GDN_FN, _result_shapes);
  int (*run)(const gdn_tensor_t *, gdn_tensor_t *, void *, gdnrt_context_t *) = GDN_FN;
  int (*check)(const gdn_tensor_t *, const void *, gdnrt_context_t *, char *, size_t) =
      GDN_CAT(GDN_FN, _check);
  return signature->num_args + (workspace != 0) + (shapes != 0) + (run != 0) + (check != 0);
}
