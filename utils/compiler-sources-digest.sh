#!/usr/bin/env bash
#===- compiler-sources-digest.sh - which compiler sources a tree was built from
#
#   utils/compiler-sources-digest.sh
#
# Prints a digest of the sources the compiler's tools and libraries are
# built from (include/, lib/, tools/, runtime/): utils/prepare-gpu-lit.sh
# stamps a carried tree with it, and utils/gpu-lit.sh refuses a tree whose
# stamp differs from the checkout it runs the tests of (tools built before
# a change would fail the tests of that change, or pass them wrongly).
#
#===------------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
find include lib tools runtime -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
  | LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -c1-16
