/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Open MPI twin of disttrain-perf: same flags, sizes, rotating buffers, timing rule
 * (average per iteration, maxed over ranks), bus-bandwidth factors and output columns, so
 * compare_allreduce.py can put the two side by side. Benchmarks never assert times.
 *
 *   mpirun -np 2 mpi_allreduce_bench -b 4 -e 64M -f 2 -d float -o sum [--csv]
 *
 * Exit status: 0, 1 when a result was wrong, 2 on a bad flag. MPI has no float16,
 * bfloat16 or average: those are refused with exit status 2.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>

enum coll { ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER, ALLTOALL, BARRIER };
static const char *coll_names[] = {"allreduce", "broadcast", "allgather",
                                   "reduce_scatter", "alltoall", "barrier"};
enum fmt { TABLE, CSV, JSON };

struct dtype_info {
    const char *aliases[4]; /* names accepted by -d; [0] is printed */
    MPI_Datatype mpi;
    size_t size;
    int is_float;
    int is_signed;
};
static const struct dtype_info dtypes[] = {
    {{"float32", "float", "fp32", "f32"}, MPI_FLOAT, 4, 1, 1},
    {{"float64", "double", "fp64", "f64"}, MPI_DOUBLE, 8, 1, 1},
    {{"int8", "char", NULL, NULL}, MPI_INT8_T, 1, 0, 1},
    {{"uint8", NULL, NULL, NULL}, MPI_UINT8_T, 1, 0, 0},
    {{"int32", "int", NULL, NULL}, MPI_INT32_T, 4, 0, 1},
    {{"int64", NULL, NULL, NULL}, MPI_INT64_T, 8, 0, 1},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

struct op_info {
    const char *name;
    MPI_Op mpi;
};

struct options {
    size_t min_bytes, max_bytes, factor, rotate_bytes;
    int iters, warmup, root, inplace, async, check;
    enum coll coll;
    enum fmt format;
    const struct dtype_info *dtype;
    struct op_info op;
};

#define MAX_IN_FLIGHT 16
#define ALIGN 4096

static int rank, ranks;

static void usage_error(const char *fmt, const char *value)
{
    if (rank == 0) {
        fprintf(stderr, "mpi_allreduce_bench: ");
        fprintf(stderr, fmt, value);
        fprintf(stderr, "\n(run with -h for usage)\n");
    }
}

static int parse_bytes(const char *text, size_t *out)
{
    char *end = NULL;
    if (!text[0] || text[0] == '-')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text)
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, ++end;
    else if (*end == 'M' || *end == 'm') shift = 20, ++end;
    else if (*end == 'G' || *end == 'g') shift = 30, ++end;
    if (shift && (*end == 'B' || *end == 'b'))
        ++end;
    if (*end)
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_int(const char *text, int lo, int *out)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

static int match(const char *name, const char *text)
{
    /* "all_reduce", "all-reduce" and "allreduce" name the same thing. */
    for (;;) {
        while (*text == '_' || *text == '-') ++text;
        while (*name == '_' || *name == '-') ++name;
        if (!*text || !*name)
            return !*text && !*name;
        if ((*text | 0x20) != (*name | 0x20))
            return 0;
        ++text, ++name;
    }
}

static void print_usage(void)
{
    if (rank == 0)
        printf("usage: mpi_allreduce_bench [-b min] [-e max] [-f factor] [-n iters] "
               "[-w warmup]\n  [-o sum|prod|min|max] [-d float|double|int8|uint8|int32|int64]\n"
               "  [-c allreduce|broadcast|allgather|reduce_scatter|alltoall|barrier]\n"
               "  [-r root] [-i 0|1] [-a 0|1] [--check 0|1] [--rotate bytes] [--csv|--json]\n");
}

/* Returns 0 to run, 1 after -h, 2 after a bad flag (message printed by rank 0). */
static int parse(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"minbytes", required_argument, 0, 'b'}, {"maxbytes", required_argument, 0, 'e'},
        {"stepfactor", required_argument, 0, 'f'}, {"iters", required_argument, 0, 'n'},
        {"warmup_iters", required_argument, 0, 'w'}, {"op", required_argument, 0, 'o'},
        {"datatype", required_argument, 0, 'd'}, {"collective", required_argument, 0, 'c'},
        {"root", required_argument, 0, 'r'}, {"inplace", required_argument, 0, 'i'},
        {"async", required_argument, 0, 'a'}, {"check", required_argument, 0, 'C'},
        {"rotate", required_argument, 0, 'R'}, {"csv", no_argument, 0, 'S'},
        {"json", no_argument, 0, 'J'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    struct options d = {8, (size_t)64 << 20, 2, (size_t)64 << 20, 20, 5, 0, 0, 0, 1,
                        ALLREDUCE, TABLE, &dtypes[0], {"sum", MPI_SUM}};
    *o = d;
    opterr = 0;
    int c, factor = 2;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:o:d:c:r:i:a:h", longs, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'b': bad = parse_bytes(optarg, &o->min_bytes); break;
        case 'e': bad = parse_bytes(optarg, &o->max_bytes); break;
        case 'R': bad = parse_bytes(optarg, &o->rotate_bytes); break;
        case 'f': bad = parse_int(optarg, 2, &factor); o->factor = (size_t)factor; break;
        case 'n': bad = parse_int(optarg, 1, &o->iters); break;
        case 'w': bad = parse_int(optarg, 0, &o->warmup); break;
        case 'r': bad = parse_int(optarg, 0, &o->root); break;
        case 'i': bad = parse_int(optarg, 0, &o->inplace) || o->inplace > 1; break;
        case 'a': bad = parse_int(optarg, 0, &o->async) || o->async > 1; break;
        case 'C': bad = parse_int(optarg, 0, &o->check) || o->check > 1; break;
        case 'S': o->format = CSV; break;
        case 'J': o->format = JSON; break;
        case 'h': print_usage(); return 1;
        case 'o': {
            static const struct op_info ops[] = {
                {"sum", MPI_SUM}, {"prod", MPI_PROD}, {"min", MPI_MIN}, {"max", MPI_MAX}};
            bad = 1;
            for (size_t k = 0; k < 4; ++k)
                if (match(ops[k].name, optarg)) o->op = ops[k], bad = 0;
            if (bad) {
                usage_error("-o '%s': use sum, prod, min or max (MPI has no avg)", optarg);
                return 2;
            }
            break;
        }
        case 'd':
            bad = 1;
            for (size_t k = 0; k < N_DTYPES; ++k)
                for (int a = 0; a < 4 && dtypes[k].aliases[a]; ++a)
                    if (match(dtypes[k].aliases[a], optarg)) o->dtype = &dtypes[k], bad = 0;
            if (bad) {
                usage_error("-d '%s': use float, double, int8, uint8, int32 or int64 "
                            "(MPI has no float16/bfloat16)", optarg);
                return 2;
            }
            break;
        case 'c':
            bad = 1;
            for (int k = 0; k <= BARRIER; ++k)
                if (match(coll_names[k], optarg)) o->coll = (enum coll)k, bad = 0;
            if (match("bcast", optarg)) o->coll = BROADCAST, bad = 0;
            if (bad) {
                usage_error("-c '%s': use allreduce, broadcast, allgather, reduce_scatter, "
                            "alltoall or barrier", optarg);
                return 2;
            }
            break;
        default:
            usage_error("unknown flag or missing value: '%s'", argv[optind - 1]);
            return 2;
        }
        if (bad) {
            char flag[3] = {'-', (char)c, 0};
            usage_error("bad value for %s", c == 'C' ? "--check" : c == 'R' ? "--rotate" : flag);
            return 2;
        }
    }
    if (optind < argc) {
        usage_error("unexpected argument '%s'", argv[optind]);
        return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        usage_error("%s-b is larger than -e", "");
        return 2;
    }
    if (o->root >= ranks) {
        usage_error("%s-r is not a rank of this job", "");
        return 2;
    }
    if (o->inplace && (o->coll == ALLTOALL || o->coll == REDUCE_SCATTER)) {
        usage_error("-i 1: %s has no in-place form here", coll_names[o->coll]);
        return 2;
    }
    return 0;
}

