#!/usr/bin/env bash
# Starts one process per pipeline rank of an emitted CUDA program with the
# environment a launcher gives it: the one launcher of the multi-process lit
# tests (lit's %launch_ranks; tests/lit/runtime/nccl-*.test and the
# tests/lit/codegen/cuda-* tests over the host NCCL):
#   launch_ranks.sh LAUNCHER [--only "R ..."] N LOG EXE ARGS...
# LAUNCHER is one of
#   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
#   slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_NODELIST
#             (compressed: its first host, 127.0.0.1, is rank 0's), MASTER_PORT
#   ompi      OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, and --master-addr and
#             --master-port (Open MPI exports no address)
#   flags     --rank, --world-size, --local-rank, --master-addr, --master-port
# runs `EXE ARGS` for every rank r (or only those listed) in the background,
# rank r's output in LOG.r; the port is a free one unless PIPERT_NCCL_ID_FILE
# is set. Waits for every rank, prints each failed one's exit status and
# output, and exits 0 only if all exited 0. A rank still running after 60 s
# is killed (status 124): a hang fails the test, never stalls the suite.
set -u
launcher=$1
shift
only=""
if [ "$1" = --only ]; then
  only=$2
  shift 2
fi
n=$1 log=$2 exe=$3
shift 3
port=""
if [ -z "${PIPERT_NCCL_ID_FILE:-}" ]; then
  free_port='import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  port=$(python3 -c "$free_port")
fi
# Nothing of the test's own environment may leak in as another launcher's.
clean=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT
       -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_LOCALID -u SLURM_STEP_NODELIST
       -u SLURM_JOB_NODELIST -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE
       -u OMPI_COMM_WORLD_LOCAL_RANK)
pids=()
for r in ${only:-$(seq 0 $((n - 1)))}; do
  case $launcher in
    torchrun) vars=(RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 ${port:+MASTER_PORT=$port}); flags=() ;;
    slurm) vars=(SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=0 "SLURM_STEP_NODELIST=127.0.0.[1-4]"
                 SLURM_JOB_NODELIST=unresolvable-node ${port:+MASTER_PORT=$port}); flags=() ;;
    ompi) vars=(OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=0)
          flags=(--master-addr 127.0.0.1 ${port:+--master-port $port}) ;;
    flags) vars=(); flags=(--rank $r --world-size $n --local-rank 0 --master-addr 127.0.0.1 ${port:+--master-port $port}) ;;
    *) echo "unknown launcher $launcher"; exit 2 ;;
  esac
  "${clean[@]}" "${vars[@]}" timeout -k 5 60 "$exe" "${flags[@]}" "$@" > "$log.$r" 2>&1 &
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
