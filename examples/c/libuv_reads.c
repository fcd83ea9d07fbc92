/*
 * libnowait in a libuv loop: the queue's completion fd is watched with a
 * uv_poll_t, so the loop thread never blocks in libnowait (libuv's own
 * file reads go to its thread pool). READS random 4 KiB reads at DEPTH in
 * flight, each verified against pread(2).
 *
 *   libuv_reads FILE [READS [DEPTH [off|on|auto]]]

 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nowait.h>
#include <uv.h>

#define BS 4096

struct app {
    struct nowait_queue *q;
    struct nowait_file *f;
    int qfd, ref;
    unsigned depth;
    int64_t blocks;
    long reads, pushed, done, bad;
    unsigned char *bufs;
    uint64_t *offs;
    struct nowait_cqe *cqes;
    uv_poll_t poll;
    int err;
};

static uint64_t state = 0xD1B54A32D192ED03ULL;
static uint64_t rnd(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

static int push(struct app *a, unsigned i)
{
    a->offs[i] = (rnd() % (uint64_t)a->blocks) * BS;
    int r = nowait_push(a->q, a->f, a->bufs + (size_t)i * BS, BS, a->offs[i], i);
    if (r == 0) a->pushed++;
    return r;
}

static void on_readable(uv_poll_t *h, int status, int events)
{
    struct app *a = h->data;
    (void)events;
    if (status < 0) { a->err = status; uv_poll_stop(h); return; }
    uint64_t cnt;
    (void)!read(a->qfd, &cnt, sizeof cnt); /* clear, then reap until empty */
    int got;
    do {
        got = nowait_reap(a->q, a->cqes, a->depth, 0, 0);
        if (got < 0) { a->err = got; uv_poll_stop(h); return; }
        for (int k = 0; k < got; k++) {
            unsigned i = (unsigned)a->cqes[k].user_data;
            unsigned char check[BS];
            if (a->cqes[k].res != BS || pread(a->ref, check, BS, (off_t)a->offs[i]) != BS ||
                memcmp(check, a->bufs + (size_t)i * BS, BS))
                a->bad++;
            a->done++;
            if (a->pushed < a->reads && push(a, i) < 0) { a->err = -1; uv_poll_stop(h); return; }
        }
    } while (got == (int)a->depth);
    nowait_submit(a->q);
    if (a->done == a->reads) uv_poll_stop(h); /* nothing left: the loop ends */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [READS [DEPTH [off|on|auto]]]\n", argv[0]);
        return 2;
    }
    struct app a = {.reads = argc > 2 ? atol(argv[2]) : 20000,
                    .depth = argc > 3 ? (unsigned)atoi(argv[3]) : 32};
    const char *mode = argc > 4 ? argv[4] : "auto";
    int direct = !strcmp(mode, "on") ? NOWAIT_DIRECT_ON
                 : !strcmp(mode, "off") ? NOWAIT_DIRECT_OFF : NOWAIT_DIRECT_AUTO;
    int r = nowait_file_open(argv[1], direct, &a.f);
    if (r < 0) { fprintf(stderr, "open: %s\n", nowait_last_error()); return 1; }
    a.blocks = nowait_file_size(a.f) / BS;
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.depth = a.depth;
    if ((r = nowait_queue_create(&o, &a.q)) < 0 || (a.qfd = nowait_queue_fd(a.q)) < 0) {
        fprintf(stderr, "queue: %s\n", nowait_last_error());
        return 1;
    }
    a.ref = open(argv[1], O_RDONLY);
    a.bufs = nowait_alloc((size_t)a.depth * BS, 0);
    a.offs = calloc(a.depth, sizeof *a.offs);
    a.cqes = calloc(a.depth, sizeof *a.cqes);
    if (a.blocks <= 0 || a.ref < 0 || !a.bufs || !a.offs || !a.cqes) return 1;

    uv_loop_t *loop = uv_default_loop();
    uv_poll_init(loop, &a.poll, a.qfd);
    a.poll.data = &a;
    uv_poll_start(&a.poll, UV_READABLE, on_readable);
    for (unsigned i = 0; i < a.depth && a.pushed < a.reads; i++)
        if (push(&a, i) < 0) { fprintf(stderr, "push: %s\n", nowait_last_error()); return 1; }
    nowait_submit(a.q);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&a.poll, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);

    printf("libuv loop (backend %s): %ld reads verified against pread, %ld bad%s\n",
           nowait_queue_backend(a.q), a.done, a.bad, a.err ? ", stopped on an error" : "");
    nowait_queue_destroy(a.q);
    nowait_file_close(a.f);
    nowait_free(a.bufs);
    free(a.offs);
    free(a.cqes);
    close(a.ref);
    return a.bad || a.err || a.done != a.reads ? 1 : 0;
}
