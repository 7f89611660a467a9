// The gated delta rule's gradients (an exact reverse sweep over the
// recurrence) agree with central finite differences for q, k, v, g, beta
// and the initial state, with the final state returned so that its
// cotangent matters. GQA: 4 value heads read 2 key heads. The pack holds
// sequences of length 0, 1, 63, 64, 65 and 130: across the chunk size (64)
// of the chunked forward and the 64-token checkpoint segments of the
// backward sweep. The padded pack leaves rows that no token reads.
// RUN: gdn-run %s --entry=delta --gradcheck --seqlens=0,1,63,64,65,130 | FileCheck %s
// The chunked forward (slower in the interpreter: fewer entries).
// RUN: gdn-run %s --entry=delta --gradcheck --gradcheck-entries=16 --seqlens=70,0,1 --delta-rule=chunked --seed=4 | FileCheck %s --check-prefix=CHUNKED
// Every entry of every argument, on a shorter pack that still crosses 64.
// RUN: gdn-run %s --entry=delta --gradcheck --gradcheck-entries=100000 --seqlens=0,1,65 --seed=7 | FileCheck %s --check-prefix=ALL
// RUN: gdn-run %s --entry=padded --gradcheck --seqlens=3,0,70,1 --slots=8,0,72,8 --seed=2 | FileCheck %s --check-prefix=PADDED
// The scale is an attribute (here 0.5), K^-1/2 by default.
// RUN: gdn-run %s --entry=one_head --gradcheck --gradcheck-entries=1000 --seqlens=2,5 | FileCheck %s --check-prefix=ONE

// CHECK:      gradient #0 (unit-norm rows): {{[0-9]+}}x2x3xf64  checked 64 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #1 (unit-norm rows): {{[0-9]+}}x2x3xf64  checked 64 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #2 (activation): {{[0-9]+}}x4x2xf64  checked 64 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #3 (decay g): {{[0-9]+}}x4xf64  checked 64 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #4 (beta): {{[0-9]+}}x4xf64  checked 64 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #5 (state): {{[0-9]+}}x4x3x2xf64  checked {{[0-9]+}} of {{[0-9]+}}  max_rel_err = {{.*}}  ok
func.func @delta(%q: tensor<?x2x3xf64>, %k: tensor<?x2x3xf64>, %v: tensor<?x4x2xf64>,
                 %g: tensor<?x4xf64>, %beta: tensor<?x4xf64>, %s0: tensor<?x4x3x2xf64>,
                 %cu: tensor<?xi32>) -> (tensor<?x4x2xf64>, tensor<?x4x3x2xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x2x3xf64>, tensor<?x2x3xf64>, tensor<?x4x2xf64>, tensor<?x4xf64>,
         tensor<?x4xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x4x3x2xf64>)
      -> (tensor<?x4x2xf64>, tensor<?x4x3x2xf64>)
  return %o, %s : tensor<?x4x2xf64>, tensor<?x4x3x2xf64>
}

// CHUNKED:      gradient #0 (unit-norm rows): 71x2x3xf64  checked 16 of 426  max_rel_err = {{.*}}  ok
// CHUNKED-NEXT: gradient #1 (unit-norm rows): 71x2x3xf64  checked 16 of 426  max_rel_err = {{.*}}  ok
// CHUNKED-NEXT: gradient #2 (activation): 71x4x2xf64  checked 16 of 568  max_rel_err = {{.*}}  ok
// CHUNKED-NEXT: gradient #3 (decay g): 71x4xf64  checked 16 of 284  max_rel_err = {{.*}}  ok
// CHUNKED-NEXT: gradient #4 (beta): 71x4xf64  checked 16 of 284  max_rel_err = {{.*}}  ok
// CHUNKED-NEXT: gradient #5 (state): 3x4x3x2xf64  checked 16 of 72  max_rel_err = {{.*}}  ok

// ALL:      gradient #0 (unit-norm rows): 66x2x3xf64  checked 396 of 396  max_rel_err = {{.*}}  ok
// ALL-NEXT: gradient #1 (unit-norm rows): 66x2x3xf64  checked 396 of 396  max_rel_err = {{.*}}  ok
// ALL-NEXT: gradient #2 (activation): 66x4x2xf64  checked 528 of 528  max_rel_err = {{.*}}  ok
// ALL-NEXT: gradient #3 (decay g): 66x4xf64  checked 264 of 264  max_rel_err = {{.*}}  ok
// ALL-NEXT: gradient #4 (beta): 66x4xf64  checked 264 of 264  max_rel_err = {{.*}}  ok
// ALL-NEXT: gradient #5 (state): 3x4x3x2xf64  checked 72 of 72  max_rel_err = {{.*}}  ok

// PADDED:      gradient #0 (unit-norm rows): 88x2x3xf64  checked 64 of 528  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #1 (unit-norm rows): 88x2x3xf64  checked 64 of 528  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #2 (activation): 88x4x2xf64  checked 64 of 704  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #3 (decay g): 88x4xf64  checked 64 of 352  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #4 (beta): 88x4xf64  checked 64 of 352  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #5 (state): 4x4x3x2xf64  checked 64 of 96  max_rel_err = {{.*}}  ok
func.func @padded(%q: tensor<?x2x3xf64>, %k: tensor<?x2x3xf64>, %v: tensor<?x4x2xf64>,
                  %g: tensor<?x4xf64>, %beta: tensor<?x4xf64>, %s0: tensor<?x4x3x2xf64>,
                  %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x4x2xf64>, tensor<?x4x3x2xf64>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x2x3xf64>, tensor<?x2x3xf64>, tensor<?x4x2xf64>, tensor<?x4xf64>,
         tensor<?x4xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<?x4x3x2xf64>)
      -> (tensor<?x4x2xf64>, tensor<?x4x3x2xf64>)
  return %o, %s : tensor<?x4x2xf64>, tensor<?x4x3x2xf64>
}

// Without an initial state, with a scale, returning only the output.
// ONE:      gradient #0 (unit-norm rows): 7x1x2xf64  checked 14 of 14  max_rel_err = {{.*}}  ok
// ONE-NEXT: gradient #1 (unit-norm rows): 7x1x2xf64  checked 14 of 14  max_rel_err = {{.*}}  ok
// ONE-NEXT: gradient #2 (activation): 7x1x3xf64  checked 21 of 21  max_rel_err = {{.*}}  ok
// ONE-NEXT: gradient #3 (decay g): 7x1xf64  checked 7 of 7  max_rel_err = {{.*}}  ok
// ONE-NEXT: gradient #4 (beta): 7x1xf64  checked 7 of 7  max_rel_err = {{.*}}  ok
func.func @one_head(%q: tensor<?x1x2xf64>, %k: tensor<?x1x2xf64>, %v: tensor<?x1x3xf64>,
                    %g: tensor<?x1xf64>, %beta: tensor<?x1xf64>, %cu: tensor<?xi32>)
    -> tensor<?x1x3xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 0.5 : f64}
      : (tensor<?x1x2xf64>, tensor<?x1x2xf64>, tensor<?x1x3xf64>, tensor<?x1xf64>,
         tensor<?x1xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x3xf64>, tensor<?x1x2x3xf64>)
  return %o : tensor<?x1x3xf64>
}
