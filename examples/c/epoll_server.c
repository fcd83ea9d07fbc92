/*
 * An epoll loop that serves reads without ever blocking in libnowait: the
 * queue's completion fd sits in the epoll set beside the server's other
 * fds (here a timerfd that ends the run). Each request is a 4 KiB read at
 * a random offset; when one completes, the loop "answers" it (checks its
 * first bytes against pread when --verify is given) and takes the next
 * request, keeping DEPTH reads in flight. At the end it prints reads/s,
 * CPU and context switches per read (getrusage).
 *
 * The completion fd is only watched and read, as nowait.h allows: the
 * loop never writes to it. When a reap fills the whole array, more
 * completions may be waiting; rather than reap in a loop (cached reads
 * complete as fast as they are pushed, and the server's other fds would
 * starve), the next epoll_wait does not sleep (timeout 0), so the other
 * fds get their turn, and the queue is reaped again.
 *
 *   epoll_server FILE [SECONDS [DEPTH]] [--uncached] [--verify]
 *
 * --uncached drops the file from the page cache first (POSIX_FADV_DONTNEED)
 * and asks for random access (no readahead), so reads go to the disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <nowait.h>

#define BS 4096

static uint64_t state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

static int fail(const char *what, int err)
{
    fprintf(stderr, "%s: %s\n  %s\n", what, nowait_strerror(err), nowait_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    int seconds = 5, uncached = 0, verify = 0;
    unsigned depth = 32;
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--uncached")) uncached = 1;
        else if (!strcmp(argv[i], "--verify")) verify = 1;
        else if (pos == 0) file = argv[i], pos++;
        else if (pos == 1) seconds = atoi(argv[i]), pos++;
        else if (pos == 2) depth = (unsigned)atoi(argv[i]), pos++;
    }
    if (!file || seconds <= 0 || depth == 0) {
        fprintf(stderr, "usage: %s FILE [SECONDS [DEPTH]] [--uncached] [--verify]\n", argv[0]);
        return 2;
    }
    int ref = open(file, O_RDONLY);
    if (ref < 0) { perror(file); return 1; }
    if (uncached) {
        posix_fadvise(ref, 0, 0, POSIX_FADV_DONTNEED);
        posix_fadvise(ref, 0, 0, POSIX_FADV_RANDOM);
    }

    struct nowait_file *f;
    int r = nowait_file_open(file, NOWAIT_DIRECT_OFF, &f);
    if (r < 0) return fail("open", r);
    int64_t blocks = nowait_file_size(f) / BS;
    if (blocks <= 0) { fprintf(stderr, "%s: smaller than one block\n", file); return 1; }
    struct nowait_queue_options opts;
    nowait_queue_options_init(&opts);
    opts.depth = depth;
    struct nowait_queue *q;
    if ((r = nowait_queue_create(&opts, &q)) < 0) return fail("queue", r);
    int qfd = nowait_queue_fd(q); /* before the first push */
    if (qfd < 0) return fail("queue fd", qfd);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct itimerspec its = {.it_value = {.tv_sec = seconds}};
    timerfd_settime(tfd, 0, &its, NULL);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = qfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, qfd, &ev);
    ev.data.fd = tfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);

    unsigned char *bufs = nowait_alloc((size_t)depth * BS, 0);
    uint64_t *offs = calloc(depth, sizeof *offs);
    struct nowait_cqe *cqes = calloc(depth, sizeof *cqes);
    unsigned char check[BS];
    for (unsigned i = 0; i < depth; i++) {
        offs[i] = (rnd() % (uint64_t)blocks) * BS;
        if ((r = nowait_push(q, f, bufs + (size_t)i * BS, BS, offs[i], i)) < 0) return fail("push", r);
    }
    if ((r = nowait_submit(q)) < 0) return fail("submit", r);

    struct rusage ru0, ru1;
    struct timespec t0, t1;
    getrusage(RUSAGE_SELF, &ru0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long served = 0, wakeups = 0, bad = 0;
    int running = 1, backlog = 0; /* backlog: the last reap filled cqes */
    while (running) {
        struct epoll_event evs[4];
        int n = epoll_wait(ep, evs, 4, backlog ? 0 : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            return 1;
        }
        wakeups++;
        int ready = backlog;
        for (int e = 0; e < n; e++) {
            if (evs[e].data.fd == tfd) {
                running = 0;
            } else if (evs[e].data.fd == qfd) {
                uint64_t cnt; /* clear the counter first, then reap */
                (void)!read(qfd, &cnt, sizeof cnt);
                ready = 1;
            }
        }
        if (!running || !ready) continue;
        int got = nowait_reap(q, cqes, depth, 0, 0);
        if (got < 0) return fail("reap", got);
        for (int k = 0; k < got; k++) {
            unsigned i = (unsigned)cqes[k].user_data;
            if (cqes[k].res != BS) bad++;
            else if (verify && (pread(ref, check, BS, (off_t)offs[i]) != BS ||
                                memcmp(check, bufs + (size_t)i * BS, BS))) bad++;
            served++;
            offs[i] = (rnd() % (uint64_t)blocks) * BS; /* the next request */
            if ((r = nowait_push(q, f, bufs + (size_t)i * BS, BS, offs[i], i)) < 0)
                return fail("push", r);
        }
        backlog = got == (int)depth;
        if ((r = nowait_submit(q)) < 0) return fail("submit", r);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &ru1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
                          ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
                          ru0.ru_stime.tv_usec) / 1e6;
    long csw = (ru1.ru_nvcsw - ru0.ru_nvcsw) + (ru1.ru_nivcsw - ru0.ru_nivcsw);
    printf("backend %s, %s, depth %u: %ld reads in %.2f s = %.0f reads/s, %.2f us CPU/read, "
           "%.3f context switches/read, %.1f reads per wake-up, %ld bad\n",
           nowait_queue_backend(q), uncached ? "uncached" : "cached", depth, served, s,
           (double)served / s, cpu * 1e6 / (double)(served ? served : 1),
           (double)csw / (double)(served ? served : 1), (double)served / (double)(wakeups ? wakeups : 1),
           bad);
    nowait_queue_destroy(q); /* waits for the reads still in flight */
    nowait_file_close(f);
    nowait_free(bufs);
    free(offs);
    free(cqes);
    close(tfd);
    close(ep);
    close(ref);
    return bad ? 1 : 0;
}
