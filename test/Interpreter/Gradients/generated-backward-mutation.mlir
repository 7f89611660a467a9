// The comparison of a generated backward with the interpreter's sweep can
// fail: a backward with one attribute changed by sed (the gates' VJP taken
// without allow_neg_eigval, so beta' loses its factor 2) fails on exactly
// the gradient that reads it (b, argument #5), and a P = 4 backward whose
// replicated final-state cotangents are summed over the ranks
// (gdn_comm.all_reduce in place of gdn_comm.replicated_to_partial, so the
// loss counts them 4 times) fails on the gradients they reach. gdn-run
// exits non-zero (`not`) when a comparison fails.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-generate-backward %S/../../Transforms/Inputs/cp_core.mlir -o %t/core.mlir
// RUN: sed -e '/gdn.gates_grad/s/ {allow_neg_eigval = true}//' %t/core.mlir > %t/mutant.mlir
// RUN: not gdn-run --compare %t/mutant.mlir %t/core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=GATES
// GATES:      gradient #4: {{.*}}  ok
// GATES-NEXT: gradient #5: {{.*}}  FAIL
// GATES-NEXT: gradient #6: {{.*}}  ok
//
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core.mlir -o %t/chunk4.mlir
// RUN: grep -q gdn_comm.replicated_to_partial %t/chunk4.mlir
// RUN: sed -e 's/gdn_comm.replicated_to_partial/gdn_comm.all_reduce/' %t/chunk4.mlir > %t/chunk4-mutant.mlir
// RUN: not gdn-run --compare %t/chunk4-mutant.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=REPLICATED
// REPLICATED: comparing @core (generated backward, 4 rank(s)) against @core (1 rank(s))
// REPLICATED: gradient #8: {{.*}}  FAIL
//
// A program without its generated functions is refused with the fix.
// RUN: not gdn-run %S/../../Transforms/Inputs/cp_core.mlir --run-backward --seqlens=3,4 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: --run-backward needs @core_forward and @core_backward in {{.*}}cp_core.mlir; make them with gdn-opt --gdn-generate-backward
