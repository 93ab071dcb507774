/* Single-pair Smith-Waterman latency of libpyphmm from C: one
 * pyphmm_sw_align_one call per pair, exactly what the JNI entry point does
 * for every GATK call, without Python or the JVM.
 * scripts/bench_sw.py compiles and runs it; by hand:
 *   cc -O2 -Inative/include scripts/sw_latency.c -Lpyphmm -lpyphmm \
 *      -Wl,-rpath,$PWD/pyphmm -o /tmp/sw_latency
 *   /tmp/sw_latency PAIRS.tsv MATCH MISMATCH OPEN EXTEND STRATEGY_CODE [ROUNDS]
 * PAIRS.tsv holds REF<TAB>ALT lines. Prints one line:
 *   pairs N mean_us X median_us Y p99_us Z checksum C
 * (checksum: sum of offsets and CIGAR lengths, so the work cannot be skipped).
 * Each round times every pair once; the round with the lowest mean is
 * reported (the others absorb warm-up and noise from other processes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyphmm.h"

typedef struct {
    char *ref, *alt;
    int64_t lr, la;
} pair_t;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Reads REF<TAB>ALT lines; returns the pair count (pairs in *out). */
static int64_t read_pairs(const char* path, pair_t** out) {
    FILE* f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    int64_t n = 0, cap = 1024;
    pair_t* p = malloc(cap * sizeof(pair_t));
    char* line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        char* tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        if (n == cap) p = realloc(p, (cap *= 2) * sizeof(pair_t));
        p[n].ref = strdup(line);
        p[n].alt = strdup(tab + 1);
        p[n].lr = (int64_t)strlen(p[n].ref);
        p[n].la = (int64_t)strlen(p[n].alt);
        ++n;
    }
    free(line);
    fclose(f);
    *out = p;
    return n;
}

int main(int argc, char** argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s PAIRS.tsv MATCH MISMATCH OPEN EXTEND STRATEGY_CODE [ROUNDS]\n", argv[0]);
        return 2;
    }
    pair_t* pairs;
    const int64_t n = read_pairs(argv[1], &pairs);
    const pyphmm_sw_params params = {atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5])};
    const int8_t strategy = (int8_t)atoi(argv[6]);
    const int rounds = argc > 7 ? atoi(argv[7]) : 3;
    if (n == 0 || rounds < 1) return 2;
    double* us = malloc(n * sizeof(double));
    char* cigar = malloc(2 * (2 * PYPHMM_SW_MAX_LENGTH) + 1);
    const int64_t cap = 2 * (2 * PYPHMM_SW_MAX_LENGTH) + 1;
    pyphmm_error err;
    double *best = malloc(n * sizeof(double)), best_mean = 1e300;
    int64_t checksum = 0;
    for (int r = 0; r < rounds; ++r) {
        checksum = 0;
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            int32_t off = 0;
            const double t0 = now_us();
            int rc = pyphmm_sw_align_one((const uint8_t*)pairs[i].ref, pairs[i].lr, (const uint8_t*)pairs[i].alt,
                                         pairs[i].la, &params, strategy, cigar, cap, &off, &err);
            us[i] = now_us() - t0;
            if (rc) {
                fprintf(stderr, "pair %lld: error %d: %s\n", (long long)i, rc, err.message);
                return 1;
            }
            sum += us[i];
            checksum += off + (int64_t)strlen(cigar);
        }
        if (sum / n < best_mean) {
            best_mean = sum / n;
            memcpy(best, us, n * sizeof(double));
        }
    }
    qsort(best, n, sizeof(double), cmp_double);
    printf("pairs %lld mean_us %.2f median_us %.2f p99_us %.2f checksum %lld\n", (long long)n, best_mean, best[n / 2],
           best[(int64_t)((n - 1) * 0.99)], (long long)checksum);
    return 0;
}
