/* mpirank.c - the MPI rank of a process from its launcher's environment (mpirank.h). */
#include <string.h>

#include "experiment/mpirank.h"

static const char *find(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* a decimal number below 2^63, nothing else */
static int num(const char *v, uint64_t *out)
{
    uint64_t x = 0;
    if (!v || !*v)
        return 0;
    for (; *v; v++) {
        uint64_t d = (uint64_t)(*v - '0');
        if (*v < '0' || *v > '9' || x > ((uint64_t)INT64_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    *out = x;
    return 1;
}

static void job(exp_mpi_rank_t *o, const char *a, const char *sep, const char *b)
{
    size_t k = 0, cap = sizeof o->job - 1;
    for (const char *s = a; s && *s && k < cap; s++)
        o->job[k++] = *s;
    if (b)
        for (const char *s = sep; *s && k < cap; s++)
            o->job[k++] = *s;
    for (const char *s = b; s && *s && k < cap; s++)
        o->job[k++] = *s;
    o->job[k] = 0;
}

int exp_mpi_rank(char *const *envp, exp_mpi_rank_t *o)
{
    memset(o, 0, sizeof *o);
    if (num(find(envp, "OMPI_COMM_WORLD_RANK"), &o->rank)) {
        o->launcher = "openmpi";
        num(find(envp, "OMPI_COMM_WORLD_SIZE"), &o->size);
        const char *j = find(envp, "OMPI_MCA_ess_base_jobid");
        job(o, j ? j : find(envp, "PMIX_NAMESPACE"), "", NULL);
        return 1;
    }
    if (num(find(envp, "PMIX_RANK"), &o->rank)) {
        o->launcher = "pmix";
        num(find(envp, "PMIX_SIZE"), &o->size);
        job(o, find(envp, "PMIX_NAMESPACE"), "", NULL);
        return 1;
    }
    if (num(find(envp, "PMI_RANK"), &o->rank)) {
        o->launcher = "hydra";
        num(find(envp, "PMI_SIZE"), &o->size);
        return 1;
    }
    const char *step = find(envp, "SLURM_STEP_ID");
    if (step && num(find(envp, "SLURM_PROCID"), &o->rank)) {
        o->launcher = "slurm";
        num(find(envp, "SLURM_NTASKS"), &o->size);
        job(o, find(envp, "SLURM_JOB_ID"), ".", step);
        return 1;
    }
    return 0;
}
