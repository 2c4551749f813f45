# tests/mpi-env.sh - sourced by the scripts that run programs under mpiexec
# (tests/test-mpi.sh, samples/test-mpi-render.sh); needs $srcdir.
#
# Open MPI on one machine, in a container, as root, with fewer cores than
# ranks: shared memory and loopback only, no single-copy mechanism (CMA
# needs ptrace rights a container often lacks), no remote launcher, no
# binding (ranks share the cores), oversubscription allowed and no
# warnings about unused network devices.
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_plm_rsh_agent=false
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset SF_MPI_PROGRESS SF_TRACE SF_STATS
# ASan builds: Open MPI's own libraries leave memory behind at exit; those
# leaks, and only those, are suppressed (tests/mpi-lsan.supp).
# Their stacks are taken by the slow unwinder: Open MPI is built without
# frame pointers, and the fast one stops at its first frame, naming no
# library a suppression could match.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$srcdir/tests/mpi-lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
