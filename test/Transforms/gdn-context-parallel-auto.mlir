// gdn-context-parallel mode=auto: the cost model picks a mode per core and
// records it on the distributed delta rule; the result equals P = 1 either
// way. Heads that P does not divide leave chunkwise as the only choice;
// otherwise the cheaper estimate wins, and the machine options move it (a
// slow tensor core makes chunkwise's summary pass expensive).
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=auto report-costs=true" %S/Inputs/cp_core_slow_decay.mlir -o %t/auto4.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=CHUNKWISE < %t/auto4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/auto4.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=auto tflops=0.000001" %S/Inputs/cp_core_slow_decay.mlir -o %t/slow.mlir
// RUN: FileCheck %s --check-prefix=HEADWISE < %t/slow.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/slow.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-context-parallel="ranks=3 mode=auto tflops=0.000001 report-costs=true" %S/Inputs/cp_core_slow_decay.mlir -o %t/auto3.mlir 2>&1 | FileCheck %s --check-prefix=INDIVISIBLE
// RUN: FileCheck %s --check-prefix=CHUNKWISE < %t/auto3.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/auto3.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,10 | FileCheck %s --check-prefix=SAME

// The machine options: a link this fast makes headwise's all_to_alls cheaper
// than chunkwise's summary FLOPs; the log-depth scan's 4 collectives (the
// halo, 2 rounds, the shift) cost more than headwise's 2 at 20 us each, and
// nothing at 0 us.
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=auto link-gbps=1000000" %S/Inputs/cp_core_slow_decay.mlir | FileCheck %s --check-prefix=HEADWISE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=auto chain=scan" %S/Inputs/cp_core_slow_decay.mlir | FileCheck %s --check-prefix=HEADWISE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=auto chain=scan collective-us=0" %S/Inputs/cp_core_slow_decay.mlir | FileCheck %s --check-prefix=CHUNKWISE

// chain=auto (the default) prices the two chains alike: on a link this slow
// the summaries' bytes decide: at P = 2 the all-gather sends 1 summary and
// the scan 1 and a state; at P = 4 the all-gather 3, the scan 2 and a state
// (a state is half a summary here, K = V).
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise link-gbps=0.001" %S/Inputs/cp_core_slow_decay.mlir | FileCheck %s --check-prefix=GATHER
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise link-gbps=0.001" %S/Inputs/cp_core_slow_decay.mlir | FileCheck %s --check-prefix=SCAN
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=auto link-gbps=0.001 report-costs=true" %S/Inputs/cp_core_slow_decay.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCAN-REMARK
// GATHER: gdn_comm.state_exchange
// GATHER-NOT: chain<scan>
// GATHER: gdn.delta_rule
// SCAN: gdn_comm.state_exchange {{.*}}chain<scan>
// SCAN-REMARK: us, scan chain); auto chooses chunkwise

// The dynamic token count is priced at 32768 tokens (8192 per rank):
// headwise 8192 x (64 + 32 + 32) x 8 bytes x 3/4; chunkwise 3 x 64 x 8 halo
// bytes plus 3 summaries of 16 x (4 + 4) x 8 bytes.
// REMARK: remark: gdn-context-parallel: T = 32768, P = 4: headwise sends 6.29 MB per rank ({{.*}} us); chunkwise sends 0.00 MB and computes 0.07 GFLOP more ({{.*}} us, all-gather chain); auto chooses chunkwise
// INDIVISIBLE: headwise sends {{.*}} but the heads do not divide; chunkwise {{.*}} auto chooses chunkwise

// CHUNKWISE: gdn_comm.state_exchange
// CHUNKWISE: gdn.delta_rule {{.*}}{gdn.cp_mode = "chunkwise"}
// HEADWISE: gdn_comm.all_to_all
// HEADWISE: gdn.delta_rule {{.*}}{gdn.cp_mode = "headwise"}

// SAME-NOT: FAIL
// SAME: result #2: {{.*}} ok
