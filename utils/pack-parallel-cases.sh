#!/usr/bin/env bash
#===- pack-parallel-cases.sh - the parallel GPU cases as one small tar -----===#
#
#   utils/pack-parallel-cases.sh CASES OUT.tar [PATTERN]
#
# utils/prepare-parallel-gpu-tests.sh writes about 300 MB of cases, more than
# one call to the GPU machine carries. Most of it repeats: every way of
# distributing a layer has the same global inputs and float64 results
# (ranks/all). This copies the cases whose names match PATTERN (a grep -E
# pattern; default every case) under CASES/cases, links every file whose
# bytes another file already has to that file, and writes a tar, which keeps
# each linked file once: the 28 train cases of the two small layers came
# to 46 MB. There:
#
#   mkdir -p /tmp/par && tar xf OUT.tar -C /tmp/par && utils/gpu-parallel.sh /tmp/par
#
#===------------------------------------------------------------------------===#
set -euo pipefail

cases="${1:?usage: pack-parallel-cases.sh CASES OUT.tar [PATTERN]}/cases"
out="${2:?usage: pack-parallel-cases.sh CASES OUT.tar [PATTERN]}"
pattern="${3:-.}"
[ -d "$cases" ] || { echo "error: $cases is not a folder of prepared cases" >&2; exit 1; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/cases"
found=0
for dir in "$cases"/*/; do
  name=$(basename "$dir")
  grep -qE "$pattern" <<<"$name" || continue
  cp -r "$dir" "$stage/cases/$name"
  found=$((found + 1))
done
[ "$found" -gt 0 ] || { echo "error: no case under $cases matches '$pattern'" >&2; exit 1; }
python3 - "$stage/cases" <<'PY'
import hashlib, os, sys
first = {}
for root, _, files in os.walk(sys.argv[1]):
    for name in sorted(files):
        path = os.path.join(root, name)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest in first:
            os.remove(path)
            os.link(first[digest], path)
        else:
            first[digest] = path
PY
tar cf "$out" -C "$stage" cases
echo "$found cases, $(du -h "$out" | cut -f1) in $out"
