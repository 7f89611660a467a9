//===- generated_entry.h - the generated function's symbols by macro ------===//
//
// gdn-translate names a function's C symbols after its prefix
// (gdn_<f>, gdn_<f>_signature, _workspace_bytes, _result_shapes, _check).
// A harness is compiled with -DGDN_FN=gdn_<f> (and, for a training step,
// -DGDN_BACKWARD_FN=gdn_<f>_backward) and GDN_HEADER naming the generated
// header; these macros spell the symbols, so one harness serves every
// function.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_GENERATED_ENTRY_H
#define GDN_TEST_INTEGRATION_HARNESS_GENERATED_ENTRY_H

#ifndef GDN_FN
#error "compile with -DGDN_FN=gdn_<function> and -DGDN_HEADER='\"kernels.h\"'"
#endif

#define GDN_CAT2(a, b) a##b
#define GDN_CAT(a, b) GDN_CAT2(a, b)
#define FN GDN_FN
#define FN_SIGNATURE GDN_CAT(GDN_FN, _signature)
#define FN_WORKSPACE GDN_CAT(GDN_FN, _workspace_bytes)
#define FN_SHAPES GDN_CAT(GDN_FN, _result_shapes)
#define FN_CHECK GDN_CAT(GDN_FN, _check)
#ifdef GDN_BACKWARD_FN
#define BWD GDN_BACKWARD_FN
#define BWD_SIGNATURE GDN_CAT(GDN_BACKWARD_FN, _signature)
#define BWD_WORKSPACE GDN_CAT(GDN_BACKWARD_FN, _workspace_bytes)
#define BWD_SHAPES GDN_CAT(GDN_BACKWARD_FN, _result_shapes)
#define BWD_CHECK GDN_CAT(GDN_BACKWARD_FN, _check)
#endif

#endif // GDN_TEST_INTEGRATION_HARNESS_GENERATED_ENTRY_H