/* ---- shapes and bus bandwidth (nccl-tests PERFORMANCE.md), as in disttrain-perf ---- */

struct shape {
    size_t send_count, recv_count, count, bytes;
};

static struct shape shape_for(enum coll c, size_t bytes, size_t elt)
{
    size_t n = (size_t)ranks, e = bytes / elt, b = e / n;
    struct shape s = {0, 0, 0, 0};
    switch (c) {
    case ALLREDUCE: s = (struct shape){e, e, e, e * elt}; break;
    case BROADCAST: s = (struct shape){0, e, e, e * elt}; break;
    case ALLGATHER: s = (struct shape){b, b * n, b, b * n * elt}; break;
    case REDUCE_SCATTER: s = (struct shape){b * n, b, b, b * n * elt}; break;
    case ALLTOALL: s = (struct shape){b * n, b * n, b, b * n * elt}; break;
    case BARRIER: break;
    }
    return s;
}

static double busbw_factor(enum coll c)
{
    double n = ranks;
    switch (c) {
    case ALLREDUCE: return 2.0 * (n - 1) / n;
    case ALLGATHER: case REDUCE_SCATTER: case ALLTOALL: return (n - 1) / n;
    case BROADCAST: return 1.0;
    default: return 0.0;
    }
}

/* ---- rotating buffers: sets carved from pools larger than the last-level cache ---- */

