#!/usr/bin/env bash
# benchmarks/mpi/run.sh BUILD_DIR [ROUNDS]: the MPI layer's cost per message,
# side by side with the bare MPI calls, ROUNDS (default 5) interleaved runs of
#   bare       ferret-mpi-bare (no ferret at all)
#   layer-off  ferret-mpi-layer, FERRET_BACKEND unset (wrappers pass through)
#   recording  ferret-mpi-layer, FERRET_BACKEND=discard (regions and messages
#              recorded, drained, dropped by the backend)
# on 1 rank sending to itself (message_overhead.cpp says why). Prints every
# run's line per configuration.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [ROUNDS]}
rounds=${2:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_hwloc_base_binding_policy=none
for ((round = 1; round <= rounds; ++round)); do
  echo "bare:      $(mpirun -np 1 "$build/bin/ferret-mpi-bare")"
  echo "layer-off: $(env -u FERRET_BACKEND mpirun -np 1 "$build/bin/ferret-mpi-layer")"
  echo "recording: $(FERRET_BACKEND=discard mpirun -np 1 "$build/bin/ferret-mpi-layer" 2>/dev/null)"
done
