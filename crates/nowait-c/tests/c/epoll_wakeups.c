/*
 * No finished read waits for its wake-up (`make epoll-wakeups`, part of
 * `make check`). Written from nowait.h's rule for nowait_queue_fd() alone:
 * an epoll loop keeps DEPTH reads in flight; when the fd is readable it
 * reads the 8-byte counter, then reaps 8 completions at a time until a
 * reap returns fewer than 8, pushes one new read per completion, submits.
 *
 * Reads are small and mixed (1 B to 64 KiB, log-uniform, at any offset,
 * some past the end of the file) on a NOWAIT_DIRECT_AUTO file, so a run
 * mixes reads the backend completes, reads the queue finishes itself
 * (memory-backed files read on the calling thread, bounced reads, zero-byte
 * reads at end of file) and short reads it reads on. Every byte is checked
 * against the file's contents.
 *
 * A finished read must be announced: the loop never reaps without a
 * wake-up, so a lost one stalls it. It waits for the fd for WAIT_MS, and
 * when that passes quietly, waits on (still without a call on the queue)
 * up to WATCHDOG_MS, a time no read of this test takes. Only when the
 * watchdog passes with the fd unreadable does it reap (min 0): finished
 * reads found then waited WATCHDOG_MS unannounced, a lost wake-up (exit 3).
 * A wake-up that comes after WAIT_MS is late, not lost: the reads were
 * slow, or the thread that posts results (the reaping thread itself, with
 * io_uring's task work) was not run, as on a loaded machine. Lateness is
 * reported, never failed: quiet waits, how many of them found the fd
 * readable at once (the wake-up came as epoll_wait's timeout fired), and
 * the longest wait for a wake-up.
 *
 *   epoll_wakeups FILE BACKEND RUNS READS [SEED]
 *     BACKEND: auto uring aio aio+pool pool sync
 *   exit 0: every run passed; 1: a read failed or returned wrong bytes;
 *   2: usage or setup; 3: a lost wake-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nowait.h"

#define DEPTH 32
#define PER_REAP 8
#define MAX_LEN 65536
#define WAIT_MS 100
#define WATCHDOG_MS 20000

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

struct slot {
    unsigned char *buf;
    uint64_t offset;
    size_t len;
};

static unsigned char *content; /* the file, as pread returns it */
static uint64_t file_size;

static void plan(struct slot *s)
{
    /* Lengths log-uniform in 1 B .. 64 KiB; offsets anywhere, 1 in 8 near
     * or past the end. */
    size_t len = 1 + (size_t)(next() % (1ull << (next() % 17)));
    if (len > MAX_LEN) len = MAX_LEN;
    uint64_t off = next() % 8 == 0 ? file_size - (next() % (2 * MAX_LEN)) % file_size + next() % 4096
                                   : next() % file_size;
    s->offset = off;
    s->len = len;
}

static int check(const struct slot *s, int64_t res, const char *where)
{
    uint64_t end = s->offset + s->len < file_size ? s->offset + s->len : file_size;
    int64_t want = s->offset < file_size ? (int64_t)(end - s->offset) : 0;
    if (res != want) {
        fprintf(stderr, "%s: read of %zu at %" PRIu64 " returned %" PRId64 ", want %" PRId64 " (%s)\n",
                where, s->len, s->offset, res, want, res < 0 ? nowait_last_error() : "");
        return 1;
    }
    if (want > 0 && memcmp(s->buf, content + s->offset, (size_t)want) != 0) {
        fprintf(stderr, "%s: read of %zu at %" PRIu64 ": bytes differ from pread's\n", where, s->len,
                s->offset);
        return 1;
    }
    return 0;
}

/* Push the next read into slot `id`, if any are left. */
static int refill(struct nowait_queue *q, struct nowait_file *f, struct slot *slots, uint64_t id,
                  long *pushed, long reads)
{
    if (*pushed >= reads) return 0;
    struct slot *s = &slots[id];
    plan(s);
    if (nowait_push(q, f, s->buf, s->len, s->offset, id) < 0) {
        fprintf(stderr, "push: %s\n", nowait_last_error());
        return 1;
    }
    ++*pushed;
    return 0;
}

