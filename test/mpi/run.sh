#!/bin/sh
# run.sh MPIRUN TEST - runs the MPI test under `mpirun -np 4` the way CI can: as root, on
# more ranks than cores, in a container. Twice: with MPI_THREAD_MULTIPLE (collectives on
# the streams' threads) and MPI_THREAD_SINGLE (collectives in the calling thread).
#   --oversubscribe --allow-run-as-root   4 ranks on a 2-core machine, as root
#                                         (docs/design/COMM.md "Testing")
#   --mca mpi_yield_when_idle 1           Open MPI busy-polls otherwise
#   btl_vader_single_copy_mechanism=none  containers forbid the cross-process copy (CMA)
# Exits with the first failing run's status, 77 when both runs skipped (a GPU build
# without a device); GP_TEST_TIMEOUT seconds per run (default 300).
mpirun=$1
bin=$2
if [ -z "$mpirun" ] || [ ! -x "$bin" ]; then
  echo "usage: $0 MPIRUN TEST" >&2
  exit 2
fi
OMPI_MCA_btl_vader_single_copy_mechanism=none
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
  OMPI_MCA_rmaps_base_oversubscribe
runner=""
if command -v timeout >/dev/null 2>&1; then runner="timeout ${GP_TEST_TIMEOUT:-300}"; fi
status=0
skips=0
for level in multiple single; do
  echo "== test_comm_mpi [mpirun -np 4, MPI_THREAD_${level}] =="
  GP_TEST_MPI_THREAD=$level $runner "$mpirun" --oversubscribe --allow-run-as-root -np 4 \
    --mca mpi_yield_when_idle 1 "$bin"
  rc=$?
  if [ $rc -eq 77 ]; then
    skips=$((skips + 1))
  elif [ $rc -ne 0 ] && [ $status -eq 0 ]; then
    status=$rc
  fi
done
if [ $status -ne 0 ]; then
  echo "MPI: failed (exit $status)"
elif [ $skips -eq 2 ]; then
  echo "MPI: skipped"
  status=77
else
  echo "MPI: passed"
fi
exit $status
