/*
 * C tests of libnowait, run by `make -C crates/nowait-c test` (and under
 * AddressSanitizer and valgrind by test-asan / test-valgrind).
 *
 * Every read is checked byte for byte against pread(2) of the same file:
 * random sizes and offsets, offsets past and straddling end of file, every
 * direct mode, depths 1 to 256, on every backend the machine offers. Then
 * the errors (missing file, directory, misaligned O_DIRECT, a full queue,
 * bad arguments), the fallback with io_uring disabled, the completion fd,
 * and destroying a queue with reads in flight. A watchdog (alarm) makes a
 * hang fail instead of wait.
 *
 * Usage: test_nowait [DIR]   (DIR: where to write the test file; default
 * the current directory, which should be on a disk filesystem so O_DIRECT
 * works; NOWAIT_TEST_SEED=N replays a run; NOWAIT_TEST_QUICK=1 does fewer
 * reads, for valgrind).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nowait.h"

static int failures;
static uint64_t seed;
static char path[4096]; /* the test file */

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, " (seed %" PRIu64 ", last error: %s)\n", seed,    \
                    nowait_last_error());                                     \
            failures++;                                                       \
        }                                                                     \
    } while (0)

/* Like CHECK, but stops the run (the condition is evaluated once). */
#define REQUIRE(cond, ...)                                                    \
    do {                                                                      \
        int ok_ = (cond) ? 1 : 0;                                             \
        CHECK(ok_ && #cond, __VA_ARGS__);                                     \
        if (!ok_) {                                                           \
            if (path[0]) unlink(path);                                        \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) /* xorshift64* */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* The file: seeded random bytes, a size that is not block-aligned. */
static char dirpath[4096];
static int64_t file_size;
static unsigned char *content;
static int ref_fd; /* buffered, for pread */

static void make_file(const char *dir)
{
    file_size = (4 << 20) + 1234;
    snprintf(path, sizeof path, "%s/nowait-c-test.%d", dir, (int)getpid());
    snprintf(dirpath, sizeof dirpath, "%s", dir);
    content = malloc((size_t)file_size);
    REQUIRE(content != NULL, "malloc");
    uint64_t s = seed ^ 0x9e3779b97f4a7c15ULL;
    for (int64_t i = 0; i < file_size; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        content[i] = (unsigned char)(s >> 56);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0, "create %s: %s", path, strerror(errno));
    REQUIRE(write(fd, content, (size_t)file_size) == file_size, "write");
    REQUIRE(fsync(fd) == 0, "fsync");
    close(fd);
    ref_fd = open(path, O_RDONLY);
    REQUIRE(ref_fd >= 0, "open ref");
}

/* One read in flight: its memory (with guard bytes around it) and request. */
struct slot {
    unsigned char *mem; /* allocation */
    unsigned char *buf; /* where the read lands (mem + 64 + skew) */
    size_t len;
    uint64_t off;
    int busy;
};

#define GUARD 64
#define MAXLEN (128 * 1024)

/* O_DIRECT moves whole blocks: at end of file the kernel may write the
 * rest of the last block (zeros) into the buffer, within `len`. Buffered
 * reads write exactly `res` bytes. */
static int tail_untouched;

static void verify(struct slot *s, int64_t res, const char *what)
{
    int64_t want = 0;
    if ((int64_t)s->off < file_size) {
        want = file_size - (int64_t)s->off;
        if (want > (int64_t)s->len) want = (int64_t)s->len;
    }
    CHECK(res == want, "%s: read of %zu at %" PRIu64 ": res %" PRId64 ", expected %" PRId64,
          what, s->len, s->off, res, want);
    if (res == want && want > 0) {
        /* Byte for byte against pread of the same range. */
        unsigned char *ref = malloc((size_t)want);
        ssize_t n = pread(ref_fd, ref, (size_t)want, (off_t)s->off);
        CHECK(n == want, "pread reference");
        CHECK(memcmp(s->buf, ref, (size_t)want) == 0 &&
                  memcmp(s->buf, content + s->off, (size_t)want) == 0,
              "%s: bytes of read of %zu at %" PRIu64 " differ from pread", what, s->len,
              s->off);
        free(ref);
    }
    /* Nothing written before the buffer or past what was read. */
    for (int i = 0; i < GUARD; i++)
        if (s->buf[-1 - i] != 0xA5) {
            CHECK(0, "%s: byte before the buffer was written", what);
            break;
        }
    size_t from = tail_untouched ? (size_t)(res > 0 ? res : 0) : s->len;
    for (size_t i = from; i < s->len + GUARD; i++)
        if (s->buf[i] != 0xA5) {
            CHECK(0, "%s: byte %zu past the %" PRId64 " read was written", what, i, res);
            break;
        }
}

static uint64_t pick_offset(uint32_t align)
{
    uint64_t r = rnd() % 100, off;
    if (r < 10) /* past end of file */
        off = (uint64_t)file_size + rnd() % 8192;
    else if (r < 20) /* straddling end of file */
        off = (uint64_t)file_size - 1 - rnd() % 8192;
    else
        off = rnd() % (uint64_t)file_size;
    return off / align * align;
}

static size_t pick_len(uint32_t align)
{
    uint64_t r = rnd() % 100;
    size_t len;
    if (r < 40)
        len = 4096;
    else if (r < 70)
        len = 1 + rnd() % 4096;
    else
        len = 1 + rnd() % MAXLEN;
    len = (len + align - 1) / align * align;
    return len > MAXLEN ? MAXLEN / align * align : len;
}

/* Random reads through a queue of `depth` on a file opened with `direct`,
 * verified one by one. Returns reads done (0 if the mode is impossible). */
static int random_reads(const char *label, const struct nowait_queue_options *opts, int direct,
                        int reads)
{
    struct nowait_file *f;
    int r = nowait_file_open(path, direct, &f);
    if (r == -EOPNOTSUPP && direct == NOWAIT_DIRECT_ON) {
        printf("SKIP %s direct=on: %s\n", label, nowait_last_error());
        return 0;
    }
    REQUIRE(r == 0, "%s: open: %d", label, r);
    uint32_t mem_align = 0, off_align = 0;
    REQUIRE(nowait_file_dio_align(f, &mem_align, &off_align) == 0, "dio_align");
    int strict = direct == NOWAIT_DIRECT_ON;
    tail_untouched = !nowait_file_is_direct(f);
    uint32_t oa = strict ? off_align : 1;

    struct nowait_queue *q;
    r = nowait_queue_create(opts, &q);
    REQUIRE(r == 0, "%s: queue_create: %d", label, r);
    unsigned depth = opts ? opts->depth : 32;
    struct slot *slots = calloc(depth, sizeof *slots);
    struct nowait_cqe *cqes = calloc(depth, sizeof *cqes);
    for (unsigned i = 0; i < depth; i++) {
        slots[i].mem = nowait_alloc(MAXLEN + 8 * 4096, 4096);
        REQUIRE(slots[i].mem != NULL, "nowait_alloc");
    }
    int pushed = 0, done = 0;
    unsigned busy = 0;
    while (done < reads) {
        /* Fill every free slot. */
        for (unsigned i = 0; i < depth && pushed < reads; i++) {
            struct slot *s = &slots[i];
            if (s->busy) continue;
            s->len = pick_len(oa);
            s->off = pick_offset(oa);
            /* Strict direct: an aligned address; else any skew at all. */
            size_t skew = strict ? (size_t)mem_align * (rnd() % 4) : rnd() % 4096;
            s->buf = s->mem + GUARD + (strict ? (4096 - GUARD) : 0) + skew;
            memset(s->buf - GUARD, 0xA5, s->len + 2 * GUARD);
            r = nowait_push(q, f, s->buf, s->len, s->off, i);
            REQUIRE(r == 0, "%s: push %zu at %" PRIu64 ": %d", label, s->len, s->off, r);
            s->busy = 1;
            busy++;
            pushed++;
        }
        if (rnd() % 2) CHECK(nowait_submit(q) == 0, "submit");
        unsigned want = 1 + (unsigned)(rnd() % busy);
        int n = nowait_reap(q, cqes, depth, want, -1);
        REQUIRE(n >= (int)want, "%s: reap returned %d, wanted at least %u", label, n, want);
        for (int k = 0; k < n; k++) {
            REQUIRE(cqes[k].user_data < depth && slots[cqes[k].user_data].busy,
                    "%s: unknown user_data %" PRIu64, label, cqes[k].user_data);
            struct slot *s = &slots[cqes[k].user_data];
            verify(s, cqes[k].res, label);
            s->busy = 0;
            busy--;
            done++;
        }
    }
    CHECK(nowait_queue_in_flight(q) == 0, "in flight after all reaped");
    nowait_queue_destroy(q);
    for (unsigned i = 0; i < depth; i++) nowait_free(slots[i].mem);
    free(slots);
    free(cqes);
    nowait_file_close(f);
    return done;
}

static void test_random_reads(int quick, const char *backend_label, uint32_t backend)
{
    static const int modes[] = {NOWAIT_DIRECT_OFF, NOWAIT_DIRECT_AUTO, NOWAIT_DIRECT_ON};
    static const char *mode_names[] = {"off", "auto", "on"};
    static const unsigned depths[] = {1, 32, 256};
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < 3; d++) {
            struct nowait_queue_options o;
            nowait_queue_options_init(&o);
            o.depth = depths[d];
            o.backend = backend;
            char label[128];
            snprintf(label, sizeof label, "%s direct=%s depth=%u", backend_label, mode_names[m],
                     depths[d]);
            int reads = quick ? 300 : (depths[d] == 1 ? 1000 : 3000);
            int n = random_reads(label, &o, modes[m], reads);
            if (n) printf("ok   %s: %d reads verified\n", label, n);
        }
}

static void test_errors(void)
{
    struct nowait_file *f = NULL;
    int r;
    char missing[4200];
    snprintf(missing, sizeof missing, "%s.missing", path);
    CHECK(nowait_file_open(missing, NOWAIT_DIRECT_OFF, &f) == -ENOENT, "missing file");
    CHECK(strstr(nowait_last_error(), missing) != NULL, "message names the path: %s",
          nowait_last_error());
    CHECK(nowait_file_open(dirpath, NOWAIT_DIRECT_AUTO, &f) == -EISDIR, "directory");
    CHECK(strstr(nowait_last_error(), "directory") != NULL, "message says directory");
    CHECK(nowait_file_open(path, 7, &f) == -EINVAL, "bad direct mode");
    /* A fifo: refused at once (an open(2) of it would block for a writer). */
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s.fifo", path);
    if (mkfifo(fifo, 0600) == 0) {
        CHECK(nowait_file_open(fifo, NOWAIT_DIRECT_OFF, &f) == -ESPIPE, "fifo");
        CHECK(strstr(nowait_last_error(), "fifo") != NULL, "message: %s", nowait_last_error());
        unlink(fifo);
    } else {
        printf("SKIP fifo: mkfifo: %s\n", strerror(errno));
    }
    /* A character device: -ESPIPE, as a fifo (nowait reads at offsets). */
    r = nowait_file_open("/dev/null", NOWAIT_DIRECT_OFF, &f);
    CHECK(r == -ESPIPE, "a character device is refused with -ESPIPE (%d)", r);
    CHECK(strstr(nowait_last_error(), "character device") != NULL, "message: %s",
          nowait_last_error());
    /* O_DIRECT where the filesystem has none (procfs): -EOPNOTSUPP, and the
     * message names the modes to ask for instead as this header spells them. */
    r = nowait_file_open("/proc/version", NOWAIT_DIRECT_ON, &f);
    CHECK(r == -EOPNOTSUPP, "NOWAIT_DIRECT_ON on procfs: %d", r);
    CHECK(strstr(nowait_last_error(), "NOWAIT_DIRECT_OFF") != NULL &&
              strstr(nowait_last_error(), "NOWAIT_DIRECT_AUTO") != NULL &&
              strstr(nowait_last_error(), "::") == NULL &&
              strstr(nowait_last_error(), "--") == NULL,
          "message in C's words: %s", nowait_last_error());
    /* *out is written only on success. */
    struct nowait_file *untouched = (struct nowait_file *)&r;
    CHECK(nowait_file_open(missing, NOWAIT_DIRECT_OFF, &untouched) == -ENOENT &&
              untouched == (struct nowait_file *)&r,
          "*out written by a failed nowait_file_open");
    CHECK(nowait_file_open(NULL, NOWAIT_DIRECT_OFF, &f) == -EINVAL, "NULL path");
    CHECK(nowait_file_open(path, NOWAIT_DIRECT_OFF, NULL) == -EINVAL, "NULL out");
    CHECK(strcmp(nowait_strerror(-EBUSY), nowait_strerror(EBUSY)) == 0 &&
              strncmp(nowait_strerror(-EBUSY), "EBUSY: ", 7) == 0,
          "strerror: %s", nowait_strerror(-EBUSY));

    /* A full queue: depth 4, four reads pushed, the fifth is refused. */
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.depth = 4;
    struct nowait_queue *q;
    REQUIRE(nowait_queue_create(&o, &q) == 0, "create depth 4");
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_OFF, &f) == 0, "open");
    unsigned char *mem = nowait_alloc(5 * 4096, 0);
    for (int i = 0; i < 4; i++)
        CHECK(nowait_push(q, f, mem + i * 4096, 4096, (uint64_t)i * 4096, (uint64_t)i) == 0,
              "push %d", i);
    CHECK(nowait_push(q, f, mem + 4 * 4096, 4096, 0, 4) == -EBUSY, "fifth push: queue full");
    CHECK(strstr(nowait_last_error(), "slots") != NULL &&
              strstr(nowait_last_error(), "opts->depth") != NULL,
          "message: %s", nowait_last_error());
    CHECK(nowait_push(q, f, mem + 4 * 4096, 4096, 0, 4) == -EBUSY,
          "pushing again without reaping fails the same way");
    struct nowait_cqe cqes[4];
    CHECK(nowait_reap(q, cqes, 4, 5, -1) == -EINVAL, "min > max");
    CHECK(nowait_reap(q, cqes, 4, 1, -7) == -EINVAL, "bad timeout");
    CHECK(nowait_reap(NULL, cqes, 4, 1, -1) == -EINVAL, "NULL queue");
    /* A handle of the wrong kind is recognised by its tag, read at offset 0
     * of either kind (valgrind and ASan see no read past the object). */
    CHECK(nowait_reap((struct nowait_queue *)(void *)f, cqes, 4, 1, 0) == -EBADF,
          "a file passed as the queue");
    CHECK(nowait_file_size((struct nowait_file *)(void *)q) == -EBADF,
          "a queue passed as the file");
    int got = 0;
    while (got < 4) {
        int n = nowait_reap(q, cqes + got, (unsigned)(4 - got), 1, 10000);
        REQUIRE(n > 0, "reap: %d", n);
        got += n;
    }
    for (int i = 0; i < 4; i++) {
        CHECK(cqes[i].res == 4096, "res %" PRId64, cqes[i].res);
        uint64_t u = cqes[i].user_data;
        CHECK(memcmp(mem + u * 4096, content + u * 4096, 4096) == 0, "data of %" PRIu64, u);
    }
    /* Now there is room again; a timeout-0 reap on an idle queue returns 0. */
    CHECK(nowait_push(q, f, mem, 4096, 0, 9) == 0, "push after reap");
    got = 0;
    while (got == 0) got = nowait_reap(q, cqes, 4, 1, 10000);
    CHECK(got == 1 && cqes[0].user_data == 9 && cqes[0].res == 4096, "read after full");
    CHECK(nowait_reap(q, cqes, 4, 1, 0) == 0, "nothing in flight, timeout 0");
    /* A read ending past the largest file offset (2^63 - 1) is refused: the
     * kernel would take UINT64_MAX (-1) as "the file's current position". */
    CHECK(nowait_push(q, f, mem, 4096, UINT64_MAX, 10) == -EINVAL, "offset UINT64_MAX");
    CHECK(strstr(nowait_last_error(), "largest file offset") != NULL, "message: %s",
          nowait_last_error());
    CHECK(nowait_push(q, f, mem, 4096, (uint64_t)INT64_MAX - 100, 11) == -EINVAL,
          "read ending past INT64_MAX");
    CHECK(nowait_reap(q, cqes, 4, 1, 0) == 0, "the refused reads were not queued");
    /* One ending exactly at INT64_MAX is end of file (0), in every direct
     * mode: an unaligned one on an O_DIRECT file is not bounced past it. */
    for (int dm = 0; dm < 3; dm++) {
        struct nowait_file *g;
        int d = dm == 0 ? NOWAIT_DIRECT_OFF : dm == 1 ? NOWAIT_DIRECT_AUTO : NOWAIT_DIRECT_ON;
        if (nowait_file_open(path, d, &g) != 0) continue;
        int rc = nowait_push(q, g, mem, 100, (uint64_t)INT64_MAX - 100, 12);
        if (d == NOWAIT_DIRECT_ON && nowait_file_is_direct(g)) {
            CHECK(rc == -EINVAL, "unaligned read on direct=on: %d", rc);
        } else {
            CHECK(rc == 0, "read ending at INT64_MAX, direct mode %d: %d", d, rc);
            got = 0;
            while (rc == 0 && got == 0) got = nowait_reap(q, cqes, 4, 1, 10000);
            CHECK(rc != 0 || (got == 1 && cqes[0].res == 0),
                  "read ending at INT64_MAX, direct mode %d: res %" PRId64, d, cqes[0].res);
        }
        nowait_file_close(g);
    }
    nowait_queue_destroy(q);
    nowait_free(mem);
    nowait_file_close(f);

    /* Misaligned reads on direct=on are refused with -EINVAL. */
    if (nowait_file_open(path, NOWAIT_DIRECT_ON, &f) == 0) {
        uint32_t ma, oa;
        nowait_file_dio_align(f, &ma, &oa);
        REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
        mem = nowait_alloc(3 * 4096, 4096);
        CHECK(nowait_push(q, f, mem, 4096, 1, 1) == -EINVAL, "misaligned offset");
        CHECK(strstr(nowait_last_error(), "not aligned") != NULL, "message: %s",
              nowait_last_error());
        CHECK(nowait_push(q, f, mem, 100, 0, 2) == -EINVAL, "misaligned length");
        if (ma > 1) CHECK(nowait_push(q, f, mem + 1, 4096, 0, 3) == -EINVAL, "misaligned buffer");
        CHECK(nowait_queue_in_flight(q) == 0, "refused reads are not in flight");
        nowait_queue_destroy(q);
        nowait_free(mem);
        nowait_file_close(f);
        printf("ok   errors: misaligned direct=on reads refused (-EINVAL)\n");
    } else {
        printf("SKIP misaligned direct=on: %s\n", nowait_last_error());
    }

    /* Options: a wrong size, an unknown option from a newer caller. */
    struct {
        struct nowait_queue_options o;
        uint32_t newer;
    } big;
    memset(&big, 0, sizeof big);
    nowait_queue_options_init(&big.o);
    big.o.size = sizeof big;
    CHECK(nowait_queue_create(&big.o, &q) == 0, "newer caller, extra field zero");
    nowait_queue_destroy(q);
    big.newer = 1;
    CHECK(nowait_queue_create(&big.o, &q) == -EINVAL, "newer caller, unknown option set");
    nowait_queue_options_init(&o);
    o.size = 2;
    CHECK(nowait_queue_create(&o, &q) == -EINVAL, "size not set");
    nowait_queue_options_init(&o);
    o.depth = NOWAIT_MAX_DEPTH + 1;
    struct nowait_queue *untouched_q = (struct nowait_queue *)&o;
    CHECK(nowait_queue_create(&o, &untouched_q) == -EINVAL, "depth too large");
    CHECK(strstr(nowait_last_error(), "opts->depth = 16385") != NULL, "message: %s",
          nowait_last_error());
    CHECK(untouched_q == (struct nowait_queue *)&o, "*out written by a failed create");
    nowait_queue_options_init(&o);
    o.backend = 99;
    CHECK(nowait_queue_create(&o, &q) == -EINVAL, "bad backend");
    nowait_queue_options_init(&o);
    o.cache = 9;
    CHECK(nowait_queue_create(&o, &q) == -EINVAL, "bad cache policy");
    CHECK(nowait_alloc(4096, 3) == NULL, "alloc with a bad alignment");

    /* The backend's name is a static string: still valid after the queue is
     * destroyed (ASan and valgrind catch a read of freed memory here). */
    REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
    const char *name = nowait_queue_backend(q);
    char copy[32];
    snprintf(copy, sizeof copy, "%s", name);
    nowait_queue_destroy(q);
    CHECK(strcmp(name, copy) == 0, "backend name after destroy: %s", name);
    printf("ok   errors: missing file, directory, full queue, bad arguments\n");
}

