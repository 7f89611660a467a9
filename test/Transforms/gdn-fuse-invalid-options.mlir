// gdn-fuse rejects a tile no generated kernel can take (threads not whole warps or over 1024, tokens-per-block over 1024, rows-in-flight 0 or over 16, a prologue block over 227 KiB of shared memory) instead of leaving every op unfused.
// RUN: not gdn-opt %s --gdn-fuse="threads=100" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not gdn-opt %s --gdn-fuse="threads=2048" 2>&1 | FileCheck %s --check-prefix=THREADS-MAX
// RUN: not gdn-opt %s --gdn-fuse="tokens-per-block=4096" 2>&1 | FileCheck %s --check-prefix=TOKENS
// RUN: not gdn-opt %s --gdn-fuse="rows-in-flight=0" 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not gdn-opt %s --gdn-fuse="rows-in-flight=17" 2>&1 | FileCheck %s --check-prefix=UNROLL-MAX
// RUN: not gdn-opt %s --gdn-fuse="threads=1024 rows-in-flight=16" 2>&1 | FileCheck %s --check-prefix=SHARED
// An f32 conv input (f32-projections) doubles the prologue's ring: a tile the
// pass-level check accepts can be too large for it, and says so on the conv.
// RUN: not gdn-opt %S/../Integration/Inputs/layer_qwen3_next_small.mlir --gdn-expand-layer=f32-projections=true --gdn-fuse="threads=512 rows-in-flight=16" 2>&1 | FileCheck %s --check-prefix=WIDE-INPUT
// WIDE-INPUT: error: gdn-fuse: threads (512) x rows-in-flight (16) needs 262160 bytes of shared memory per prologue block for its 'f32' conv input, above 232448; use fewer threads or rows in flight
// The limits themselves are accepted.
// RUN: gdn-opt %s --gdn-fuse="threads=1024 tokens-per-block=1024 rows-in-flight=13" | FileCheck %s --check-prefix=LIMITS

// THREADS: error: gdn-fuse: threads (100) must be a positive multiple of 32 up to 1024, tokens-per-block (32) in [1, 1024] and rows-in-flight (8) in [1, 16]
// THREADS-MAX: error: gdn-fuse: threads (2048) must be
// TOKENS: error: gdn-fuse: {{.*}}tokens-per-block (4096) in [1, 1024]
// UNROLL: error: gdn-fuse: {{.*}}rows-in-flight (0) in [1, 16]
// SHARED: error: gdn-fuse: threads (1024) x rows-in-flight (16) needs 262160 bytes of shared memory per prologue block, above 232448; use fewer threads or rows in flight
// UNROLL-MAX: error: gdn-fuse: {{.*}}rows-in-flight (17) in [1, 16]
// LIMITS: gdn_kernel.gated_rmsnorm {{.*}} {eps = 9.9999999999999995E-7 : f64, threads = 1024 : i64}

func.func @epilogue(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xbf16>,
                    %w: tensor<128xbf16>) -> tensor<?x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}
