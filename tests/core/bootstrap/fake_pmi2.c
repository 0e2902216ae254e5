/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for Slurm's libpmi2.so.0 in tests, loaded through DISTTRAIN_PMI2_LIBRARY or
 * by path. The process plays one rank (PMI_RANK of PMI_SIZE, as srun sets them); the
 * key-value space lives in memory, and the test fills or reads it through the fake_pmi2_*
 * functions. FAKE_PMI2_FAIL picks a failure: "init" (PMI2_Init returns an error),
 * "init-hang" (PMI2_Init never returns, as when the step daemon does not answer), "size"
 * (PMI2_Init reports one rank more than PMI_SIZE), "fence" (PMI2_KVS_Fence returns an
 * error), "hang" (PMI2_KVS_Fence never returns, as when a rank never reaches it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_ERROR 14 /* PMI2_ERR_OTHER */
#define MAX_PAIRS 32

static struct {
    char key[64];
    char value[1024];
} pairs[MAX_PAIRS];
static int n_pairs;
static int n_fences;

static int failing(const char *what)
{
    const char *f = getenv("FAKE_PMI2_FAIL");
    return f != NULL && strcmp(f, what) == 0;
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : fallback;
}

void fake_pmi2_reset(void)
{
    n_pairs = 0;
    n_fences = 0;
}

int fake_pmi2_set(const char *key, const char *value)
{
    for (int i = 0; i < n_pairs; ++i)
        if (strcmp(pairs[i].key, key) == 0) {
            snprintf(pairs[i].value, sizeof pairs[i].value, "%s", value);
            return 0;
        }
    if (n_pairs == MAX_PAIRS)
        return FAKE_ERROR;
    snprintf(pairs[n_pairs].key, sizeof pairs[n_pairs].key, "%s", key);
    snprintf(pairs[n_pairs].value, sizeof pairs[n_pairs].value, "%s", value);
    ++n_pairs;
    return 0;
}

const char *fake_pmi2_lookup(const char *key)
{
    for (int i = 0; i < n_pairs; ++i)
        if (strcmp(pairs[i].key, key) == 0)
            return pairs[i].value;
    return NULL;
}

int fake_pmi2_fences(void) { return n_fences; }

int PMI2_Init(int *spawned, int *size, int *rank, int *appnum)
{
    if (failing("init"))
        return FAKE_ERROR;
    if (failing("init-hang"))
        for (;;)
            sleep(60);
    *spawned = 0;
    *appnum = 0;
    *rank = env_int("PMI_RANK", 0);
    *size = env_int("PMI_SIZE", 1) + (failing("size") ? 1 : 0);
    return 0;
}

int PMI2_Job_GetId(char jobid[], int jobid_size)
{
    snprintf(jobid, (size_t)jobid_size, "fake.0");
    return 0;
}

int PMI2_KVS_Put(const char key[], const char value[]) { return fake_pmi2_set(key, value); }

int PMI2_KVS_Fence(void)
{
    ++n_fences;
    if (failing("hang"))
        for (;;)
            sleep(60);
    return failing("fence") ? FAKE_ERROR : 0;
}

int PMI2_KVS_Get(const char *jobid, int src_pmi_id, const char key[], char value[],
                 int maxvalue, int *vallen)
{
    (void)src_pmi_id;
    const char *found = fake_pmi2_lookup(key);
    if (jobid == NULL || strcmp(jobid, "fake.0") != 0 || found == NULL)
        return FAKE_ERROR;
    snprintf(value, (size_t)maxvalue, "%s", found);
    *vallen = (int)strlen(found);
    return 0;
}