/* Is `fd` readable right now? */
static int readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s FILE BACKEND RUNS READS [SEED]\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name;
        uint32_t kind;
    } kinds[] = {{"auto", NOWAIT_BACKEND_AUTO},     {"uring", NOWAIT_BACKEND_URING},
                 {"aio", NOWAIT_BACKEND_AIO},       {"aio+pool", NOWAIT_BACKEND_AIO_POOL},
                 {"pool", NOWAIT_BACKEND_POOL},     {"sync", NOWAIT_BACKEND_SYNC}};
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.depth = DEPTH;
    int found = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(argv[2], kinds[i].name) == 0) o.backend = kinds[i].kind, found = 1;
    if (!found) {
        fprintf(stderr, "unknown backend %s\n", argv[2]);
        return 2;
    }
    long runs = atol(argv[3]), reads = atol(argv[4]);
    uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    rng = seed | 1;
    /* NOWAIT_WAKE_SWALLOW=1: clear the fd once, after the first reads were
     * announced, without reaping them, with a 300 ms watchdog: the loop must
     * then report a lost wake-up (exit 3). `make epoll-wakeups` runs this
     * to show that the check can fail. */
    const char *sw = getenv("NOWAIT_WAKE_SWALLOW");
    int swallow = sw && strcmp(sw, "1") == 0;
    int watchdog_ms = swallow ? 300 : WATCHDOG_MS;
    alarm(600); /* a hang fails */

    int rfd = open(argv[1], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (rfd < 0 || fstat(rfd, &st) < 0 || st.st_size <= 0) {
        perror(argv[1]);
        return 2;
    }
    file_size = (uint64_t)st.st_size;
    content = malloc(file_size);
    for (uint64_t got = 0; got < file_size;) {
        ssize_t n = pread(rfd, content + got, file_size - got, (off_t)got);
        if (n <= 0) {
            perror("pread");
            return 2;
        }
        got += (uint64_t)n;
    }
    close(rfd);

    struct nowait_file *f;
    if (nowait_file_open(argv[1], NOWAIT_DIRECT_AUTO, &f) < 0) {
        fprintf(stderr, "open: %s\n", nowait_last_error());
        return 2;
    }
    struct slot slots[DEPTH];
    for (int i = 0; i < DEPTH; i++) slots[i].buf = nowait_alloc(MAX_LEN, 0);
    long quiet = 0, raced = 0, done_total = 0;
    double longest_ms = 0;
    char backend[32] = "?";
    for (long run = 0; run < runs; run++) {
        struct nowait_queue *q;
        if (nowait_queue_create(&o, &q) < 0) {
            fprintf(stderr, "%s: %s\n", argv[2], nowait_last_error());
            return 2;
        }
        snprintf(backend, sizeof backend, "%s", nowait_queue_backend(q));
        int fd = nowait_queue_fd(q);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN};
        if (fd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            fprintf(stderr, "completion fd: %s\n", fd < 0 ? nowait_last_error() : strerror(errno));
            return 2;
        }
        long pushed = 0, done = 0;
        for (int i = 0; i < DEPTH; i++)
            if (refill(q, f, slots, (uint64_t)i, &pushed, reads)) return 1;
        nowait_submit(q);
        if (swallow && run == 0) {
            /* The check's own check: take the first wake-up away. */
            struct pollfd p = {.fd = fd, .events = POLLIN};
            while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
            uint64_t count;
            (void)!read(fd, &count, sizeof count);
        }
        while (done < reads) {
            int r = epoll_wait(ep, &ev, 1, WAIT_MS);
            if (r < 0 && errno == EINTR) continue;
            struct nowait_cqe cq[2 * DEPTH];
            if (r == 0) {
                /* Quiet for WAIT_MS: wait on, without touching the queue,
                 * until the fd is readable or the watchdog passes. */
                quiet++;
                if (readable(fd)) {
                    raced++;
                    if (longest_ms < WAIT_MS) longest_ms = WAIT_MS;
                } else {
                    double t0 = now_ms() - WAIT_MS;
                    do
                        r = epoll_wait(ep, &ev, 1, watchdog_ms);
                    while (r < 0 && errno == EINTR);
                    double waited = now_ms() - t0;
                    if (waited > longest_ms) longest_ms = waited;
                    if (r == 0) {
                        int n = nowait_reap(q, cq, 2 * DEPTH, 0, 0);
                        printf("%s: %s (%s), run %ld of %ld, seed %" PRIu64
                               ": the completion fd stayed unreadable %.0f ms with %d in flight "
                               "(%ld of %ld done); a reap then found %d finished\n",
                               n > 0 ? "LOST WAKE-UP" : "NO COMPLETION", argv[2], backend, run,
                               runs, seed, waited, nowait_queue_in_flight(q) + (n > 0 ? n : 0),
                               done, reads, n);
                        return n > 0 ? 3 : 1;
                    }
                }
            }
            uint64_t count;
            (void)!read(fd, &count, sizeof count);
            /* Odd runs push the next reads as completions come in, even
             * runs once the fd is drained (a server that answers first). */
            int refill_now = run % 2, n, freed = 0;
            uint64_t free_ids[DEPTH];
            do {
                n = nowait_reap(q, cq, PER_REAP, 0, 0);
                if (n < 0) {
                    fprintf(stderr, "reap: %s\n", nowait_last_error());
                    return 1;
                }
                for (int k = 0; k < n; k++, done++) {
                    struct slot *s = &slots[cq[k].user_data];
                    if (check(s, cq[k].res, argv[2])) return 1;
                    free_ids[freed++] = cq[k].user_data;
                }
                for (; refill_now && freed > 0; freed--)
                    if (refill(q, f, slots, free_ids[freed - 1], &pushed, reads)) return 1;
            } while (n == PER_REAP);
            for (; freed > 0; freed--)
                if (refill(q, f, slots, free_ids[freed - 1], &pushed, reads)) return 1;
            nowait_submit(q);
        }
        done_total += done;
        close(ep);
        nowait_queue_destroy(q);
    }
    nowait_file_close(f);
    for (int i = 0; i < DEPTH; i++) nowait_free(slots[i].buf);
    free(content);
    printf("ok: %s (%s) %ld runs, %ld reads, seed %" PRIu64 "; late wake-ups: %ld waits past %d ms "
           "(%ld readable as the wait timed out), the longest %.0f ms\n",
           argv[2], backend, runs, done_total, seed, quiet, WAIT_MS, raced,
           longest_ms);
    return 0;
}
