// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @not_a_multiple(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{every section size must be a positive multiple of groups = 2, found 3}}
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 3, 3, 4>, groups = 2 : i64} : tensor<4x10xf32> -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

func.func @wrong_total(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{the sections cover 8 elements but dimension 1 has 10}}
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64} : tensor<4x10xf32> -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

func.func @changes_type(%x: tensor<4x8xf32>) -> tensor<4x8xf64> {
  // expected-error @+1 {{the result type must equal the input's ('tensor<4x8xf32>'): the op only permutes}}
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}

// -----

func.func @dim_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim = 2 is out of range for a rank-2 tensor}}
  %y = gdn.regroup_sections %x {dim = 2 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @no_sections(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{needs at least one section}}
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64>, groups = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @overflow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{the sections cover more than 2^31 - 1 elements}}
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 9223372036854775806, 9223372036854775806, 12>, groups = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @tokens(%x: tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>>) -> tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>> {
  // expected-error @+1 {{permutes a feature dimension; dimension 0 of a token-sharded tensor holds tokens}}
  %y = gdn.regroup_sections %x {dim = 0 : i64, section_sizes = array<i64: 2, 2>, groups = 2 : i64} : tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>> -> tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>>
  return %y : tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>>
}