/* Pages of the test file in the page cache (mincore over a mapping). */
static size_t resident_pages(size_t *total)
{
    size_t len = (size_t)file_size, pages = (len + 4095) / 4096, n = 0;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, ref_fd, 0);
    REQUIRE(m != MAP_FAILED, "mmap");
    unsigned char *v = malloc(pages);
    REQUIRE(v && mincore(m, len, v) == 0, "mincore");
    for (size_t i = 0; i < pages; i++) n += v[i] & 1;
    free(v);
    munmap(m, len);
    *total = pages;
    return n;
}

/* NOWAIT_CACHE_DROP: reads verified as ever, and a whole-file read leaves
 * (almost) nothing of the file in the page cache, where the default keeps
 * all of it. */
static void test_uncached(void)
{
    struct nowait_file *f;
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_OFF, &f) == 0, "open");
    if (strcmp(nowait_file_fs(f), "tmpfs") == 0) {
        printf("SKIP cache=drop: the test file is on tmpfs, which has no uncached reads\n");
        nowait_file_close(f);
        return;
    }
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.cache = NOWAIT_CACHE_DROP;
    int n = random_reads("cache=drop", &o, NOWAIT_DIRECT_OFF, 300);
    printf("ok   cache=drop: %d reads verified\n", n);
    /* keep; drop on the queue; a keep queue over a file set to drop. */
    const uint32_t policies[] = {NOWAIT_CACHE_KEEP, NOWAIT_CACHE_DROP, NOWAIT_CACHE_KEEP};
    size_t left[3], total = 0;
    CHECK(nowait_file_set_cache(f, 7) == -EINVAL, "a bad cache policy");
    CHECK(strstr(nowait_last_error(), "NOWAIT_CACHE_KEEP") != NULL, "message: %s",
          nowait_last_error());
    CHECK(nowait_file_set_cache(NULL, NOWAIT_CACHE_DROP) == -EINVAL, "a NULL file");
    for (int p = 0; p < 3; p++) {
        CHECK(posix_fadvise(ref_fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise");
        if (p == 2) CHECK(nowait_file_set_cache(f, NOWAIT_CACHE_DROP) == 0, "file: drop");
        nowait_queue_options_init(&o);
        o.cache = policies[p];
        struct nowait_queue *q;
        REQUIRE(nowait_queue_create(&o, &q) == 0, "create");
        void *buf = nowait_alloc(1 << 20, 4096);
        struct nowait_cqe cqe;
        for (int64_t off = 0; off < file_size; off += 1 << 20) {
            REQUIRE(nowait_push(q, f, buf, 1 << 20, (uint64_t)off, 1) == 0, "push");
            REQUIRE(nowait_reap(q, &cqe, 1, 1, -1) == 1, "reap");
            CHECK(cqe.res > 0 && memcmp(buf, content + off, (size_t)cqe.res) == 0,
                  "read at %" PRId64 ": %" PRId64, off, cqe.res);
        }
        nowait_free(buf);
        nowait_queue_destroy(q);
        left[p] = resident_pages(&total);
    }
    CHECK(left[0] * 10 > total * 9, "cache=keep left %zu of %zu pages", left[0], total);
    CHECK(left[1] * 4 < total, "cache=drop left %zu of %zu pages", left[1], total);
    CHECK(left[2] * 4 < total, "file set to drop left %zu of %zu pages", left[2], total);
    printf("ok   cache=drop: a whole-file read leaves %zu of %zu pages cached (keep: %zu; "
           "a keep queue over a file set to drop: %zu)\n",
           left[1], total, left[0], left[2]);
    nowait_file_close(f);
}

/* A read's own I/O priority reaches the kernel on every backend: one with
 * a class the kernel does not know (7) fails with -EINVAL; one at class
 * idle returns the file's bytes. The reads are direct where the file
 * allows (the pool backend answers a cached buffered read on the calling
 * thread, where no priority applies). */
static void test_ioprio(void)
{
    const uint32_t backends[] = {NOWAIT_BACKEND_URING, NOWAIT_BACKEND_AIO, NOWAIT_BACKEND_AIO_POOL,
                                 NOWAIT_BACKEND_POOL, NOWAIT_BACKEND_SYNC};
    struct nowait_file *f;
    if (nowait_file_open(path, NOWAIT_DIRECT_ON, &f) < 0) {
        printf("SKIP ioprio: %s\n", nowait_last_error());
        return;
    }
    void *buf = nowait_alloc(4096, 4096);
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        struct nowait_queue_options o;
        nowait_queue_options_init(&o);
        o.backend = backends[b];
        struct nowait_queue *q;
        if (nowait_queue_create(&o, &q) < 0) {
            printf("SKIP ioprio on backend %u: %s\n", backends[b], nowait_last_error());
            continue;
        }
        struct nowait_read r = {f, buf, 4096, 8192, 1, (uint16_t)(7 << 13)};
        struct nowait_cqe cqe;
        REQUIRE(nowait_push_read(q, &r) == 0, "push_read: %s", nowait_last_error());
        REQUIRE(nowait_reap(q, &cqe, 1, 1, -1) == 1, "reap");
        CHECK(cqe.res == -EINVAL, "%s: a read at priority class 7 gave %" PRId64 ", not -EINVAL",
              nowait_queue_backend(q), cqe.res);
        r.ioprio = (uint16_t)(NOWAIT_IOPRIO_CLASS_IDLE << 13);
        REQUIRE(nowait_push_read(q, &r) == 0, "push_read: %s", nowait_last_error());
        REQUIRE(nowait_reap(q, &cqe, 1, 1, -1) == 1, "reap");
        CHECK(cqe.res == 4096 && memcmp(buf, content + 8192, 4096) == 0,
              "%s: a read at class idle gave %" PRId64, nowait_queue_backend(q), cqe.res);
        printf("ok   ioprio on %s: class 7 refused by the kernel, class idle read\n",
               nowait_queue_backend(q));
        nowait_queue_destroy(q);
    }
    CHECK(nowait_push_read(NULL, NULL) == -EINVAL, "NULL queue and read");
    nowait_free(buf);
    nowait_file_close(f);
}

