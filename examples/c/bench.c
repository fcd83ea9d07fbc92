/*
 * 4 KiB random reads at QD 32 through libnowait and through liburing
 * directly, in the same run, alternating rounds (A B, then B A), cached
 * and uncached. Prints IOPS, CPU time per read and context switches per
 * read (getrusage: every thread of the process, io_uring's io-wq workers
 * included) for each round, then medians and libnowait/liburing ratios.
 *
 *   bench FILE [SECONDS [SETS]]        (FILE: e.g. 1 GiB, on a disk filesystem)
 *   bench FILE SECONDS 1 nowait|uring [uncached]  (one round of one engine, for perf)
 *
 * Cached rounds read the file (twice) first so every read hits the page cache.
 * Before each uncached round the file is dropped from the page cache
 * (POSIX_FADV_DONTNEED; residency checked with mincore) and readahead is
 * off (POSIX_FADV_RANDOM), so reads go to the disk; buffered reads both
 * ways. The liburing side uses what a careful C user would: a ring with
 * SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them, the ring fd and
 * the file registered, io_uring_submit_and_wait(1) per batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <nowait.h>

#define BS 4096
#define QD 32
#define MAXRUNS 64

static uint64_t state = 0x2545F4914F6CDD1DULL;
static uint64_t rnd(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

struct result {
    double iops, cpu_us, csw;
};

struct meter {
    struct timespec t0;
    struct rusage r0;
};

static double secs(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void start(struct meter *m)
{
    getrusage(RUSAGE_SELF, &m->r0);
    clock_gettime(CLOCK_MONOTONIC, &m->t0);
}

static struct result stop(struct meter *m, long reads)
{
    struct timespec t1;
    struct rusage r1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - m->r0.ru_utime.tv_sec + r1.ru_stime.tv_sec -
                          m->r0.ru_stime.tv_sec) +
                 (double)(r1.ru_utime.tv_usec - m->r0.ru_utime.tv_usec + r1.ru_stime.tv_usec -
                          m->r0.ru_stime.tv_usec) / 1e6;
    long csw = (r1.ru_nvcsw - m->r0.ru_nvcsw) + (r1.ru_nivcsw - m->r0.ru_nivcsw);
    struct result r = {(double)reads / secs(m->t0, t1), cpu * 1e6 / (double)reads,
                       (double)csw / (double)reads};
    return r;
}

static int elapsed(struct timespec t0, double limit)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return secs(t0, t) >= limit;
}

static int64_t blocks;
static unsigned char *bufs;

static struct result run_nowait(const char *path, double seconds)
{
    struct nowait_file *f;
    struct nowait_queue *q;
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.depth = QD;
    if (nowait_file_open(path, NOWAIT_DIRECT_OFF, &f) < 0 || nowait_queue_create(&o, &q) < 0) {
        fprintf(stderr, "libnowait: %s\n", nowait_last_error());
        exit(1);
    }
    struct nowait_cqe cqes[QD];
    long reads = 0, bad = 0;
    struct meter m;
    start(&m);
    for (unsigned i = 0; i < QD; i++)
        nowait_push(q, f, bufs + (size_t)i * BS, BS, (rnd() % (uint64_t)blocks) * BS, i);
    while (!elapsed(m.t0, seconds)) {
        int n = nowait_reap(q, cqes, QD, 1, -1);
        if (n < 0) { fprintf(stderr, "reap: %s\n", nowait_last_error()); exit(1); }
        for (int k = 0; k < n; k++) {
            if (cqes[k].res != BS) bad++;
            uint64_t i = cqes[k].user_data;
            nowait_push(q, f, bufs + i * BS, BS, (rnd() % (uint64_t)blocks) * BS, i);
        }
        reads += n;
    }
    struct result r = stop(&m, reads);
    nowait_queue_destroy(q); /* waits for the reads in flight, outside the clock */
    nowait_file_close(f);
    if (bad) { fprintf(stderr, "libnowait: %ld short or failed reads\n", bad); exit(1); }
    return r;
}

static struct result run_uring(const char *path, double seconds)
{
    struct io_uring ring;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(QD, &ring, &p) < 0) {
        memset(&p, 0, sizeof p); /* an older kernel: plain ring */
        int e = io_uring_queue_init_params(QD, &ring, &p);
        if (e < 0) { fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-e)); exit(1); }
    }
    io_uring_register_ring_fd(&ring);
    int fd = open(path, O_RDONLY);
    int fixed = io_uring_register_files(&ring, &fd, 1) == 0;
    long reads = 0, bad = 0;
    struct meter m;
    start(&m);
    for (unsigned i = 0; i < QD; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        io_uring_prep_read(sqe, fixed ? 0 : fd, bufs + (size_t)i * BS, BS,
                           (rnd() % (uint64_t)blocks) * BS);
        if (fixed) sqe->flags |= IOSQE_FIXED_FILE;
        io_uring_sqe_set_data64(sqe, i);
    }
    int inflight = QD;
    while (!elapsed(m.t0, seconds)) {
        int e = io_uring_submit_and_wait(&ring, 1);
        if (e < 0 && e != -EINTR) { fprintf(stderr, "submit_and_wait: %s\n", strerror(-e)); exit(1); }
        struct io_uring_cqe *cqe;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            if (cqe->res != BS) bad++;
            uint64_t i = io_uring_cqe_get_data64(cqe);
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            io_uring_prep_read(sqe, fixed ? 0 : fd, bufs + i * BS, BS,
                               (rnd() % (uint64_t)blocks) * BS);
            if (fixed) sqe->flags |= IOSQE_FIXED_FILE;
            io_uring_sqe_set_data64(sqe, i);
            n++;
        }
        io_uring_cq_advance(&ring, n);
        reads += n;
    }
    struct result r = stop(&m, reads);
    /* Drain: what was submitted, plus what was prepared after the last submit. */
    io_uring_submit(&ring);
    while (inflight > 0) {
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
        io_uring_cqe_seen(&ring, cqe);
        inflight--;
    }
    io_uring_queue_exit(&ring);
    close(fd);
    if (bad) { fprintf(stderr, "liburing: %ld short or failed reads\n", bad); exit(1); }
    return r;
}

