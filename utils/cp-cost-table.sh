#!/usr/bin/env bash
#===- cp-cost-table.sh - the bytes-per-rank table of docs/parallel.md -----===#
#
# Prints, for each example layer, T in {8K, 32K, 128K} and P in {2, 4, 8},
# what gdn-context-parallel's cost model (mode=auto) estimates per rank under
# headwise and chunkwise CP (with the state chain chain=auto picks), and
# auto's choice, as a markdown table. The
# numbers come from the pass's own remarks (report-costs=true), so the table
# in docs/parallel.md is the model the compiler runs; test/Docs checks that
# they agree.
#
# Usage: utils/cp-cost-table.sh [build-dir]
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-${BUILD_DIR:-$root/build}}/bin"

echo "| layer | T | P | headwise MB | headwise us | chunkwise MB | chunkwise GFLOP | chunkwise us | chain | auto |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for example in qwen3_next_80b_a3b_layer qwen3_5_layer; do
  for tokens in 8192 32768 131072; do
    for ranks in 2 4 8; do
      remark=$("$bin/gdn-opt" --gdn-expand-layer \
        "--gdn-context-parallel=ranks=$ranks mode=auto tokens=$tokens report-costs=true" \
        "$root/examples/$example.mlir" -o /dev/null 2>&1 | grep -o 'T = .*')
      # T = 8192, P = 2: headwise sends A MB per rank (B us); chunkwise sends
      # C MB and computes D GFLOP more (E us, F chain); auto chooses M
      sed -E 's/^T = ([0-9]+), P = ([0-9]+): headwise sends ([0-9.]+) MB per rank \(([0-9.]+) us\)[^;]*; chunkwise sends ([0-9.]+) MB and computes ([0-9.]+) GFLOP more \(([0-9.]+) us, ([a-z-]+) chain\); auto chooses ([a-z]+)$/| '"$example"' | \1 | \2 | \3 | \4 | \5 | \6 | \7 | \8 | \9 |/' <<<"$remark"
    done
  done
done