/* Reads into malloc'd memory the library never initialised: the header
 * allows any writable memory. With the sync and pool backends the reads
 * are pread(2)s, which valgrind sees write the buffer: it would flag the
 * library reading the buffer before the read wrote it. */
static void test_uninitialised_memory(void)
{
    static const uint32_t backends[] = {NOWAIT_BACKEND_SYNC, NOWAIT_BACKEND_POOL};
    for (int b = 0; b < 2; b++) {
        struct nowait_queue_options o;
        nowait_queue_options_init(&o);
        o.backend = backends[b];
        struct nowait_queue *q;
        struct nowait_file *f;
        REQUIRE(nowait_queue_create(&o, &q) == 0, "create");
        REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_OFF, &f) == 0, "open");
        enum { N = 8, LEN = 10000 };
        unsigned char *mem[N];
        uint64_t off[N];
        for (int i = 0; i < N; i++) {
            mem[i] = malloc(LEN);
            REQUIRE(mem[i] != NULL, "malloc");
            off[i] = i == N - 1 ? (uint64_t)file_size - 100 : rnd() % (uint64_t)(file_size - LEN);
            REQUIRE(nowait_push(q, f, mem[i], LEN, off[i], (uint64_t)i) == 0, "push");
        }
        struct nowait_cqe cqes[N];
        int got = 0;
        while (got < N) {
            int n = nowait_reap(q, cqes + got, (unsigned)(N - got), 1, 10000);
            REQUIRE(n > 0, "reap: %d", n);
            got += n;
        }
        for (int k = 0; k < N; k++) {
            uint64_t i = cqes[k].user_data;
            int64_t want = i == N - 1 ? 100 : LEN;
            CHECK(cqes[k].res == want, "res %" PRId64 ", expected %" PRId64, cqes[k].res, want);
            if (cqes[k].res == want)
                CHECK(memcmp(mem[i], content + off[i], (size_t)want) == 0, "bytes of read %" PRIu64,
                      i);
        }
        nowait_queue_destroy(q);
        nowait_file_close(f);
        for (int i = 0; i < N; i++) free(mem[i]);
    }
    printf("ok   reads into uninitialised malloc'd memory\n");
}

