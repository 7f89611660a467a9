// Bad input to the interpreter gives a clear error and a non-zero exit:
// invalid cu_seqlens at run time, a .npy of the wrong shape, an unknown entry
// function, offsets that do not match the static token count.
// RUN: rm -rf %t && mkdir -p %t/bad-offsets %t/bad-shape %t/short-offsets
// RUN: %make_npy %t/bad-offsets/arg1.npy '<i4' 4 0 5 3 8
// RUN: not gdn-run %s --inputs=%t/bad-offsets 2>&1 | FileCheck %s --check-prefix=OFFSETS
// RUN: %make_npy %t/bad-shape/arg0.npy '<f8' 8,3 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24
// RUN: not gdn-run %s --inputs=%t/bad-shape 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not gdn-run %s --entry=nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not gdn-run %s --seqlens=2,2,2 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not gdn-run %s --seqlens=4,4 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not gdn-run %s --inputs=%t/does-not-exist 2>&1 | FileCheck %s --check-prefix=DIR
// A header whose shape overflows 64 bits worth of bytes, with no data behind it.
// RUN: mkdir -p %t/huge && %python -c "h=\"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\"; h+=' '*((64-(10+len(h)+1)%%64)%%64)+chr(10); open('%t/huge/arg0.npy','wb').write(b'\\x93NUMPY\\x01\\x00'+len(h).to_bytes(2,'little')+h.encode())"
// RUN: not gdn-run %s --inputs=%t/huge 2>&1 | FileCheck %s --check-prefix=HUGE

// OFFSETS: gdn-run: error: arg1.npy: cu_seqlens must be non-decreasing, but cu_seqlens[2] = 3 < cu_seqlens[1] = 5
// SHAPE: gdn-run: error: arg0.npy has shape 8x3xf64 but argument #0 of @main needs 8x4 (global shape)
// ENTRY: gdn-run: error: no function @nope in {{.*}}bad-input.mlir (it has @main)
// TOTAL: gdn-run: error: {{.*}}cu_seqlens[3] = 6 must equal the token count 8
// COUNT: gdn-run: error: argument #1 of @main holds 4 offsets but the packing has 2 sequences
// DIR: gdn-run: error: --inputs {{.*}}does-not-exist is not a directory
// HUGE: gdn-run: error: {{.*}}arg0.npy: shape (4611686018427387904, 4) needs more data than the file's 0 bytes

func.func @main(%x: tensor<8x4xf64>, %cu: tensor<4xi32>, %w: tensor<4x2xf64>) -> tensor<8x4xf64> {
  %p = gdn.packing %cu : tensor<4xi32> -> !gdn.packing<seqs = 3, tokens = 8>
  %y = gdn.causal_conv1d %x, %w, %p {width = 2 : i64}
      : (tensor<8x4xf64>, tensor<4x2xf64>, !gdn.packing<seqs = 3, tokens = 8>) -> tensor<8x4xf64>
  return %y : tensor<8x4xf64>
}