/* Share of the file's pages in the page cache. */
static double resident(int fd, off_t size)
{
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return -1;
    size_t pages = ((size_t)size + 4095) / 4096, in = 0;
    unsigned char *vec = malloc(pages);
    if (vec && mincore(map, (size_t)size, vec) == 0)
        for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)size);
    return (double)in / (double)pages;
}

static void prepare(int fd, off_t size, int cached)
{
    if (cached) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL);
        /* Twice: the first pass brings pages in (inactive LRU), the second
         * marks them accessed, so the round measured does not pay for
         * activating them (that would penalise whichever engine runs first
         * after the file was dropped). */
        static unsigned char chunk[1 << 20];
        for (int pass = 0; pass < 2; pass++)
            for (off_t o = 0; o < size; o += (off_t)sizeof chunk)
                if (pread(fd, chunk, sizeof chunk, o) < 0) break;
    } else {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    double t[MAXRUNS];
    memcpy(t, v, (size_t)n * sizeof *v);
    qsort(t, (size_t)n, sizeof *t, cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [SECONDS [SETS]]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    double seconds = argc > 2 ? atof(argv[2]) : 3;
    int sets = argc > 3 ? atoi(argv[3]) : 3;
    if (sets < 1 || sets > MAXRUNS) sets = 3;
    /* An even number of sets puts each engine first equally often. */
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) { perror(path); return 1; }
    blocks = st.st_size / BS;
    bufs = nowait_alloc(QD * BS, 0);
    if (blocks < QD || !bufs) { fprintf(stderr, "%s: too small\n", path); return 1; }

    if (argc > 4) { /* one round of one engine, to profile it */
        int cached = !(argc > 5 && !strcmp(argv[5], "uncached"));
        prepare(fd, st.st_size, cached);
        struct result r = strcmp(argv[4], "uring") ? run_nowait(path, seconds) : run_uring(path, seconds);
        printf("%s %s: %.0f IOPS, %.3f us CPU/read, %.4f csw/read\n", argv[4],
               cached ? "cached" : "uncached", r.iops, r.cpu_us, r.csw);
        return 0;
    }
    struct nowait_queue *q;
    nowait_queue_create(NULL, &q);
    printf("file %s, %" PRId64 " MiB; libnowait %s backend %s; QD %d, %d KiB random reads, "
           "%.1f s per round, %d sets\n",
           path, (int64_t)(st.st_size >> 20), nowait_version(), nowait_queue_backend(q), QD,
           BS / 1024, seconds, sets);
    nowait_queue_destroy(q);

    static const char *modes[] = {"cached", "uncached"};
    static const char *names[] = {"libnowait", "liburing"};
    double iops[2][2][MAXRUNS], cpu[2][2][MAXRUNS], csw[2][2][MAXRUNS];
    printf("%-4s %-9s %-10s %10s %12s %10s %9s\n", "set", "mode", "engine", "IOPS", "CPU us/read",
           "csw/read", "resident");
    for (int s = 0; s < sets; s++)
        for (int mode = 0; mode < 2; mode++)
            for (int k = 0; k < 2; k++) {
                int e = (s % 2) ? 1 - k : k; /* A B, then B A */
                prepare(fd, st.st_size, mode == 0);
                double res = resident(fd, st.st_size);
                struct result r = e == 0 ? run_nowait(path, seconds) : run_uring(path, seconds);
                iops[mode][e][s] = r.iops;
                cpu[mode][e][s] = r.cpu_us;
                csw[mode][e][s] = r.csw;
                printf("%-4d %-9s %-10s %10.0f %12.3f %10.4f %8.1f%%\n", s + 1, modes[mode],
                       names[e], r.iops, r.cpu_us, r.csw, res * 100);
                fflush(stdout);
            }
    printf("\nmedians over %d sets\n", sets);
    printf("%-9s %-10s %10s %12s %10s\n", "mode", "engine", "IOPS", "CPU us/read", "csw/read");
    for (int mode = 0; mode < 2; mode++) {
        for (int e = 0; e < 2; e++)
            printf("%-9s %-10s %10.0f %12.3f %10.4f\n", modes[mode], names[e],
                   median(iops[mode][e], sets), median(cpu[mode][e], sets),
                   median(csw[mode][e], sets));
        double ratio[MAXRUNS], cratio[MAXRUNS];
        for (int s = 0; s < sets; s++) {
            ratio[s] = iops[mode][0][s] / iops[mode][1][s];
            cratio[s] = cpu[mode][0][s] / cpu[mode][1][s];
        }
        double lo = ratio[0], hi = ratio[0];
        for (int s = 1; s < sets; s++) {
            if (ratio[s] < lo) lo = ratio[s];
            if (ratio[s] > hi) hi = ratio[s];
        }
        printf("%-9s libnowait/liburing: IOPS %.3fx (per set %.3f..%.3f), CPU per read %.3fx\n",
               modes[mode], median(ratio, sets), lo, hi, median(cratio, sets));
    }
    nowait_free(bufs);
    close(fd);
    return 0;
}