/* The completion fd: an epoll-style loop that never blocks in nowait. */
static void test_completion_fd(void)
{
    struct nowait_queue *q;
    struct nowait_file *f;
    REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_AUTO, &f) == 0, "open");
    int fd = nowait_queue_fd(q);
    REQUIRE(fd >= 0, "queue fd: %d", fd);
    CHECK(nowait_queue_fd(q) == fd, "same fd again");
    enum { N = 32, TOTAL = 2000 };
    unsigned char *mem = nowait_alloc(N * 4096, 0);
    uint64_t offs[N];
    int pushed = 0, done = 0;
    for (int i = 0; i < N; i++) {
        offs[i] = (rnd() % (uint64_t)(file_size / 4096)) * 4096;
        REQUIRE(nowait_push(q, f, mem + i * 4096, 4096, offs[i], (uint64_t)i) == 0, "push");
        pushed++;
    }
    REQUIRE(nowait_submit(q) == 0, "submit");
    while (done < TOTAL) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, 10000);
        REQUIRE(pr == 1, "completion fd not readable within 10 s with %d reads in flight",
                pushed - done);
        uint64_t cnt;
        (void)!read(fd, &cnt, sizeof cnt);
        struct nowait_cqe cqes[8];
        int n;
        do {
            n = nowait_reap(q, cqes, 8, 0, 0);
            REQUIRE(n >= 0, "reap: %d", n);
            for (int k = 0; k < n; k++) {
                uint64_t i = cqes[k].user_data;
                CHECK(cqes[k].res == 4096, "res");
                CHECK(memcmp(mem + i * 4096, content + offs[i], 4096) == 0, "data");
                done++;
                if (pushed < TOTAL) {
                    offs[i] = (rnd() % (uint64_t)(file_size / 4096)) * 4096;
                    REQUIRE(nowait_push(q, f, mem + i * 4096, 4096, offs[i], i) == 0, "push");
                    pushed++;
                }
            }
        } while (n == 8);
        REQUIRE(nowait_submit(q) == 0, "submit");
    }
    nowait_queue_destroy(q);
    nowait_free(mem);
    nowait_file_close(f);
    printf("ok   completion fd: %d reads served from poll(2)\n", TOTAL);
}

