#!/usr/bin/env bash
# mpirun.sh NP COMMAND...: runs COMMAND as NP ranks of one Open MPI job on this machine the way
# the tests need it: as root if need be (CI containers), more ranks than cores, loopback only,
# and no single-copy shared-memory mechanism (CMA needs ptrace rights containers often lack).
set -u
np=$1
shift
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$@"
