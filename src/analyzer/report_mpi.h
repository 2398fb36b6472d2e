/*
 * report_mpi.h - report models of MPI jobs (report_mpi.c): a job recorded with `tally collect
 * -M on` is one experiment whose processes carry their rank (exp_mpi_rank_of: the `mpi` record
 * of the rank's first image, inherited by its descendants). Every view of the session already
 * covers the whole job; these models add the rank as a dimension:
 *   -rank_select  the threads of some ranks (an ordinary thread selection, so every view
 *                 honours it);
 *   -rank_list    per rank, the sums of every metric over its threads, and what it dropped;
 *   imbalance     per function (inclusive) and per MPI call site (the program's frame that
 *                 called MPI, never the wrapper), a metric's min, mean and max over the ranks
 *                 and the rank with the max, as mpiP reports. One aggregation for all ranks:
 *                 memory grows with (functions or call sites) x ranks, never with events;
 *                 per call site also the waits charged to late arrivals at collectives (a
 *                 few words per collective) and to late senders (56 bytes per message of
 *                 the selection while it is computed).
 * Ownership and errors as in report.h: models own their arrays, vectors are valid until the
 * engine computes again; negative TALLY_E* codes with a message.
 */
#ifndef TALLY_ANALYZER_REPORT_MPI_H
#define TALLY_ANALYZER_REPORT_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/session.h"
#include "base/err.h"

/* The ranks of the session, ascending, without repeats (rank numbers, not rank + 1); *n 0 when
 * no process is a rank. *ranks allocated. */
int rep_mpi_rank_numbers(ses_t *s, uint64_t **ranks, size_t *n, tally_err_t *err);

/* Selects the threads of the ranks in list ("all", "0", "1,3-5"): TALLY_EUSAGE for bad syntax,
 * a rank the job does not have, or an experiment without ranks. */
int rep_mpi_select_ranks(ses_t *s, const char *list, tally_err_t *err);

typedef struct rep_rank {
    uint64_t rank;
    uint32_t nprocs, nthreads;
    const char *host;      /* of its first process */
    uint64_t dropped;      /* what the collector could not record, every kind: clock samples
                            * (writer busy, disk full, kernel ring full), counter samples
                            * (lost, dropped), traced records (by kind, the API's: MPI calls);
                            * saturating */
    const uint64_t *value; /* [eng_nmetrics]: sums over its selected threads */
} rep_rank_t;

typedef struct rep_ranks {
    rep_rank_t *ranks;
    size_t n;
    uint64_t *values; /* owned: the ranks' vectors */
} rep_ranks_t;

/* Aggregates under the current selection and sums each rank's threads. */
int rep_mpi_ranks(ses_t *s, rep_ranks_t *out, tally_err_t *err);
void rep_mpi_ranks_free(rep_ranks_t *r);

typedef struct rep_imb_row {
    const char *name;  /* function, or "MPI_X from caller + 0xOFF" for a call site (owned) */
    uint64_t min, max, sum; /* over all ranks of the job (a rank without the row counts 0) */
    double mean;
    uint64_t max_rank, min_rank;
    /* call sites: the wait (ns) other members spent at a collective where this call site
     * arrived last, summed over ranks (late), the most one rank caused (late_max) and that rank
     * (late_rank; meaningful when late_max > 0) */
    uint64_t late, late_max, late_rank;
    /* call sites of sends: the receivers' wait (ns) because a send from here started after
     * the receive's completing call did (late senders), summed over the sending ranks
     * (late_send), the most of one rank (late_send_max) and that rank (late_send_rank) */
    uint64_t late_send, late_send_max, late_send_rank;
} rep_imb_row_t;

typedef struct rep_imb {
    rep_imb_row_t *rows; /* by max, descending */
    size_t n;
    size_t nranks;
    int metric;
    /* call sites: collectives (barrier, all-to-all ones) charged to the last arrival,
     * and those left out (a rank missing under the selection, functions that differ) */
    uint64_t late_matched, late_skipped;
    /* call sites: messages whose send and receive were paired, those left unpaired (a rank
     * missing under the selection, a message still in flight at the end), and the receives
     * that waited for a late sender */
    uint64_t ls_matched, ls_unmatched, ls_waits;
    /* collectives and messages on communicators without a job-wide id (made by calls not
     * traced, intercommunicators): left out */
    uint64_t late_unknown;
    /* the hosts the ranks ran on, and how much of the late times (ns, both kinds) compared
     * ranks on different hosts, whose clocks are not synchronized */
    size_t nhosts;
    uint64_t late_cross;
} rep_imb_t;

/* Imbalance of metric over the ranks: callsites 0 per function (inclusive), 1 per MPI call
 * site. With call sites, also late arrival (report_mpi.c): at every MPI_Barrier and all-to-all
 * collective over a communicator (MPI_COMM_WORLD and those made by MPI_Comm_split, _dup,
 * _create, MPI_Cart_create, _sub, MPI_Graph_create) the other members' wait for the last one
 * to enter is charged to that rank's call site (Scalasca's wait at N x N, mpiP's late
 * arrival); and late senders: a receive's wait for a send that started after it is charged to
 * the send's call site and rank (Scalasca's Late Sender). Times of ranks on different hosts
 * are compared as if their clocks agreed (nhosts, late_cross say how much). */
int rep_mpi_imbalance(ses_t *s, int metric, int callsites, rep_imb_t *out, tally_err_t *err);
void rep_mpi_imbalance_free(rep_imb_t *m);

/* The communication matrix: the point-to-point messages and bytes each rank sent each other
 * rank (the wrappers' `note name=mpi_peer` records, written at MPI_Finalize: a rank that did
 * not reach it has none; the whole run, whatever the selection). */
typedef struct rep_mpi_pair {
    uint64_t from, to, msgs, bytes;
} rep_mpi_pair_t;

typedef struct rep_mpi_matrix {
    rep_mpi_pair_t *pairs; /* by from, then to; only pairs with messages */
    size_t n;
    size_t nranks;
    size_t nnotes; /* ranks whose notes were found */
} rep_mpi_matrix_t;

int rep_mpi_matrix(ses_t *s, rep_mpi_matrix_t *out, tally_err_t *err);

/* MPI calls over time: the run's span in REP_MPI_TL_COLS columns; per rank and column, the MPI
 * time of its selected threads there (each call spread over [end - mpitime, end]) and the MPI
 * function with the most of it. */
#define REP_MPI_TL_COLS 60
typedef struct rep_mpi_tl_row {
    uint64_t rank;
    uint64_t ns[REP_MPI_TL_COLS];  /* MPI time in the column (all threads of the rank) */
    uint32_t fn[REP_MPI_TL_COLS];  /* the function with the most, UINT32_MAX: none */
} rep_mpi_tl_row_t;

typedef struct rep_mpi_timeline {
    rep_mpi_tl_row_t *rows;
    size_t n;
    double span, cell_ns; /* seconds; ns a column */
    size_t nhosts;        /* hosts the ranks ran on: their clocks are not synchronized */
} rep_mpi_timeline_t;

int rep_mpi_timeline(ses_t *s, rep_mpi_timeline_t *out, tally_err_t *err);
void rep_mpi_timeline_free(rep_mpi_timeline_t *t);
void rep_mpi_matrix_free(rep_mpi_matrix_t *m);

#endif