/* Destroy with reads in flight: it waits for them, so the memory can be
 * freed right after (ASan/valgrind would see a write after free). */
static void test_destroy_in_flight(void)
{
    for (int round = 0; round < 4; round++) {
        struct nowait_queue *q;
        struct nowait_file *f;
        REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
        REQUIRE(nowait_file_open(path, round % 2 ? NOWAIT_DIRECT_AUTO : NOWAIT_DIRECT_OFF, &f) == 0,
                "open");
        unsigned char *mem = nowait_alloc(32 * 65536, 0);
        for (int i = 0; i < 32; i++)
            REQUIRE(nowait_push(q, f, mem + i * 65536, 65536,
                                (rnd() % (uint64_t)(file_size / 4096)) * 4096, (uint64_t)i) == 0,
                    "push");
        if (round >= 2) nowait_submit(q);
        nowait_file_close(f); /* reads in flight keep it open */
        nowait_queue_destroy(q);
        nowait_free(mem);
    }
    printf("ok   destroy with reads in flight\n");
}

/* Destroying a queue drops the reads pushed and never submitted: nothing
 * writes their memory once destroy starts. Reads submitted before are
 * waited for, and hold the file's bytes when destroy returns. Every backend, buffered and
 * NOWAIT_DIRECT_AUTO, on the test directory and on tmpfs (where fewer reads
 * than the queue's inline window are pushed: past it, a push reads a
 * memory-backed file itself and hands the queued reads to the kernel). */
