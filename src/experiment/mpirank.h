/*
 * mpirank.h - which MPI rank a process is, from the environment its launcher gave it: Open MPI
 * (OMPI_COMM_WORLD_RANK, _SIZE, OMPI_MCA_ess_base_jobid), PMIx (PMIX_RANK, PMIX_NAMESPACE),
 * MPICH's Hydra (PMI_RANK, PMI_SIZE; Hydra names no job) and Slurm's srun (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_JOB_ID.SLURM_STEP_ID; only inside a job step: a batch script also has
 * SLURM_PROCID). Used by `tally collect` (an experiment per job, a sub-experiment per rank) and
 * by the collector (the `mpi` record of a rank's log). Async-signal-safe: it only reads the
 * array it is given. Depends on libc.
 */
#ifndef TALLY_EXPERIMENT_MPIRANK_H
#define TALLY_EXPERIMENT_MPIRANK_H

#include <stdint.h>

typedef struct exp_mpi_rank {
    uint64_t rank, size;  /* size 0: not said */
    const char *launcher; /* "openmpi", "pmix", "hydra", "slurm" */
    char job[128];        /* the job's name as the launcher gives it; "" when it gives none */
} exp_mpi_rank_t;

/* 1 and *out when envp (NULL-terminated) names a rank, else 0. */
int exp_mpi_rank(char *const *envp, exp_mpi_rank_t *out);

#endif
