/*
 * test_mpirank.c - the MPI rank and job of a process from its launcher's environment
 * (src/experiment/mpirank.h): Open MPI, PMIx, MPICH's Hydra and Slurm's srun, as each names a
 * rank, its size and its job; which one wins when several are set; what is not a rank (a batch
 * script's Slurm variables, a value that is not a plain decimal number below 2^63, a variable
 * whose name only starts like one); a job name cut to the space it has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/mpirank.h"

#define ENV(...) ((char *const[]){__VA_ARGS__, NULL})

static void open_mpi(void **st)
{
    exp_mpi_rank_t r;
    assert_int_equal(exp_mpi_rank(ENV("PATH=/bin", "OMPI_COMM_WORLD_RANK=3",
                                      "OMPI_COMM_WORLD_SIZE=8", "OMPI_MCA_ess_base_jobid=4242",
                                      "PMIX_RANK=3", "PMIX_NAMESPACE=prterun-vm-1@1"), &r), 1);
    assert_string_equal(r.launcher, "openmpi");
    assert_int_equal(r.rank, 3);
    assert_int_equal(r.size, 8);
    assert_string_equal(r.job, "4242");
    /* without Open MPI's job id, PMIx's namespace names the job */
    assert_int_equal(exp_mpi_rank(ENV("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=ns@1"), &r), 1);
    assert_string_equal(r.launcher, "openmpi");
    assert_int_equal(r.rank, 0);
    assert_int_equal(r.size, 0);
    assert_string_equal(r.job, "ns@1");
}

static void pmix(void **st)
{
    exp_mpi_rank_t r;
    assert_int_equal(exp_mpi_rank(ENV("PMIX_NAMESPACE=job.7", "PMIX_SIZE=2", "PMIX_RANK=1",
                                      "PMI_RANK=5"), &r), 1);
    assert_string_equal(r.launcher, "pmix");
    assert_int_equal(r.rank, 1);
    assert_int_equal(r.size, 2);
    assert_string_equal(r.job, "job.7");
}

static void hydra(void **st)
{
    exp_mpi_rank_t r;
    assert_int_equal(exp_mpi_rank(ENV("PMI_SIZE=4", "PMI_RANK=2", "SLURM_STEP_ID=0",
                                      "SLURM_PROCID=9"), &r), 1);
    assert_string_equal(r.launcher, "hydra");
    assert_int_equal(r.rank, 2);
    assert_int_equal(r.size, 4);
    assert_string_equal(r.job, ""); /* Hydra names no job */
}

static void slurm(void **st)
{
    exp_mpi_rank_t r;
    assert_int_equal(exp_mpi_rank(ENV("SLURM_JOB_ID=123456", "SLURM_STEP_ID=2",
                                      "SLURM_PROCID=17", "SLURM_NTASKS=64"), &r), 1);
    assert_string_equal(r.launcher, "slurm");
    assert_int_equal(r.rank, 17);
    assert_int_equal(r.size, 64);
    assert_string_equal(r.job, "123456.2");
    /* a batch script has SLURM_PROCID but is no job step: not a rank */
    assert_int_equal(exp_mpi_rank(ENV("SLURM_JOB_ID=123456", "SLURM_PROCID=0",
                                      "SLURM_NTASKS=1"), &r), 0);
}

static void not_ranks(void **st)
{
    exp_mpi_rank_t r;
    assert_int_equal(exp_mpi_rank(ENV("HOME=/root"), &r), 0);
    assert_int_equal(exp_mpi_rank(ENV(NULL), &r), 0);
    /* names that only begin like a launcher's */
    assert_int_equal(exp_mpi_rank(ENV("PMI_RANKS=1", "OMPI_COMM_WORLD_RANK_X=2",
                                      "PMIX_RANK2=3"), &r), 0);
    /* values that are not a plain decimal number */
    static const char *bad[] = {"", "-1", "+1", "1x", " 1", "0x10", "1.0",
                                "9223372036854775808", "9223372036854775809",
                                "18446744073709551615", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char v[64];
        strcpy(v, "PMI_RANK=");
        strcat(v, bad[i]);
        if (exp_mpi_rank(ENV(v), &r))
            fail_msg("PMI_RANK='%s' taken as rank %llu", bad[i], (unsigned long long)r.rank);
    }
    /* the largest rank it takes */
    assert_int_equal(exp_mpi_rank(ENV("PMI_RANK=9223372036854775807"), &r), 1);
    assert_true(r.rank == INT64_MAX);
    /* a bad rank of one launcher leaves the next one's */
    assert_int_equal(exp_mpi_rank(ENV("OMPI_COMM_WORLD_RANK=x", "PMI_RANK=1"), &r), 1);
    assert_string_equal(r.launcher, "hydra");
    assert_int_equal(r.rank, 1);
}

static void long_job(void **st)
{
    exp_mpi_rank_t r;
    char v[400];
    strcpy(v, "SLURM_JOB_ID=");
    memset(v + strlen(v), '7', 300);
    v[13 + 300] = 0;
    assert_int_equal(exp_mpi_rank(ENV(v, "SLURM_STEP_ID=1", "SLURM_PROCID=0"), &r), 1);
    assert_int_equal(strlen(r.job), sizeof r.job - 1);
    for (size_t i = 0; i < sizeof r.job - 1; i++)
        assert_int_equal(r.job[i], '7');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_mpi), cmocka_unit_test(pmix), cmocka_unit_test(hydra),
        cmocka_unit_test(slurm), cmocka_unit_test(not_ranks), cmocka_unit_test(long_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