struct pools {
    char *send, *recv;
    size_t send_bytes, recv_bytes, send_stride, recv_stride, sets;
};

static size_t round_up(size_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

static char *alloc_pool(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, bytes ? bytes : ALIGN) != 0) {
        fprintf(stderr, "mpi_allreduce_bench: cannot allocate %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* First touches now, not in the timed loop: this process's, then the kernel's (as
       disttrain-perf does; perf_buffers.cc says why). */
    memset(p, 0, bytes);
    int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (zero >= 0) {
        for (size_t done = 0; done < bytes;) {
            ssize_t n = read(zero, (char *)p + done, bytes - done);
            if (n <= 0) break;
            done += (size_t)n;
        }
        close(zero);
    }
    return p;
}

static void configure(struct pools *p, const struct shape *s, size_t elt)
{
    p->send_stride = round_up(s->send_count * elt > 0 ? s->send_count * elt : 1);
    p->recv_stride = round_up(s->recv_count * elt > 0 ? s->recv_count * elt : 1);
    size_t a = p->send_bytes ? p->send_bytes / p->send_stride : (size_t)-1;
    size_t b = p->recv_bytes / p->recv_stride;
    p->sets = a < b ? a : b;
    if (p->sets < 1) p->sets = 1;
}

/* ---- data patterns: small integers, exact in every dtype ---- */

static void put(const struct dtype_info *t, void *buf, size_t i, double v)
{
    if (t->mpi == MPI_FLOAT) ((float *)buf)[i] = (float)v;
    else if (t->mpi == MPI_DOUBLE) ((double *)buf)[i] = v;
    else if (t->mpi == MPI_INT8_T) ((int8_t *)buf)[i] = (int8_t)v;
    else if (t->mpi == MPI_UINT8_T) ((uint8_t *)buf)[i] = (uint8_t)v;
    else if (t->mpi == MPI_INT32_T) ((int32_t *)buf)[i] = (int32_t)v;
    else ((int64_t *)buf)[i] = (int64_t)v;
}

static double get(const struct dtype_info *t, const void *buf, size_t i)
{
    if (t->mpi == MPI_FLOAT) return ((const float *)buf)[i];
    if (t->mpi == MPI_DOUBLE) return ((const double *)buf)[i];
    if (t->mpi == MPI_INT8_T) return ((const int8_t *)buf)[i];
    if (t->mpi == MPI_UINT8_T) return ((const uint8_t *)buf)[i];
    if (t->mpi == MPI_INT32_T) return ((const int32_t *)buf)[i];
    return (double)((const int64_t *)buf)[i];
}

