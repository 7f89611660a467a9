// The chunked (WY) delta rule equals the recurrence to 1e-12 in float64, on
// length mixes with empty, one-token and chunk-boundary sequences (0, 1, 63,
// 64, 65), with GQA, an initial state, a padded packing and a non-default
// chunk size.
// RUN: gdn-run --compare %s %s --entry=gqa --delta-rule=chunked --compare-delta-rule=recurrent --seqlens=0,1,63,64,65,7 --rtol=1e-12 | FileCheck %s
// RUN: gdn-run --compare %s %s --entry=gqa --delta-rule=chunked --compare-delta-rule=recurrent --seqlens=300 --seed=7 --rtol=1e-12 | FileCheck %s
// RUN: gdn-run --compare %s %s --entry=padded --delta-rule=chunked --compare-delta-rule=recurrent --seqlens=0,1,63,64,65 --slots=8,8,64,72,72 --rtol=1e-12 | FileCheck %s
// RUN: gdn-run --compare %s %s --entry=chunk16 --delta-rule=chunked --compare-delta-rule=recurrent --seqlens=17,31,33,0 --rtol=1e-12 | FileCheck %s

// CHECK:      result #0: {{.*}}rel_rms = {{.*}}e-1{{[3-9]}}  max_abs = {{.*}}  ok
// CHECK-NEXT: result #1: {{.*}}rel_rms = {{.*}}e-1{{[3-9]}}  max_abs = {{.*}}  ok

func.func @gqa(%q: tensor<?x2x16xf64>, %k: tensor<?x2x16xf64>, %v: tensor<?x4x8xf64>,
               %g: tensor<?x4xf64>, %beta: tensor<?x4xf64>, %cu: tensor<?xi32>,
               %h0: tensor<?x4x16x8xf64>)
    -> (tensor<?x4x8xf64>, tensor<?x4x16x8xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x16xf64>, tensor<?x2x16xf64>, tensor<?x4x8xf64>, tensor<?x4xf64>,
         tensor<?x4xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x4x16x8xf64>)
      -> (tensor<?x4x8xf64>, tensor<?x4x16x8xf64>)
  return %o, %s : tensor<?x4x8xf64>, tensor<?x4x16x8xf64>
}

func.func @padded(%q: tensor<?x1x8xf64>, %k: tensor<?x1x8xf64>, %v: tensor<?x2x4xf64>,
                  %g: tensor<?x2xf64>, %beta: tensor<?x2xf64>, %cu: tensor<?xi32>,
                  %cu_padded: tensor<?xi32>)
    -> (tensor<?x2x4xf64>, tensor<?x2x8x4xf64>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x1x8xf64>, tensor<?x1x8xf64>, tensor<?x2x4xf64>, tensor<?x2xf64>,
         tensor<?x2xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x2x4xf64>, tensor<?x2x8x4xf64>)
  return %o, %s : tensor<?x2x4xf64>, tensor<?x2x8x4xf64>
}

func.func @chunk16(%q: tensor<?x1x8xf64>, %k: tensor<?x1x8xf64>, %v: tensor<?x1x8xf64>,
                   %g: tensor<?x1xf64>, %beta: tensor<?x1xf64>, %cu: tensor<?xi32>)
    -> (tensor<?x1x8xf64>, tensor<?x1x8x8xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = 16 : i64}
      : (tensor<?x1x8xf64>, tensor<?x1x8xf64>, tensor<?x1x8xf64>, tensor<?x1xf64>,
         tensor<?x1xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x8xf64>, tensor<?x1x8x8xf64>)
  return %o, %s : tensor<?x1x8xf64>, tensor<?x1x8x8xf64>
}
