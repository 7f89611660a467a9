#!/bin/sh
# Runs gdnrt-launch through the situations a job meets and prints one line
# per scenario: the exit status, and whether it ended promptly.
launch="$1"

run() { # run NAME ARGS... -> "NAME: status=S fast=yes|no"
  name="$1"; shift
  start=$(date +%s)
  "$launch" "$@" >/dev/null 2>"$tmp/$name.err"
  status=$?
  elapsed=$(( $(date +%s) - start ))
  fast=no; [ "$elapsed" -lt 20 ] && fast=yes
  echo "$name: status=$status fast=$fast"
  sed "s/^/$name stderr: /" "$tmp/$name.err"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every rank sees its rank, the world size and one shared rendezvous.
"$launch" -n 3 -- sh -c 'echo "rank $GDNRT_RANK local $GDNRT_LOCAL_RANK of $GDNRT_WORLD_SIZE at $GDNRT_RENDEZVOUS"' | sort
"$launch" -n 2 --rendezvous tcp -- sh -c 'echo "tcp rank $GDNRT_RANK at $GDNRT_RENDEZVOUS"' | sort
run ok -n 4 -- true
# A failing rank stops the others, which would otherwise wait a minute.
run failing -n 3 -- sh -c 'if [ "$GDNRT_RANK" = 1 ]; then exit 3; fi; exec sleep 60'
run killed -n 2 -- sh -c 'if [ "$GDNRT_RANK" = 0 ]; then kill -9 $$; fi; exec sleep 60'
run timeout -n 2 --timeout 1 -- sleep 60
run missing -n 2 -- /nonexistent/program
run usage -- true
run badcount -n zero -- true
# --threads: one process whose ranks are threads; no rank of its own (an
# outer launcher's is dropped), a fresh threads: rendezvous.
GDNRT_RANK=7 GDNRT_LOCAL_RANK=7 "$launch" -n 3 --threads -- sh -c 'echo "threads: rank=${GDNRT_RANK-unset} local=${GDNRT_LOCAL_RANK-unset} of $GDNRT_WORLD_SIZE at $GDNRT_RENDEZVOUS"'
"$launch" -n 2 --threads -- sh -c 'echo "threads: one process"'
run threads-failing -n 2 --threads -- sh -c 'exit 3'
run threads-timeout -n 4 --threads --timeout 1 -- sleep 60
run threads-rendezvous -n 2 --threads --rendezvous tcp -- true
