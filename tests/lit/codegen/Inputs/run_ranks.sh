#!/usr/bin/env bash
# Starts one process per pipeline rank of an emitted CUDA program, as torchrun
# would, for cuda-hostsim-nccl.test:
#   run_ranks.sh [--only "R ..."] N LOG EXE ARGS...
# runs `EXE ARGS` with RANK=r WORLD_SIZE=N LOCAL_RANK=0 for every rank r (or
# only those listed), all in the background, rank r's output in LOG.r. Unless
# PIPERT_NCCL_ID_FILE is set, rank 0 hands out the NCCL id on 127.0.0.1 at
# $MASTER_PORT (default: a free port). Waits for every rank, prints each failed
# one's exit status and output, and exits 0 only if all exited 0. A rank still
# running after 60 s is killed (status 124): a hang fails the test, never
# stalls the suite.
set -u
only=""
if [ "$1" = --only ]; then
  only=$2
  shift 2
fi
n=$1 log=$2
shift 2
if [ -z "${PIPERT_NCCL_ID_FILE:-}" ]; then
  export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
  free_port='import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  export MASTER_PORT="${MASTER_PORT:-$(python3 -c "$free_port")}"
fi
pids=()
for r in ${only:-$(seq 0 $((n - 1)))}; do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 timeout -k 5 60 "$@" > "$log.$r" 2>&1 &
  pids+=("$r:$!")
done
status=0
for entry in "${pids[@]}"; do
  wait "${entry#*:}"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "rank ${entry%%:*}: exit status $rc"
    cat "$log.${entry%%:*}"
    status=1
  fi
done
exit $status
