// The whole-function entry rejects packings the kernels cannot take before
// launching anything: no offsets at all, cu_padded of another length than
// cu_seqlens, counts beyond int32, a null context; and a function that
// needs no workspace accepts a null one.
// RUN: gdn-opt --gdn-pipeline %gdn_src_root/test/Integration/Inputs/prologue_states_padded.mlir | gdn-translate --gdn-to-cuda | FileCheck %s
// RUN: gdn-opt --gdn-pipeline %gdn_src_root/test/Integration/Inputs/epilogue_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=NOWS

// Parameters are checked at the sizes the attributes imply.
// CHECK-LABEL: static int gdn_prologue_states_padded_k0_prologue_validate(
// CHECK: if (!gdn::checkTensor(operands[1], GDN_BF16, {384, 4}))
// CHECK: if (!gdn::checkTensor(operands[2], GDN_BF16, {384}))
// CHECK: if (!gdn::checkTensor(operands[6], GDN_F32, {4}))
// CHECK: if (!gdn::checkTensor(operands[7], GDN_F32, {4}))
// CHECK-LABEL: static int gdn_prologue_states_padded_check_args(
// CHECK:      if (args[8].shape[0] < 1 || args[8].shape[0] > INT32_MAX)
// CHECK-NEXT:   return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (args[9].shape[0] != args[8].shape[0])
// CHECK-NEXT:   return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (static_cast<int64_t>(args[0].shape[0]) > INT32_MAX)
// CHECK-NEXT:   return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: return GDN_SUCCESS;
// CHECK-LABEL: extern "C" int gdn_prologue_states_padded(
// CHECK: const size_t bytes = gdn_prologue_states_padded_layout(args, offsets);
// CHECK-NEXT: if (!results || !context || (bytes && !workspace))

// NOWS-LABEL: static size_t gdn_epilogue_gqa16x32_layout(
// NOWS-NEXT: size_t bytes = 0;
// NOWS-NEXT: offsets[0] = bytes;
// NOWS-NEXT: return bytes;
// NOWS-LABEL: extern "C" int gdn_epilogue_gqa16x32(
// NOWS: if (!results || !context || (bytes && !workspace))
// NOWS-NEXT: return GDN_ERROR_INVALID_ARGUMENT;