static void destroy_drops_unsubmitted_on(const char *file, const char *where, int unsubmitted)
{
    static const struct {
        const char *name;
        uint32_t kind;
    } kinds[] = {{"uring", NOWAIT_BACKEND_URING},       {"aio", NOWAIT_BACKEND_AIO},
                 {"aio+pool", NOWAIT_BACKEND_AIO_POOL}, {"pool", NOWAIT_BACKEND_POOL},
                 {"sync", NOWAIT_BACKEND_SYNC}};
    enum { SUBMITTED = 8, LEN = 4096, CANARY = 0xa5 };
    int total = SUBMITTED + unsubmitted;
    unsigned char *mem = nowait_alloc((size_t)total * LEN, 0);
    unsigned char *before = malloc((size_t)total * LEN);
    REQUIRE(mem != NULL && before != NULL, "alloc");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int direct = 0; direct < 2; direct++) {
            struct nowait_queue_options o;
            nowait_queue_options_init(&o);
            o.depth = 64;
            o.backend = kinds[k].kind;
            struct nowait_queue *q;
            if (nowait_queue_create(&o, &q) != 0) {
                printf("SKIP destroy drops unsubmitted reads on %s: %s\n", kinds[k].name,
                       nowait_last_error());
                continue;
            }
            struct nowait_file *f;
            REQUIRE(nowait_file_open(file, direct ? NOWAIT_DIRECT_AUTO : NOWAIT_DIRECT_OFF, &f) == 0,
                    "open %s", file);
            memset(mem, CANARY, (size_t)total * LEN);
            uint64_t off[64];
            for (int i = 0; i < total; i++) {
                if (i == SUBMITTED) nowait_submit(q);
                off[i] = (rnd() % (uint64_t)(file_size / LEN)) * LEN;
                REQUIRE(nowait_push(q, f, mem + (size_t)i * LEN, LEN, off[i], (uint64_t)i) == 0,
                        "push %d", i);
            }
            /* What the memory holds as destroy starts. */
            memcpy(before, mem, (size_t)total * LEN);
            nowait_file_close(f);
            nowait_queue_destroy(q);
            int written = 0, unread = 0;
            for (int i = 0; i < total; i++) {
                unsigned char *b = mem + (size_t)i * LEN;
                if (i < SUBMITTED)
                    unread += memcmp(b, content + off[i], LEN) != 0;
                else
                    written += memcmp(b, before + (size_t)i * LEN, LEN) != 0;
            }
            CHECK(written == 0, "%s %s direct=%d: destroy wrote %d of %d unsubmitted reads' memory",
                  where, kinds[k].name, direct, written, unsubmitted);
            CHECK(unread == 0, "%s %s direct=%d: %d of %d submitted reads not done when destroy returned",
                  where, kinds[k].name, direct, unread, SUBMITTED);
        }
    }
    free(before);
    nowait_free(mem);
    printf("ok   destroy drops unsubmitted reads (%s)\n", where);
}

static void test_destroy_drops_unsubmitted(void)
{
    destroy_drops_unsubmitted_on(path, dirpath, 56);
    char shm[128];
    snprintf(shm, sizeof shm, "/dev/shm/nowait-c-test.%d", (int)getpid());
    int fd = open(shm, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("SKIP destroy drops unsubmitted reads (tmpfs): cannot create %s: %s\n", shm,
               strerror(errno));
        return;
    }
    REQUIRE(write(fd, content, (size_t)file_size) == file_size, "write %s", shm);
    close(fd);
    /* Depth 64: the inline window is 32; 8 submitted + 16 stay below it. */
    destroy_drops_unsubmitted_on(shm, "tmpfs", 16);
    unlink(shm);
}

/* A queue moves between threads (one at a time), as the header allows:
 * created and submitted on this thread, reaped on a second, destroyed with
 * reads in flight on a third. Each read's buffer is filled with a marker
 * first: when destroy returns, every read must be complete (its bytes the
 * file's) and nothing may be written afterwards. An io_uring ring set up
 * SINGLE_ISSUER would refuse the other threads' calls, and destroy would
 * return while the kernel still writes. */
#define MOVE_READS 32
#define MOVE_LEN 65536
struct moving {
    struct nowait_queue *q;
    struct nowait_file *f;
    unsigned char *mem;
    uint64_t off[MOVE_READS];
    int reaped[MOVE_READS];
    int nreaped;
};

static void *move_reap(void *arg)
{
    struct moving *m = arg;
    struct nowait_cqe cqes[MOVE_READS];
    int n = nowait_reap(m->q, cqes, MOVE_READS, 8, -1);
    CHECK(n >= 8, "reap on another thread: %d", n);
    for (int i = 0; i < n; i++) {
        uint64_t k = cqes[i].user_data;
        CHECK(k < MOVE_READS && cqes[i].res == MOVE_LEN, "read %" PRIu64 ": res %" PRId64, k,
              (int64_t)cqes[i].res);
        if (k >= MOVE_READS) continue;
        CHECK(memcmp(m->mem + k * MOVE_LEN, content + m->off[k], MOVE_LEN) == 0,
              "read %" PRIu64 " reaped on another thread: bytes differ from the file", k);
        m->reaped[k] = 1;
        m->nreaped++;
    }
    return NULL;
}

static void *move_destroy(void *arg)
{
    struct moving *m = arg;
    nowait_queue_destroy(m->q);
    m->q = NULL;
    return NULL;
}

static void test_queue_moves_between_threads(void)
{
    for (int round = 0; round < 3; round++) {
        struct moving m = {0};
        REQUIRE(nowait_queue_create(NULL, &m.q) == 0, "create");
        REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_OFF, &m.f) == 0, "open");
        m.mem = nowait_alloc(MOVE_READS * MOVE_LEN, 0);
        REQUIRE(m.mem != NULL, "alloc");
        memset(m.mem, 0xA5, MOVE_READS * MOVE_LEN);
        /* Not cached: the reads take the device's time. */
        posix_fadvise(ref_fd, 0, 0, POSIX_FADV_DONTNEED);
        for (int i = 0; i < MOVE_READS; i++) {
            m.off[i] = (rnd() % (uint64_t)(file_size / 4096 - 16)) * 4096;
            REQUIRE(nowait_push(m.q, m.f, m.mem + i * MOVE_LEN, MOVE_LEN, m.off[i],
                                (uint64_t)i) == 0,
                    "push");
        }
        CHECK(nowait_submit(m.q) >= 0, "submit");
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, move_reap, &m) == 0, "thread");
        pthread_join(t, NULL);
        REQUIRE(pthread_create(&t, NULL, move_destroy, &m) == 0, "thread");
        pthread_join(t, NULL);
        /* Every read is done: reaped ones were checked; the others' bytes
         * must be the file's too, and stay so. */
        unsigned char *snap = malloc(MOVE_READS * MOVE_LEN);
        REQUIRE(snap != NULL, "malloc");
        memcpy(snap, m.mem, MOVE_READS * MOVE_LEN);
        for (int i = 0; i < MOVE_READS; i++) {
            if (m.reaped[i]) continue;
            CHECK(memcmp(m.mem + i * MOVE_LEN, content + m.off[i], MOVE_LEN) == 0,
                  "read %d (of %d, %d reaped) was not complete when destroy returned on "
                  "another thread",
                  i, MOVE_READS, m.nreaped);
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        CHECK(memcmp(snap, m.mem, MOVE_READS * MOVE_LEN) == 0,
              "buffers written after nowait_queue_destroy returned");
        free(snap);
        nowait_file_close(m.f);
        nowait_free(m.mem);
    }
    printf("ok   a queue moved between threads: reaped on one, destroyed on another\n");
}

