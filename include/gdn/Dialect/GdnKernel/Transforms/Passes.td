//===- Passes.td - gdn_kernel -> gdn_kernel: tile selection ---*- tablegen -*-===//
//
// The passes of one level, gdn_kernel -> gdn_kernel: tile selection.
// The flag names the effect; each pass has a lit test file of the same name
// under test/Transforms. Options, statistics and dependent dialects live
// here so that registration, documentation and flags come from one place.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_TD
#define GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnSelectKernels : Pass<"gdn-select-kernels"> {
  let summary = "Choose the tiles of the generated kernels from the packing and the device";
  let description = [{
    Sets the scan kernel and tile attributes of every `gdn_kernel.delta_rule`
    from what the packing says about the work and from the device, by the
    rule measured on the H200 (docs/performance.md). The scan kernel runs
    one block per (sequence, value head, V tile). With `wgmma` (the target
    is sm_90a, the default) the scan is `"wgmma"` with three chunks in
    flight, V tile 128 when the `N * HV` blocks fill `sm-count` SMs (within
    an eighth), else 64 (twice the blocks; measured faster than every
    mma.sync tile at 8192x4, 2048x4 and 1x32768). Without it the scan is
    `"mma_sync"` and the pass picks the widest V tile (128, 64, 32) whose
    `N * HV * V / tile` blocks still fill the SMs, with the stage count
    measured best for it (128: 2, 64: 1, 32: 2). Wide tiles read each
    chunk's shared operands once for more columns; narrow ones make blocks
    when sequences are few (one long sequence). N is the packing's static
    sequence count, else `expected-seqs`; with neither, sequences count as
    many and the op also gets `narrow_value_tile` (64 for wgmma, 32 for
    mma.sync) and `narrow_below_blocks`, so that the entry point picks the
    narrow tile at run time for packs of few sequences. With `split-chains`
    (the default) the scan instead takes its widest tile whatever the
    sequence count, and the op gets `split_target_blocks = sm-count` and
    `warmup_bits`: packs of few long sequences are cut into segments at run
    time (measured at 1x32768: 0.58 ms against 1.08 with V tile 64 unsplit;
    docs/delta-rule.md says how a segment's state is warmed up); every
    `gdn_kernel.delta_rule_grad` gets the same two attributes, so that the
    backward's two scans split by the same rule (and neither without
    `split-chains`), and with `wgmma` its forward recomputation and reverse
    scan run on wgmma (`scan = "wgmma"`). mma.sync
    tiles whose scan needs more shared memory than `shared-bytes` (the
    target's per-block limit) are skipped, down to V tile 32 with one stage
    (82 KiB at K = 128); when none fits, the pass fails and says what the
    smallest needs. It also sets `scores`: with the wgmma scan at V tile
    128 and no narrow tile `"producer"` (the scan's block gets a warpgroup
    that computes `P`; on the H200 faster than the alternatives for one,
    two and four value heads per key head, whole or split chains), else
    the prepare kernel's `P`; the `scores` option forces one choice. Every
    `gdn_kernel.prologue` gets 8-byte vectors (`vector_bytes = 8`) where its
    conv input is twice as wide as q, k and v (f32 beside bf16 or f16) and
    a key head still fits a warp's lanes (16-byte vectors there need more
    than the 128 registers a thread of 512 may hold and spill), else 16
    (`prologue-vector-bytes` forces one), and blocks of 512 threads when
    whole blocks cover its channels' lanes (one block of 16 warps per SM,
    measured faster than two of 256 on the H200), else 256 when they do,
    else keeps its own. The choice is the op's attributes, which the
    emitted kernel's banner repeats.
  }];
  let dependentDialects = ["::mlir::gdn::kernel::GdnKernelDialect"];
  let options = [
    Option<"smCount", "sm-count", "int64_t", /*default=*/"132",
           "Streaming multiprocessors of the target GPU (H200: 132)">,
    Option<"expectedSeqs", "expected-seqs", "int64_t", /*default=*/"0",
           "Sequences per pack when the packing type does not say; 0: "
           "unknown">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"true",
           "The target has sm_90a's wgmma and TMA (Hopper); false picks the "
           "mma.sync scan, which runs on any sm_80+ GPU">,
    Option<"splitChains", "split-chains", "bool", /*default=*/"true",
           "Cut long sequences into segments at run time when the sequences "
           "alone make too few scan blocks; false picks a narrower tile "
           "instead (one block still walks each whole chain)">,
    Option<"sharedBytes", "shared-bytes", "int64_t", /*default=*/"232448",
           "Dynamic shared memory a block may use on the target (H100 / "
           "H200: 232448; A100: 166912; sm_86 / sm_89: 101376): mma.sync "
           "scan tiles that need more are not chosen">,
    Option<"warmupBits", "warmup-bits", "int64_t", /*default=*/"24",
           "A split segment's warm-up leaves out at most 2^-warmup-bits of "
           "the state before it; 0: every segment runs from its sequence's "
           "start (exact)">,
    Option<"scores", "scores", "std::string", /*default=*/"\"auto\"",
           "Which kernel computes each chunk's P: auto (the rule above), or "
           "prepare, scan or producer for every delta rule (a choice its "
           "tile cannot take is an error of the op's verifier)">,
    Option<"prologueVectorBytes", "prologue-vector-bytes", "int64_t",
           /*default=*/"0",
           "Bytes of q, k, v a prologue thread owns: 0 (the rule above), or "
           "8 or 16 for every prologue (8 where the op's verifier allows "
           "it, else 16)">
  ];
}