static double pattern(const struct options *o, uint64_t seed, size_t i)
{
    uint64_t mix = seed * 131u + i * 7u + 3u;
    int sgn = o->dtype->is_signed;
    if (o->op.mpi == MPI_PROD)
        return ((seed < 6 && (seed + i) % 3 == 0) ? 2.0 : 1.0) *
               ((sgn && (seed * 5 + i) % 4 == 0) ? -1.0 : 1.0);
    if (o->op.mpi == MPI_MIN || o->op.mpi == MPI_MAX)
        return (double)(mix % 23) - (sgn ? 11.0 : 0.0);
    int m = 100 / ranks;
    m = m < 1 ? 1 : m > 8 ? 8 : m;
    return (double)(mix % (uint64_t)(2 * m + 1)) - (sgn ? m : 0);
}

static double reduced(const struct options *o, size_t i)
{
    double acc = pattern(o, 0, i);
    for (int r = 1; r < ranks; ++r) {
        double v = pattern(o, (uint64_t)r, i);
        if (o->op.mpi == MPI_SUM) acc += v;
        else if (o->op.mpi == MPI_PROD) acc *= v;
        else if (o->op.mpi == MPI_MIN) acc = v < acc ? v : acc;
        else acc = v > acc ? v : acc;
    }
    return acc;
}

/* ---- one operation ---- */

struct call {
    const void *send;
    void *recv;
};

static struct call call_for(const struct options *o, const struct pools *p, size_t it)
{
    size_t k = it % p->sets;
    struct call c = {p->send + k * p->send_stride, p->recv + k * p->recv_stride};
    if (o->inplace)
        c.send = MPI_IN_PLACE;
    return c;
}

