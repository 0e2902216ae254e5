/* SPDX-License-Identifier: Apache-2.0 */
/* The floor under a 2-rank allreduce over TCP loopback: two processes, each on its own
 * CPU, send each other N bytes at once (non-blocking sockets, poll) and nothing else: no
 * reduction, no framing, no library. Buffers rotate through a 64 MiB working set, as in
 * disttrain-perf and mpi_allreduce_bench, so they come cold from memory as there.
 * A 2-rank ring allreduce of S bytes exchanges S/2 twice; recursive doubling exchanges
 * S once: so an allreduce of S cannot beat one exchange of S here.
 *
 *   tcp_exchange_bench [MINBYTES [MAXBYTES [ITERS]]]      (defaults 64K 16M 200)
 *
 * A benchmark: prints microseconds per exchange and GB/s per direction, asserts nothing.
 * Same socket settings as the tcp plugin's loopback connections: TCP_NODELAY, 4 MiB
 * buffers, reno. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKING_SET (64u << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void exchange(int fd, const char *out, char *in, size_t n)
{
    size_t sent = 0, got = 0;
    while (sent < n || got < n) {
        struct pollfd p = {fd, (short)((sent < n ? POLLOUT : 0) | (got < n ? POLLIN : 0)), 0};
        if (poll(&p, 1, 10000) <= 0)
            die("poll (peer gone?)");
        if (sent < n) {
            ssize_t k = send(fd, out + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k > 0)
                sent += (size_t)k;
        }
        if (got < n) {
            ssize_t k = recv(fd, in + got, n - got, MSG_DONTWAIT);
            if (k == 0)
                die("recv: peer closed");
            if (k > 0)
                got += (size_t)k;
        }
    }
}

static void tune(int fd)
{
    int one = 1, buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4); /* best effort */
}

static size_t parse_bytes(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return v;
}

int main(int argc, char **argv)
{
    size_t lo = argc > 1 ? parse_bytes(argv[1]) : 64u << 10;
    size_t hi = argc > 2 ? parse_bytes(argv[2]) : 16u << 20;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    if (lo == 0 || hi < lo || hi > WORKING_SET || iters < 1) {
        fprintf(stderr, "usage: %s [MINBYTES [MAXBYTES [ITERS]]] (1 <= MIN <= MAX <= 64M)\n",
                argv[0]);
        return 2;
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&addr, &len) != 0)
        die("listen on 127.0.0.1");
    pid_t child = fork();
    if (child < 0)
        die("fork");
    int fd;
    if (child == 0) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        tune(fd);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
            die("connect");
    } else {
        fd = accept(ls, NULL, NULL);
        if (fd < 0)
            die("accept");
        tune(fd);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(child == 0 ? (cpus > 1 ? 1 : 0) : 0, &mask);
    sched_setaffinity(0, sizeof mask, &mask); /* best effort, as mpirun's binding */
    char *out = malloc(WORKING_SET), *in = malloc(WORKING_SET);
    if (!out || !in)
        die("malloc");
    memset(out, 1, WORKING_SET);
    memset(in, 2, WORKING_SET);
    if (child != 0)
        printf("# TCP loopback, both directions at once, buffers rotating over 64 MiB\n"
               "# %10s %12s %16s\n", "bytes", "us", "GB/s each way");
    for (size_t n = lo; n <= hi; n *= 2) {
        size_t slots = WORKING_SET / n;
        for (int i = 0; i < 5; ++i)
            exchange(fd, out, in, n);
        double start = now();
        for (int i = 0; i < iters; ++i)
            exchange(fd, out + (size_t)i % slots * n, in + (size_t)i % slots * n, n);
        double t = (now() - start) / iters;
        if (child != 0)
            printf("%12zu %12.1f %16.2f\n", n, t * 1e6, (double)n / t / 1e9);
    }
    if (child != 0)
        waitpid(child, NULL, 0);
    return 0;
}