/* A bounce buffer is sized to what the file can return, and one that
 * cannot be allocated is -ENOMEM for that read, not an abort of the
 * process. A child limits its address space to 256 MiB, then (1) reads an
 * unaligned 512 MiB at 10 bytes before the end of the 4 MiB test file: the
 * bounce covers the file's last block, so the read is taken and returns the
 * 10 bytes; (2) pushes an unaligned 512 MiB read of a 1 GiB sparse file,
 * whose bounce would need 512 MiB: -ENOMEM. Not under AddressSanitizer or
 * valgrind (their own memory needs the address space). */
static void test_bounce_out_of_memory(int quick)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)quick;
    printf("ok   bounce out of memory: not run under AddressSanitizer\n");
#else
    if (quick) {
        printf("ok   bounce out of memory: not run in quick (valgrind) mode\n");
        return;
    }
    struct nowait_file *f;
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_AUTO, &f) == 0, "open");
    int direct = nowait_file_is_direct(f);
    if (!direct) {
        nowait_file_close(f);
        printf("ok   bounce out of memory: the file is not O_DIRECT here, nothing to bounce\n");
        return;
    }
    char sparse[4200];
    snprintf(sparse, sizeof sparse, "%s.sparse", path);
    int sfd = open(sparse, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(sfd >= 0 && ftruncate(sfd, 1L << 30) == 0, "sparse file %s: %s", sparse, strerror(errno));
    close(sfd);
    struct nowait_file *big;
    REQUIRE(nowait_file_open(sparse, NOWAIT_DIRECT_AUTO, &big) == 0, "open %s", sparse);
    struct nowait_queue *q;
    REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
    fflush(stdout);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
        struct rlimit r = {256UL << 20, 256UL << 20};
        if (setrlimit(RLIMIT_AS, &r) != 0) _exit(3);
        size_t len = 512UL << 20;
        /* The caller's memory is written only up to what the read returns
         * (10 bytes), and not at all for a request refused at push. */
        static unsigned char small[4096];
        struct nowait_cqe cqe;
        if (nowait_push(q, f, small, len, (uint64_t)file_size - 10, 1) != 0) _exit(6);
        if (nowait_reap(q, &cqe, 1, 1, -1) != 1 || cqe.res != 10) _exit(7);
        if (memcmp(small, content + file_size - 10, 10) != 0) _exit(8);
        int rc = nowait_push(q, big, small, len, 1, 7);
        _exit(rc == -ENOMEM ? 0 : rc == 0 ? 4 : 5);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "unaligned 512 MiB reads under a 256 MiB address space: %s %d "
          "(0: the read at end of file returned its 10 bytes and the one a bounce cannot cover "
          "got -ENOMEM, as they should; 6/7/8: the read at end of file was refused, came back "
          "with another length, or with other bytes; 4: the uncoverable one was accepted; 5: "
          "another error; a signal: the process died)",
          WIFEXITED(status) ? "exit" : "signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    nowait_queue_destroy(q);
    nowait_file_close(f);
    nowait_file_close(big);
    unlink(sparse);
    printf("ok   bounce out of memory: a bounce sized to the file, -ENOMEM past it, the process lives\n");
#endif
}

static void test_probe(void)
{
    char *s = NULL;
    REQUIRE(nowait_probe(path, 0, &s) == 0, "probe text");
    CHECK(strstr(s, "machine:") && strstr(s, "O_DIRECT"), "text report: %s", s);
    nowait_string_free(s);
    REQUIRE(nowait_probe(NULL, NOWAIT_PROBE_JSON, &s) == 0, "probe json");
    CHECK(s[0] == '{' && strstr(s, "\"backend\"") && strstr(s, "\"file\": null"),
          "json report: %s", s);
    nowait_string_free(s);
    /* The file's part, in the library's one shape (Python's probe() too). */
    REQUIRE(nowait_probe(path, NOWAIT_PROBE_JSON, &s) == 0, "probe json of a file");
    CHECK(strstr(s, "\"kind\": \"regular\"") && strstr(s, "\"size_bytes\"")
              && strstr(s, "\"rwf_nowait\""),
          "json report of a file: %s", s);
    nowait_string_free(s);
    CHECK(nowait_probe(dirpath, 0, &s) == -EISDIR, "probe of a directory");
    CHECK(nowait_probe(NULL, 8, &s) == -EINVAL, "probe bad flags");
    struct nowait_file *f;
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_AUTO, &f) == 0, "open");
    REQUIRE(nowait_file_describe(f, &s) == 0, "describe");
    CHECK(strstr(s, "filesystem:") != NULL, "describe: %s", s);
    nowait_string_free(s);
    CHECK(nowait_file_size(f) == file_size, "size");
    CHECK(nowait_file_fs(f) && nowait_file_fs(f)[0], "fs");
    nowait_file_close(f);
    printf("ok   probe (text, JSON), describe, size, fs\n");
}

/* nowait_read_files: whole files by path, every byte checked, errors per path. */
struct files_seen {
    int calls[8];
    int err[8];
    size_t len[8];
    int bad_bytes;
    int msg_names_path;
};

static unsigned char file_byte(size_t i, size_t off) { return (unsigned char)(off * 7 + i * 13 + (off >> 12)); }

static void on_file(void *ud, size_t index, int err, const uint8_t *data, size_t len, const char *msg)
{
    struct files_seen *s = ud;
    if (index >= 8) { s->bad_bytes++; return; }
    s->calls[index]++;
    s->err[index] = err;
    s->len[index] = len;
    if (err == 0) {
        size_t file = index == 7 ? 1 : index; /* path 7 names file 1 again */
        for (size_t o = 0; o < len; o++)
            if (data[o] != file_byte(file, o)) { s->bad_bytes++; break; }
    } else if (msg && strstr(msg, "/f") != NULL) {
        s->msg_names_path++;
    }
}

