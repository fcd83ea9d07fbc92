/*
 * Random reads with verification: READS reads of random sizes and offsets
 * (some past or across end of file) at DEPTH in flight, each checked byte
 * for byte against pread(2).
 *
 *   random_reads FILE [READS [DEPTH [off|on|auto]]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nowait.h>

#define MAXLEN (64 * 1024)

static uint64_t state = 0x2545F4914F6CDD1DULL;
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
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [READS [DEPTH [off|on|auto]]]\n", argv[0]);
        return 2;
    }
    long reads = argc > 2 ? atol(argv[2]) : 100000;
    unsigned depth = argc > 3 ? (unsigned)atoi(argv[3]) : 32;
    const char *mode = argc > 4 ? argv[4] : "auto";
    int direct = !strcmp(mode, "on") ? NOWAIT_DIRECT_ON
                 : !strcmp(mode, "off") ? NOWAIT_DIRECT_OFF : NOWAIT_DIRECT_AUTO;

    struct nowait_file *f;
    int r = nowait_file_open(argv[1], direct, &f);
    if (r < 0) return fail("open", r);
    int64_t size = nowait_file_size(f);
    uint32_t mem_align, off_align;
    nowait_file_dio_align(f, &mem_align, &off_align);
    uint32_t align = direct == NOWAIT_DIRECT_ON ? off_align : 1; /* strict: aligned reads only */

    struct nowait_queue_options opts;
    nowait_queue_options_init(&opts);
    opts.depth = depth;
    struct nowait_queue *q;
    if ((r = nowait_queue_create(&opts, &q)) < 0) return fail("queue", r);
    printf("%s: %s, %" PRId64 " bytes, %s; backend %s (%s)\n", argv[1], nowait_file_fs(f), size,
           nowait_file_is_direct(f) ? "O_DIRECT" : "buffered", nowait_queue_backend(q),
           nowait_queue_backend_reason(q));

    int ref = open(argv[1], O_RDONLY);
    unsigned char *bufs = nowait_alloc((size_t)depth * MAXLEN, 0); /* page-aligned slots */
    unsigned char *check = malloc(MAXLEN);
    uint64_t *offs = calloc(depth, sizeof *offs);
    size_t *lens = calloc(depth, sizeof *lens);
    struct nowait_cqe *cqes = calloc(depth, sizeof *cqes);
    if (ref < 0 || !bufs || !check || !offs || !lens || !cqes) return 1;

    long pushed = 0, done = 0, bad = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; i < depth && pushed < reads; i++, pushed++) {
        lens[i] = (1 + rnd() % MAXLEN + align - 1) / align * align;
        if (lens[i] > MAXLEN) lens[i] -= align;
        offs[i] = (rnd() % (uint64_t)(size + 8192)) / align * align;
        if ((r = nowait_push(q, f, bufs + (size_t)i * MAXLEN, lens[i], offs[i], i)) < 0)
            return fail("push", r);
    }
    while (done < reads) {
        int n = nowait_reap(q, cqes, depth, 1, -1); /* submits, waits for >= 1 */
        if (n < 0) return fail("reap", n);
        for (int k = 0; k < n; k++) {
            unsigned i = (unsigned)cqes[k].user_data;
            ssize_t want = pread(ref, check, lens[i], (off_t)offs[i]);
            if (cqes[k].res != want || memcmp(check, bufs + (size_t)i * MAXLEN, (size_t)want)) {
                fprintf(stderr, "MISMATCH read of %zu at %" PRIu64 ": res %" PRId64 ", pread %zd\n",
                        lens[i], offs[i], cqes[k].res, want);
                bad++;
            }
            done++;
            if (pushed < reads) {
                lens[i] = (1 + rnd() % MAXLEN + align - 1) / align * align;
                if (lens[i] > MAXLEN) lens[i] -= align;
                offs[i] = (rnd() % (uint64_t)(size + 8192)) / align * align;
                if ((r = nowait_push(q, f, bufs + (size_t)i * MAXLEN, lens[i], offs[i], i)) < 0)
                    return fail("push", r);
                pushed++;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%ld reads verified against pread, %ld mismatches, %.0f reads/s (with the checks)\n",
           done, bad, (double)done / s);
    nowait_queue_destroy(q);
    nowait_file_close(f);
    nowait_free(bufs);
    free(check);
    free(offs);
    free(lens);
    free(cqes);
    close(ref);
    return bad ? 1 : 0;
}
