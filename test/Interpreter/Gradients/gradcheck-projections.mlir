// The gradients of the data-movement and projection ops agree with central
// finite differences of L = sum_i <result_i, cotangent_i>, entry by entry:
// gdn.linear (per-head inputs and outputs, a value used twice), the
// Qwen3-Next de-interleave with GQA, split_qkv, regroup_sections and its
// inverse, and the reshapes.
// RUN: gdn-run %s --entry=linear --gradcheck | FileCheck %s --check-prefix=LINEAR
// RUN: gdn-run %s --entry=splits --gradcheck --gradcheck-entries=120 --seed=1 | FileCheck %s --check-prefix=SPLITS
// RUN: gdn-run %s --entry=regroup --gradcheck | FileCheck %s --check-prefix=REGROUP

// LINEAR:      gradient check of @linear (1 rank(s))
// LINEAR-NEXT: gradient #0 (activation): 5x2x3xf64  checked 30 of 30  max_rel_err = {{.*}}  ok
// LINEAR-NEXT: gradient #1 (projection weight): 4x6xf64  checked 24 of 24  max_rel_err = {{.*}}  ok
// LINEAR-NEXT: gradient #2 (projection weight): 3x4xf64  checked 12 of 12  max_rel_err = {{.*}}  ok
func.func @linear(%x: tensor<5x2x3xf64>, %w: tensor<4x6xf64>, %w2: tensor<3x4xf64>)
    -> (tensor<5x2x2xf64>, tensor<5x3xf64>) {
  %y = gdn.linear %x, %w : (tensor<5x2x3xf64>, tensor<4x6xf64>) -> tensor<5x2x2xf64>
  %y2 = gdn.linear %y, %w2 : (tensor<5x2x2xf64>, tensor<3x4xf64>) -> tensor<5x3xf64>
  return %y, %y2 : tensor<5x2x2xf64>, tensor<5x3xf64>
}

// 2 key heads, 4 value heads (GQA), K = V = 2: qkvz has 2 groups of
// [q 2 | k 2 | v 4 | z 4], ba 2 groups of [b 2 | a 2]. Only some results
// are returned, and z reaches the loss through two reshapes, so some
// cotangents are zero and others arrive through several ops.
// SPLITS:      gradient #0 (activation): 5x24xf64  checked 120 of 120  max_rel_err = {{.*}}  ok
// SPLITS-NEXT: gradient #1 (activation): 5x8xf64  checked 40 of 40  max_rel_err = {{.*}}  ok
func.func @splits(%qkvz: tensor<5x24xf64>, %ba: tensor<5x8xf64>)
    -> (tensor<5x2x2xf64>, tensor<5x4x2xf64>, tensor<5x4x2xf64>, tensor<5x4xf64>, tensor<5x4xf64>) {
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 2 : i64}
      : (tensor<5x24xf64>, tensor<5x8xf64>)
      -> (tensor<5x16xf64>, tensor<5x4x2xf64>, tensor<5x4xf64>, tensor<5x4xf64>)
  %q, %k, %v = gdn.split_qkv %mixed : tensor<5x16xf64>
      -> tensor<5x2x2xf64>, tensor<5x2x2xf64>, tensor<5x4x2xf64>
  %flat = tensor.collapse_shape %z [[0], [1, 2]] : tensor<5x4x2xf64> into tensor<5x8xf64>
  %z2 = tensor.expand_shape %flat [[0], [1, 2]] output_shape [5, 4, 2]
      : tensor<5x8xf64> into tensor<5x4x2xf64>
  return %k, %v, %z2, %b, %a
      : tensor<5x2x2xf64>, tensor<5x4x2xf64>, tensor<5x4x2xf64>, tensor<5x4xf64>, tensor<5x4xf64>
}

// REGROUP:      gradient #0 (activation): 3x8xf64  checked 24 of 24  max_rel_err = {{.*}}  ok
func.func @regroup(%x: tensor<3x8xf64>) -> (tensor<3x8xf64>, tensor<3x8xf64>) {
  %r = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64}
      : tensor<3x8xf64> -> tensor<3x8xf64>
  %back = gdn.regroup_sections %r {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64, inverse = true}
      : tensor<3x8xf64> -> tensor<3x8xf64>
  return %r, %back : tensor<3x8xf64>, tensor<3x8xf64>
}