def GdnMergeProjectionGrads : Pass<"gdn-merge-projection-grads"> {
  let summary = "One gradient GEMM for the projections of one input whose cotangents a kernel writes";
  let description = [{
    The backward of a layer whose input `x` feeds several projections
    (`gdn-split-projections` makes four of Qwen3-Next's two, and Qwen3.5 has
    four) sums one `gdn.linear_grad` per projection:
    `dx = dy_1 W_1 + dy_2 W_2 + ...`, each term a GEMM that reads and
    writes all of `dx` again (on the GPU: 256 MB at 32K tokens of hidden
    2048) and whose weight gradient reads all of `x` again. Since

    ```
    dy_1 W_1 + dy_2 W_2 = [dy_1 | dy_2] [W_1; W_2]
    [dy_1 | dy_2]^T x   = [dW_1; dW_2]
    ```

    the linear_grads of one `x` whose `dx` are only added together become
    one `gdn.linear_grad` of the cotangents stacked as columns
    (`tensor.insert_slice` into a `[T, sum of features]` zero tensor) and
    the weights stacked as rows; each weight gradient is a row slice of
    its result. Only cotangents that their kernel can write as columns of
    the stack in place join (`gdn_kernel.prologue_grad`'s mixed_qkv, a and
    b gradients, `gdn_kernel.gated_rmsnorm_grad`'s z gradient, flattened
    to one row a token by `tensor.collapse_shape`: `writesStridedRows`),
    so the stack costs no copy on the GPU; where two or more such terms
    share `x`, they merge and the others stay as they were, provided each
    one's columns start where its kernel can store
    (`getStridedRowsAlignment`: 16 bytes for vector stores). Weights that are consecutive row slices of one
    tensor (the parts `gdn-split-projections` slices out of a regrouped
    weight) stack as one slice of it, and a stack of whole row slices of
    the merged weight gradient inserted back into a zero tensor becomes
    that slice. The arithmetic is the same sums in another order: one
    bf16 rounding of `dx` instead of one per term. Runs after `gdn-fuse`.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numMerged", "merged", "gdn.linear_grad ops merged into stacked ones">
  ];
}

#endif // GDN_DIALECT_GDNKERNEL_TRANSFORMS_PASSES_TD
