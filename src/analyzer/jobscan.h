/*
 * jobscan.h - the analysis as an MPI job: `mpirun -np K tally print ... EXP` splits the processes
 * of the experiments (a job's ranks) among the K analysis processes; each aggregates its share with
 * the same engine, and the partial results are merged into the first one (rank 0), which runs the
 * commands and prints exactly what one `tally print` prints. The others serve its aggregations:
 * before each, rank 0 sends them its selections (eng_request_write), each scans its share and sends
 * back its partial result (eng_partial_write) in chunks, which rank 0 merges in rank order
 * (eng_merge_*) after its own scan. Views that read events in time order themselves
 * (eng_foreach_event, the timelines) read them on rank 0.
 *
 * Transport: tally is not linked with MPI. Launched under mpirun (the launcher's environment names
 * a rank: experiment/mpirank.h), job_start dlopens the MPI library of the launcher's
 * implementation (libmpi.so.40 for Open MPI and PMIx launchers, libmpich.so.12 for Hydra; the
 * environment variable TALLY_MPI_LIB names another) and calls MPI_Init_thread (funneled: only
 * the main thread calls MPI). Messages are point-to-point sends of bytes between rank 0 and each
 * other rank (a length, then the bytes); an analysis process that fails tells rank 0 why, and rank
 * 0 reports it as its error.
 *
 * Use: job_start (NULL *job: not a job of several processes: a plain analysis); rank 0: open the
 * session, job_attach, run the commands, job_finish; the others: open the session, job_serve;
 * everyone: job_end. Library code: errors are returned, nothing is printed. Not thread-safe.
 * Depends on the session and the engine, libdl.
 */
#ifndef TALLY_ANALYZER_JOBSCAN_H
#define TALLY_ANALYZER_JOBSCAN_H

#include "analyzer/session.h"
#include "base/err.h"

typedef struct job job_t;

/* *job NULL when this process is not one of several of an MPI job (no launcher, or one process),
 * else the job started (MPI initialized). An error when MPI cannot be loaded or started. */
int job_start(job_t **job, tally_err_t *err);
int job_rank(const job_t *j);
int job_size(const job_t *j);
/* Rank 0, its session opened (s NULL: it could not be): waits for every other process to open its
 * own, gives each its share and makes s's aggregations the job's. */
int job_attach(job_t *j, ses_t *s, tally_err_t *err);
/* Rank 0, at the end: tells the others to stop. */
int job_finish(job_t *j, tally_err_t *err);
/* The other ranks: serves rank 0's aggregations until it says stop. s NULL: the session could not
 * be opened, open_error says why (sent to rank 0). */
int job_serve(job_t *j, ses_t *s, const char *open_error, tally_err_t *err);
/* Rank 0: a line per analysis process, its share (processes of each experiment) and the bytes it
 * sent, into buf (for TALLY_JOB_STATS). */
int job_describe(const job_t *j, char *buf, size_t n);
/* MPI_Finalize; j may be NULL. */
void job_end(job_t *j);

#endif
