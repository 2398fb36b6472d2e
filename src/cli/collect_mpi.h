/*
 * collect_mpi.h - what `tally collect -M on` adds (collect_mpi.c): the MPI wrapper library
 * preloaded beside the collector, and, when tally collect itself runs as a rank (`mpirun -np 4
 * tally collect -M on ./app`), the one experiment of the whole job that every rank's tally
 * collect agrees on, with this rank's experiment in it as _r<rank>.tally.
 */
#ifndef TALLY_CLI_COLLECT_MPI_H
#define TALLY_CLI_COLLECT_MPI_H

#include <stddef.h>

#include "experiment/mpirank.h"

/* libtally-mpi.so beside the collector library: 0 and its path in out, or -1 (said). */
int collect_mpi_lib(const char *collector, char *out, size_t cap);

/* The job's experiment: -o NAME in DIR as given (made by the first rank), else
 * <prog>.<n>.tally chosen by the first rank of the job to come (a claim file, .<prog>.<job>
 * .tally-job, created exclusively, tells the others) with a log holding a `job` record; then this rank's directory
 * <top>/_r<rank>.tally, created, in exp. Returns 0, or -1 (said). */
int collect_mpi_job_dir(const char *directory, const char *output, const char *prog,
                        const exp_mpi_rank_t *mr, char *top, size_t tcap, char *exp,
                        size_t ecap);

/* After the rank's program ended: rank 0 removes the claim file (every rank has started). */
void collect_mpi_job_end(const char *directory, const char *prog, const exp_mpi_rank_t *mr);

#endif
