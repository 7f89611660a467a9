// Run-time sizes that contradict the program are errors, never out-of-bounds
// reads: a conv weight narrower than `width`, an initial conv state of the
// wrong width, a zigzag tensor whose packing covers other tokens, collectives
// whose ranks disagree on types, and bad command-line values.
// RUN: rm -rf %t && mkdir -p %t/narrow %t/state %t/zigzag
// RUN: %make_npy %t/narrow/arg1.npy '<f8' 4,2 1 2 3 4 5 6 7 8
// RUN: %make_npy %t/narrow/arg2.npy '<f8' 2,4,3 1 2 3 4 5 6 7 8 9 10 11 12 1 2 3 4 5 6 7 8 9 10 11 12
// RUN: not gdn-run %s --entry=conv --inputs=%t/narrow --seqlens=3,5 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: %make_npy %t/state/arg1.npy '<f8' 4,4 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
// RUN: %make_npy %t/state/arg2.npy '<f8' 2,4,1 1 2 3 4 5 6 7 8
// RUN: not gdn-run %s --entry=conv --inputs=%t/state --seqlens=3,5 2>&1 | FileCheck %s --check-prefix=STATE
// RUN: %make_npy %t/zigzag/arg1.npy '<i4' 3 0 4 16
// RUN: not gdn-run %s --entry=zigzag --inputs=%t/zigzag 2>&1 | FileCheck %s --check-prefix=ZIGZAG
// RUN: not gdn-run %s --entry=gather_4x2,gather_1x8 2>&1 | FileCheck %s --check-prefix=TYPES
// RUN: not gdn-run %s --entry=declared 2>&1 | FileCheck %s --check-prefix=DECL
// RUN: not gdn-run %s --entry=conv --seqlens=3,-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not gdn-run %s --entry=conv --ranks=-2 --seqlens=3,5 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: mkdir -p %t/slice && %make_npy %t/slice/arg1.npy '<f8' 5,2 1 2 3 4 5 6 7 8 9 10
// RUN: %make_npy %t/slice/arg0.npy '<f8' 3,2 1 2 3 4 5 6
// RUN: not gdn-run %s --entry=insert_rows --inputs=%t/slice 2>&1 | FileCheck %s --check-prefix=INSERT
// RUN: not gdn-run %s --entry=extract_rows --inputs=%t/slice 2>&1 | FileCheck %s --check-prefix=EXTRACT

// WIDTH: 'gdn.causal_conv1d' at {{.*}} on rank 0: weight dimension 1 (width) is 2 at run time but must be 4
// STATE: 'gdn.causal_conv1d' at {{.*}} on rank 0: initial_state dimension 2 (width - 1) is 1 at run time but must be 3
// ZIGZAG: error: argument #0 of @zigzag: the packing describes 16 tokens but the zigzag tensor has 8 globally
// TYPES: collective mismatch: rank 0 waits at 'gdn_comm.all_gather' {{.*}} but rank 1 waits at 'gdn_comm.all_gather'
// DECL: {{.*}}bad-input-runtime-shapes.mlir: @declared is a declaration without a body; give the function a body to run
// NEGATIVE: --seqlens must be lengths >= 0, found -1
// RANKS: --ranks must be between 1 and 4096, found -2
// INSERT: 'tensor.insert_slice' at {{.*}} on rank 0: the inserted {{.*}} does not fill the slice's 10 elements
// EXTRACT: 'tensor.extract_slice' at {{.*}} on rank 0: the interpreter takes slices of static sizes only

// A slice whose size is the destination's run-time rows (5) that the
// 3-row source does not fill; an extraction of run-time size.
func.func @insert_rows(%src: tensor<?x2xf64>, %dst: tensor<?x2xf64>) -> tensor<?x2xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %dst, %c0 : tensor<?x2xf64>
  %r = tensor.insert_slice %src into %dst[0, 0] [%n, 2] [1, 1] : tensor<?x2xf64> into tensor<?x2xf64>
  return %r : tensor<?x2xf64>
}

func.func @extract_rows(%unused: tensor<?x2xf64>, %src: tensor<?x2xf64>) -> tensor<?x2xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %src, %c0 : tensor<?x2xf64>
  %r = tensor.extract_slice %src[0, 0] [%n, 2] [1, 1] : tensor<?x2xf64> to tensor<?x2xf64>
  return %r : tensor<?x2xf64>
}

func.func @conv(%x: tensor<?x4xf64>, %w: tensor<4x?xf64>, %h0: tensor<?x4x?xf64>,
                %cu: tensor<?xi32>) -> tensor<?x4xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64}
      : (tensor<?x4xf64>, tensor<4x?xf64>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<?x4x?xf64>) -> tensor<?x4xf64>
  return %y : tensor<?x4xf64>
}

func.func @zigzag(%x: tensor<4x2xf64, #gdn.seq<zigzag, ranks = 2>>, %cu: tensor<3xi32>)
    -> tensor<4x2xf64, #gdn.seq<zigzag, ranks = 2>> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = ?>
  return %x : tensor<4x2xf64, #gdn.seq<zigzag, ranks = 2>>
}

func.func @gather_4x2(%x: tensor<4x2xf64>) -> tensor<8x2xf64> {
  %y = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<4x2xf64> -> tensor<8x2xf64>
  return %y : tensor<8x2xf64>
}

func.func @gather_1x8(%x: tensor<4x2xf64>) -> tensor<8x2xf64> {
  %x1 = tensor.collapse_shape %x [[0, 1]] : tensor<4x2xf64> into tensor<8xf64>
  %x2 = tensor.expand_shape %x1 [[0, 1]] output_shape [1, 8] : tensor<8xf64> into tensor<1x8xf64>
  %y = gdn_comm.all_gather %x2 {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<1x8xf64> -> tensor<2x8xf64>
  %y1 = tensor.collapse_shape %y [[0, 1]] : tensor<2x8xf64> into tensor<16xf64>
  %y2 = tensor.expand_shape %y1 [[0, 1]] output_shape [8, 2] : tensor<16xf64> into tensor<8x2xf64>
  return %y2 : tensor<8x2xf64>
}

func.func private @declared(tensor<4xf64>) -> tensor<4xf64>