static void test_read_files(void)
{
    static const size_t sizes[5] = {0, 1, 5000, 300001, 2 << 20};
    char paths_buf[8][4200];
    const char *paths[8];
    for (int i = 0; i < 5; i++) {
        snprintf(paths_buf[i], sizeof paths_buf[i], "%s/f%d.whole", dirpath, i);
        int fd = open(paths_buf[i], O_CREAT | O_TRUNC | O_WRONLY, 0644);
        REQUIRE(fd >= 0, "create %s", paths_buf[i]);
        unsigned char *b = malloc(sizes[i] + 1);
        for (size_t o = 0; o < sizes[i]; o++) b[o] = file_byte((size_t)i, o);
        REQUIRE(write(fd, b, sizes[i]) == (ssize_t)sizes[i], "write");
        free(b);
        close(fd);
        paths[i] = paths_buf[i];
    }
    snprintf(paths_buf[5], sizeof paths_buf[5], "%s/f-missing.whole", dirpath);
    paths[5] = paths_buf[5];
    paths[6] = dirpath; /* a directory */
    snprintf(paths_buf[7], sizeof paths_buf[7], "%s/f1.whole", dirpath);
    paths[7] = paths_buf[7]; /* the same file twice */
    static const uint32_t kinds[4] = {NOWAIT_BACKEND_AUTO, NOWAIT_BACKEND_URING, NOWAIT_BACKEND_POOL,
                                      NOWAIT_BACKEND_SYNC};
    for (int k = 0; k < 4; k++) {
        struct nowait_read_files_options o;
        memset(&o, 0, sizeof o);
        o.size = sizeof o;
        o.backend = kinds[k];
        o.first_read_bytes = 4096; /* the larger files take several reads */
        struct files_seen s;
        memset(&s, 0, sizeof s);
        int r = nowait_read_files(paths, 8, &o, on_file, &s);
        if (r == -EOPNOTSUPP && kinds[k] == NOWAIT_BACKEND_URING) {
            printf("SKIP read_files/uring: %s\n", nowait_last_error());
            continue;
        }
        REQUIRE(r == 0, "nowait_read_files backend %u: %d", kinds[k], r);
        for (int i = 0; i < 8; i++) CHECK(s.calls[i] == 1, "backend %u: path %d called %d times", kinds[k], i, s.calls[i]);
        for (int i = 0; i < 5; i++)
            CHECK(s.err[i] == 0 && s.len[i] == sizes[i], "backend %u: file %d: err %d len %zu", kinds[k], i, s.err[i], s.len[i]);
        CHECK(s.err[7] == 0 && s.len[7] == 1, "backend %u: the repeated path", kinds[k]);
        CHECK(s.err[5] == -ENOENT, "backend %u: missing: %d", kinds[k], s.err[5]);
        CHECK(s.err[6] == -EISDIR, "backend %u: directory: %d", kinds[k], s.err[6]);
        CHECK(s.msg_names_path >= 1, "backend %u: the message names the path", kinds[k]);
        CHECK(s.bad_bytes == 0, "backend %u: %d files with wrong bytes", kinds[k], s.bad_bytes);
        /* The size limit fails the large files alone. */
        o.max_file_size = 5000;
        memset(&s, 0, sizeof s);
        REQUIRE(nowait_read_files(paths, 5, &o, on_file, &s) == 0, "with a limit");
        CHECK(s.err[2] == 0 && s.err[3] == -EFBIG && s.err[4] == -EFBIG, "limit: %d %d %d", s.err[2], s.err[3], s.err[4]);
    }
    struct files_seen s;
    memset(&s, 0, sizeof s);
    CHECK(nowait_read_files(paths, 5, NULL, on_file, &s) == 0 && s.bad_bytes == 0, "default options");
    CHECK(nowait_read_files(NULL, 1, NULL, on_file, &s) == -EINVAL, "NULL paths");
    CHECK(nowait_read_files(paths, 1, NULL, NULL, &s) == -EINVAL, "NULL cb");
    const char *with_null[2] = {paths[0], NULL};
    CHECK(nowait_read_files(with_null, 2, NULL, on_file, &s) == -EINVAL, "a NULL path");
    CHECK(strstr(nowait_last_error(), "paths[1]") != NULL, "names the argument: %s", nowait_last_error());
    CHECK(nowait_read_files(paths, 0, NULL, on_file, &s) == 0, "no paths");
    for (int i = 0; i < 5; i++) unlink(paths_buf[i]);
    printf("ok   read_files: every backend, sizes 0 B to 2 MiB, missing, directory, limit, arguments\n");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    int quick = getenv("NOWAIT_TEST_QUICK") != NULL;
    const char *s = getenv("NOWAIT_TEST_SEED");
    seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    rng_state = seed | 1;
    alarm(quick ? 1200 : 300); /* watchdog: a hang fails the test */
    printf("libnowait %s, seed %" PRIu64 " (NOWAIT_TEST_SEED=%" PRIu64 " replays)\n",
           nowait_version(), seed, seed);
    make_file(dir);
    struct nowait_file *f;
    REQUIRE(nowait_file_open(path, NOWAIT_DIRECT_AUTO, &f) == 0, "open");
    printf("file on %s, direct=auto opens %s\n", nowait_file_fs(f),
           nowait_file_is_direct(f) ? "O_DIRECT" : "buffered");
    nowait_file_close(f);

    struct nowait_queue *q;
    REQUIRE(nowait_queue_create(NULL, &q) == 0, "create");
    printf("default backend: %s (%s)\n", nowait_queue_backend(q), nowait_queue_backend_reason(q));
    nowait_queue_destroy(q);

    test_random_reads(quick, "auto", NOWAIT_BACKEND_AUTO);
    test_errors();
    test_uninitialised_memory();
    test_completion_fd();
    test_destroy_in_flight();
    test_destroy_drops_unsubmitted();
    test_queue_moves_between_threads();
    test_bounce_out_of_memory(quick);
    test_probe();
    test_uncached();
    test_ioprio();
    test_read_files();

    /* The fallback: io_uring disabled as seccomp or the sysctl would. */
    setenv("NOWAIT_DISABLE_URING", "1", 1);
    REQUIRE(nowait_queue_create(NULL, &q) == 0, "create without io_uring");
    printf("without io_uring: %s (%s)\n", nowait_queue_backend(q), nowait_queue_backend_reason(q));
    CHECK(strcmp(nowait_queue_backend(q), "uring") != 0, "io_uring was not skipped");
    CHECK(strstr(nowait_queue_backend_reason(q), "NOWAIT_DISABLE_URING") != NULL,
          "reason names the variable: %s", nowait_queue_backend_reason(q));
    nowait_queue_destroy(q);
    struct nowait_queue_options o;
    nowait_queue_options_init(&o);
    o.backend = NOWAIT_BACKEND_URING;
    CHECK(nowait_queue_create(&o, &q) == -EOPNOTSUPP, "uring asked for while disabled");
    CHECK(strstr(nowait_last_error(), "NOWAIT_BACKEND_POOL") != NULL, "message: %s",
          nowait_last_error());
    test_random_reads(1, "fallback", NOWAIT_BACKEND_AUTO);
    test_completion_fd();
    unsetenv("NOWAIT_DISABLE_URING");

    /* Each single backend the machine offers. */
    static const struct {
        const char *name;
        uint32_t kind;
    } backends[] = {{"pool", NOWAIT_BACKEND_POOL}, {"sync", NOWAIT_BACKEND_SYNC}};
    for (int b = 0; b < 2; b++) test_random_reads(1, backends[b].name, backends[b].kind);

    close(ref_fd);
    unlink(path);
    free(content);
    if (failures) {
        fprintf(stderr, "%d checks FAILED (NOWAIT_TEST_SEED=%" PRIu64 " replays)\n", failures, seed);
        return 1;
    }
    printf("all libnowait C tests passed\n");
    return 0;
}
