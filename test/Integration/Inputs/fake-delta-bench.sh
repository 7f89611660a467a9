#!/bin/sh
# A stand-in for delta_rule_bench in forward-ab.test: prints what the real
# bench prints for `digest`, `check` and `targets`, by the name it is
# copied under (bench_base, bench_fast: same bits and 2.3% faster,
# bench_wrong: other bits and a failing check).
name=$(basename "$0")
case "$1" in
  digest)
    [ "$name" = bench_wrong ] && bits=0bad || bits=c338
    echo "DIGEST gqa16x32 wgmma               o $bits final 7325 workspace 6ffa"
    echo "DIGEST mha32 wgmma                  o 9394 final ca32 workspace 2ece" ;;
  check)
    echo "PASS: gqa16x32 wgmma vt128: o relative RMS 3.1e-03"
    if [ "$name" = bench_wrong ]; then
      echo "FAIL: gqa16x32 wgmma vt128: each sequence alone == packed"
      exit 1
    fi ;;
  targets)
    [ "$BENCH_SETTLE" = cold ] || { echo "targets not settled cold" >&2; exit 2; }
    case "$name" in bench_fast) t=0.4300 ;; *) t=0.4400 ;; esac
    echo "BENCH gqa16x32 default   8192x4       $t ms (min 0.4300 max 0.4600; prepare 0.1445, scan 0.2991 [384 thr, 214 KiB]; graph 0.4478)  floor 243 us = 55.2%" ;;
  *) exit 2 ;;
esac