static void launch(const struct options *o, const struct shape *s, struct call c,
                   MPI_Request *req)
{
    MPI_Datatype t = o->dtype->mpi;
    int n = (int)s->count;
    switch (o->coll) {
    case ALLREDUCE:
        if (req) MPI_Iallreduce(c.send, c.recv, n, t, o->op.mpi, MPI_COMM_WORLD, req);
        else MPI_Allreduce(c.send, c.recv, n, t, o->op.mpi, MPI_COMM_WORLD);
        break;
    case BROADCAST:
        if (req) MPI_Ibcast(c.recv, n, t, o->root, MPI_COMM_WORLD, req);
        else MPI_Bcast(c.recv, n, t, o->root, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        if (req) MPI_Iallgather(c.send, n, t, c.recv, n, t, MPI_COMM_WORLD, req);
        else MPI_Allgather(c.send, n, t, c.recv, n, t, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        if (req) MPI_Ireduce_scatter_block(c.send, c.recv, n, t, o->op.mpi, MPI_COMM_WORLD, req);
        else MPI_Reduce_scatter_block(c.send, c.recv, n, t, o->op.mpi, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        if (req) MPI_Ialltoall(c.send, n, t, c.recv, n, t, MPI_COMM_WORLD, req);
        else MPI_Alltoall(c.send, n, t, c.recv, n, t, MPI_COMM_WORLD);
        break;
    case BARRIER:
        if (req) MPI_Ibarrier(MPI_COMM_WORLD, req);
        else MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

static void iterate(const struct options *o, const struct pools *p, const struct shape *s,
                    size_t *next, int count)
{
    /* -a 1 keeps up to `window` operations in flight, waiting for the oldest before its
     * buffer set comes round again, as disttrain-perf does. */
    MPI_Request reqs[MAX_IN_FLIGHT];
    size_t window = p->sets < MAX_IN_FLIGHT ? p->sets : MAX_IN_FLIGHT;
    for (int k = 0; k < count; ++k, ++*next) {
        struct call c = call_for(o, p, *next);
        if (!o->async) {
            launch(o, s, c, NULL);
            continue;
        }
        size_t slot = (size_t)k % window;
        if ((size_t)k >= window)
            MPI_Wait(&reqs[slot], MPI_STATUS_IGNORE);
        launch(o, s, c, &reqs[slot]);
    }
    if (o->async && count > 0) {
        size_t live = (size_t)count < window ? (size_t)count : window;
        MPI_Waitall((int)live, reqs, MPI_STATUSES_IGNORE);
    }
}

/* Fills inputs with this rank's pattern, runs once, counts wrong output elements. */
static uint64_t check(const struct options *o, const struct pools *p, const struct shape *s)
{
    const struct dtype_info *t = o->dtype;
    struct call c = call_for(o, p, 0);
    void *in = o->inplace ? (o->coll == ALLGATHER ? (char *)c.recv + (size_t)rank * s->count * t->size
                                                  : c.recv)
                          : (void *)c.send;
    uint64_t n = (uint64_t)ranks, self = (uint64_t)rank, wrong = 0;
    for (size_t i = 0; i < s->recv_count; ++i)
        put(t, c.recv, i, 99.0); /* never a correct result */
    if (o->coll == ALLREDUCE || o->coll == REDUCE_SCATTER) {
        size_t len = o->coll == ALLREDUCE ? s->count : s->send_count;
        for (size_t i = 0; i < len; ++i) put(t, in, i, pattern(o, self, i));
    } else if (o->coll == BROADCAST && rank == o->root) {
        for (size_t i = 0; i < s->count; ++i) put(t, c.recv, i, pattern(o, self, i));
    } else if (o->coll == ALLGATHER) {
        for (size_t i = 0; i < s->count; ++i) put(t, in, i, pattern(o, self, i));
    } else if (o->coll == ALLTOALL) {
        for (size_t i = 0; i < s->send_count; ++i)
            put(t, in, i, pattern(o, self * n + i / s->count, i % s->count));
    }
    if (o->async) {
        MPI_Request req;
        launch(o, s, c, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        launch(o, s, c, NULL);
    }
    for (size_t i = 0; i < s->recv_count; ++i) {
        double want = 0;
        switch (o->coll) {
        case ALLREDUCE: want = reduced(o, i); break;
        case REDUCE_SCATTER: want = reduced(o, self * s->count + i); break;
        case BROADCAST: want = pattern(o, (uint64_t)o->root, i); break;
        case ALLGATHER: want = pattern(o, i / s->count, i % s->count); break;
        case ALLTOALL: want = pattern(o, (i / s->count) * n + self, i % s->count); break;
        default: break;
        }
        wrong += get(t, c.recv, i) != want;
    }
    return wrong;
}

/* ---- output: the columns of disttrain-perf ---- */

struct row {
    size_t bytes, count;
    double time_us, algbw, busbw;
    unsigned long long wrong;
};

static const char *root_text(const struct options *o, char *buf)
{
    if (o->coll != BROADCAST)
        return "-1";
    sprintf(buf, "%d", o->root);
    return buf;
}

static void print_header(const struct options *o)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    char *nl = strchr(version, ','); /* "Open MPI v4.1.4, package: ..." -> first part */
    if (nl) *nl = 0;
    if (o->format == TABLE) {
        printf("# mpi_allreduce_bench: %s, %d ranks, %s\n# %s, %s, %d iterations (%d warm-up), "
               "%s, %s\n", coll_names[o->coll], ranks, version, o->dtype->aliases[0],
               o->op.name, o->iters, o->warmup, o->inplace ? "in place" : "out of place",
               o->async ? "async" : "blocking");
        printf("#%11s %12s %9s %6s %5s %11s %12s %12s %7s\n", "size", "count", "type",
               "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    } else if (o->format == CSV) {
        printf("# mpi_allreduce_bench ranks=%d transport=mpi version=%s\n", ranks, version);
        printf("collective,size,count,type,redop,root,time_us,algbw_gbps,busbw_gbps,wrong\n");
    }
    fflush(stdout);
}

static void print_row(const struct options *o, const struct row *r, int first)
{
    char root[16];
    if (o->format == TABLE)
        printf("%12zu %12zu %9s %6s %5s %11.2f %12.3f %12.3f %7llu\n", r->bytes, r->count,
               o->dtype->aliases[0], o->op.name, root_text(o, root), r->time_us, r->algbw,
               r->busbw, r->wrong);
    else if (o->format == CSV)
        printf("%s,%zu,%zu,%s,%s,%s,%.3f,%.4f,%.4f,%llu\n", coll_names[o->coll], r->bytes,
               r->count, o->dtype->aliases[0], o->op.name, root_text(o, root), r->time_us,
               r->algbw, r->busbw, r->wrong);
    else
        printf("%s\n  {\"size\": %zu, \"count\": %zu, \"time_us\": %.3f, \"algbw_gbps\": %.4f, "
               "\"busbw_gbps\": %.4f, \"wrong\": %llu}", first ? "" : ",", r->bytes, r->count,
               r->time_us, r->algbw, r->busbw, r->wrong);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    struct options o;
    int rc = parse(argc, argv, &o);
    if (rc) {
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }
    size_t elt = o.dtype->size;
    struct shape top = shape_for(o.coll, o.max_bytes, elt);
    struct pools p = {0};
    size_t send_max = o.inplace ? 0 : top.send_count * elt;
    p.send_bytes = send_max ? (2 * round_up(send_max) > o.rotate_bytes ? 2 * round_up(send_max)
                                                                        : o.rotate_bytes) : 0;
    p.recv_bytes = 2 * round_up(top.recv_count * elt) > o.rotate_bytes
                       ? 2 * round_up(top.recv_count * elt) : o.rotate_bytes;
    p.send = alloc_pool(p.send_bytes);
    p.recv = alloc_pool(p.recv_bytes);

    if (rank == 0) {
        print_header(&o);
        if (o.format == JSON)
            printf("{\"tool\": \"mpi_allreduce_bench\", \"transport\": \"mpi\", \"ranks\": %d, "
                   "\"collective\": \"%s\", \"type\": \"%s\", \"redop\": \"%s\", \"rows\": [",
                   ranks, coll_names[o.coll], o.dtype->aliases[0], o.op.name);
    }
    unsigned long long total_wrong = 0;
    size_t next = 0, previous = (size_t)-1;
    int rows = 0;
    for (size_t bytes = o.coll == BARRIER ? 0 : o.min_bytes;;) {
        struct shape s = shape_for(o.coll, bytes, elt);
        /* Sizes that round to the same message (or to nothing) are measured once. */
        if (s.bytes != previous && (s.count > 0 || bytes == 0 || o.coll == BARRIER)) {
            previous = s.bytes;
            configure(&p, &s, elt);
            MPI_Barrier(MPI_COMM_WORLD);
            iterate(&o, &p, &s, &next, o.warmup);
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            iterate(&o, &p, &s, &next, o.iters);
            double t = (MPI_Wtime() - start) * 1e6 / o.iters;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            unsigned long long wrong = o.check && o.coll != BARRIER ? check(&o, &p, &s) : 0;
            MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                          MPI_COMM_WORLD);
            double algbw = t > 0 ? (double)s.bytes / t / 1e3 : 0;
            struct row r = {s.bytes, s.count, t, algbw, algbw * busbw_factor(o.coll), wrong};
            total_wrong += wrong;
            if (rank == 0)
                print_row(&o, &r, rows == 0);
            ++rows;
        }
        if (o.coll == BARRIER || bytes >= o.max_bytes || bytes > o.max_bytes / o.factor)
            break;
        bytes = bytes ? bytes * o.factor : 1;
    }
    if (rank == 0) {
        if (o.format == TABLE)
            printf("# Wrong values: %llu\n", total_wrong);
        else if (o.format == JSON)
            printf("\n], \"wrong\": %llu}\n", total_wrong);
        fflush(stdout);
    }
    free(p.send);
    free(p.recv);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
