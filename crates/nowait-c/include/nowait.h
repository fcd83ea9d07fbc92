/*
 * nowait.h: fast asynchronous file reads on Linux, from C and C++.
 *
 * libnowait reads files without a thread per I/O: it probes what the
 * machine and each file can do (io_uring and its setup flags, O_DIRECT
 * alignment from statx, the filesystem), takes the fastest path, falls
 * back when a mechanism is refused (io_uring blocked by seccomp or
 * kernel.io_uring_disabled: native AIO for O_DIRECT files and a thread
 * pool with the RWF_NOWAIT nowait path for buffered ones), bounces unaligned
 * O_DIRECT reads, finishes short reads and retries EINTR itself. A result
 * shorter than asked means end of file, nothing else.
 *
 * The shape is liburing's: push reads, submit them, reap completions.
 *
 *     struct nowait_queue *q = NULL;  struct nowait_file *f = NULL;
 *     struct nowait_cqe cqe;
 *     void *buf = nowait_alloc(4096, 0);                    // page-aligned
 *     int r = nowait_queue_create(NULL, &q);                // depth 32, best backend
 *     if (r == 0) r = nowait_file_open("data", NOWAIT_DIRECT_AUTO, &f);
 *     if (r == 0) r = nowait_push(q, f, buf, 4096, 8192, 42);   // user_data 42
 *     if (r == 0) r = nowait_reap(q, &cqe, 1, 1, -1);       // 1 stored, or -errno
 *     if (r < 0) fprintf(stderr, "%s\n", nowait_last_error());
 *     else if (cqe.res < 0) fprintf(stderr, "%s\n", nowait_strerror((int)cqe.res));
 *     else use(buf, cqe.res);           // bytes read: fewer only at end of file
 *     nowait_queue_destroy(q); nowait_file_close(f); nowait_free(buf);  // NULL: ignored
 *
 * ERRORS. Every call that can fail returns a negative errno (0 or a count
 * on success), or NULL for pointer-returning calls; a result stored
 * through an out-pointer (*out) is written only on success. The words
 * behind it (what was asked, what failed, what to do) are in
 * nowait_last_error(), a thread-local message of the last failed call on
 * the calling thread; nowait_strerror(err) names an errno. A read's own
 * failure arrives as a negative cqe.res. Each error has one errno, the
 * same in nowait's Rust, C and Python interfaces: -EINVAL for an argument
 * or option the call cannot take, -EBUSY for a queue whose every slot is
 * in flight, -EOPNOTSUPP for a backend or O_DIRECT this machine or file
 * cannot give, -ESPIPE for a file nowait does not read (fifo, socket,
 * character device), -EISDIR for a directory, else the kernel's own
 * answer (-ENOENT, -EACCES, -EIO, -ENOMEM, ...). No Rust panic crosses
 * this interface: an internal error is returned as -ENOTRECOVERABLE
 * (destroy the object it used).
 *
 * HANDLES. A NULL handle gives -EINVAL; a live handle of the wrong kind (a
 * file passed as a queue) gives -EBADF. A handle that was destroyed or
 * closed is freed memory: passing it to any call, a second destroy or
 * close included, is undefined behaviour, as for free(3).
 *
 * THREADS. A queue belongs to one thread at a time: it may move between
 * threads (created on one, reaped on another, destroyed on a third), but
 * calls on one queue must not overlap. Files may be shared between queues
 * and threads freely; nowait_file_close() must not race with another
 * thread's nowait_push() of the same file (after it returns, the handle is
 * gone; reads already pushed keep the file open). nowait_last_error() is
 * per thread; nowait_strerror(), nowait_probe(), nowait_alloc() are
 * thread-safe.
 *
 * BLOCKING. nowait_push() never waits. nowait_submit() does not wait for
 * the device, except on the sync backend, which reads inside it (that is
 * what it is), and with native AIO (O_DIRECT files on the aio backends),
 * whose io_submit can block while the device's own queue is full.
 * nowait_reap() waits as its min and timeout_ms say.
 * nowait_queue_destroy() waits for the reads still in flight.
 * nowait_file_open(), nowait_probe() and nowait_queue_create() make
 * ordinary system calls (open, statx, sysfs reads, io_uring_setup): call
 * them at start-up or off the event loop's hot path.
 *
 * MEMORY. Reads land in the caller's memory, which may be any writable
 * memory, uninitialised included (malloc(3)): the library never reads it,
 * and only the read writes into it (nowait_push says which bytes). It must
 * stay valid, and untouched, until the read's completion is returned by
 * nowait_reap or the queue is destroyed; nowait_queue_destroy waits for
 * reads still in flight before returning.
 * O_DIRECT files want aligned memory: nowait_alloc(size, 0) gives
 * page-aligned zeroed memory (free with nowait_free). Strings the library
 * returns through a char ** are the caller's (nowait_string_free); strings
 * returned as const char * belong to the library (lifetimes documented at
 * each function). A file may be closed with reads of it in flight.
 *
 * EVENT LOOPS. nowait_queue_fd() gives an eventfd that becomes readable
 * when completions may be waiting; watch it with epoll, libuv's uv_poll_t
 * or tevent, so a server's thread never blocks in nowait. The caller only
 * watches it and reads its counter: it never writes to it or closes it.
 *
 * ENVIRONMENT. NOWAIT_DISABLE_URING=1 makes new queues skip io_uring (the
 * fallback ladder then starts at aio+pool).
 */


#ifndef NOWAIT_H
#define NOWAIT_H

/* Generated by cbindgen from crates/nowait-c/src: edit the Rust doc comments, then run
 * NOWAIT_BLESS_HEADER=1 cargo test -p nowait-c --test header */

#include <stddef.h>
#include <stdint.h>

/**
 * An open file (opaque). Shareable: any number of queues, on any threads,
 * may read it at once. Reads in flight keep the file open, so
 * `nowait_file_close` may be called while reads of it are in flight.
 */
struct nowait_file;

/**
 * A queue of reads (opaque), owned by one thread at a time.
 */
struct nowait_queue;

/**
 * Reads go through the page cache.
 */
#define NOWAIT_DIRECT_OFF 0

/**
 * `O_DIRECT`, strictly: opening fails where the filesystem refuses it
 * (-EOPNOTSUPP), and a read whose offset, length or buffer address breaks
 * the file's alignment is refused with -EINVAL.
 */
#define NOWAIT_DIRECT_ON 1

/**
 * `O_DIRECT` where the filesystem allows it, buffered otherwise; an
 * unaligned read is bounced through an aligned buffer.
 */
#define NOWAIT_DIRECT_AUTO 2

/**
 * A cache policy (`nowait_queue_options.cache`, `nowait_file_set_cache`):
 * buffered reads keep what they bring into the page cache (the
 * default).
 */
#define NOWAIT_CACHE_KEEP 0

/**
 * A cache policy: every buffered read is uncached (`RWF_DONTCACHE`, fio's
 * `uncached=1`): the pages it brings in are dropped once copied out, so a
 * scan does not evict what other files depend on. Where the filesystem
 * cannot (tmpfs, FUSE, a kernel before 6.14) reads stay cached.
 */
#define NOWAIT_CACHE_DROP 1

/**
 * A cache policy: uncached only the scan reads (sequential runs, or reads of
 * 1 MiB or more) of a file at least half the memory the process's page
 * cache can hold and mostly not cached; everything else kept.
 */
#define NOWAIT_CACHE_ADAPTIVE 2

/**
 * `nowait_probe` flag: the report as one JSON object instead of text.
 */
#define NOWAIT_PROBE_JSON 1

/**
 * `backend`: the fastest this machine offers, falling back down the
 * ladder (uring, then aio+pool, then pool, then sync) with the reason
 * recorded (`nowait_queue_backend_reason`).
 */
#define NOWAIT_BACKEND_AUTO 0

/**
 * `backend`: io_uring only (-EOPNOTSUPP where it cannot be set up).
 */
#define NOWAIT_BACKEND_URING 1

/**
 * `backend`: Linux native AIO only (asynchronous for O_DIRECT files).
 */
#define NOWAIT_BACKEND_AIO 2

/**
 * `backend`: native AIO for O_DIRECT files, the thread pool for buffered ones.
 */
#define NOWAIT_BACKEND_AIO_POOL 3

/**
 * `backend`: a pool of threads doing `pread(2)`, with the `RWF_NOWAIT`
 * nowait path (tried on the submitting thread) for cached buffered reads.
 */
#define NOWAIT_BACKEND_POOL 4

/**
 * `backend`: `pread(2)` on the calling thread, inside submit (the baseline).
 */
#define NOWAIT_BACKEND_SYNC 5

/**
 * `nowait_mode` (pool backend): try `RWF_NOWAIT` inline while the
 * file's hit ratio stays high (the default).
 */
#define NOWAIT_MODE_ADAPTIVE 0

/**
 * `nowait_mode`: always try `RWF_NOWAIT` inline first.
 */
#define NOWAIT_MODE_ALWAYS 1

/**
 * `nowait_mode`: never; every read goes to a worker thread.
 */
#define NOWAIT_MODE_OFF 2

/**
 * The deepest queue (`depth` at most this).
 */
#define NOWAIT_MAX_DEPTH 16384

/**
 * `NowaitRead.ioprio`'s class "real time" (needs `CAP_SYS_ADMIN`).
 */
#define NOWAIT_IOPRIO_CLASS_RT 1

/**
 * `NowaitRead.ioprio`'s class "best effort", every thread's default.
 */
#define NOWAIT_IOPRIO_CLASS_BE 2

/**
 * `NowaitRead.ioprio`'s class "idle": served when nothing else waits.
 */
#define NOWAIT_IOPRIO_CLASS_IDLE 3

/**
 * Options of `nowait_read_files` (NULL: every default). Zero-initialise
 * and set `size` to `sizeof(struct nowait_read_files_options)`; a field
 * left 0 takes its default.
 */
struct nowait_read_files_options {
  /**
   * `sizeof(struct nowait_read_files_options)` as the caller was compiled.
   */
  uint32_t size;
  /**
   * One of `NOWAIT_BACKEND_*` (default `NOWAIT_BACKEND_AUTO`: io_uring
   * where it has open, read and close, else the pool).
   */
  uint32_t backend;
  /**
   * A file longer than this fails with -EFBIG (0: 16 MiB).
   */
  uint64_t max_file_size;
  /**
   * What the buffers of the files in flight hold at most (0: 64 MiB).
   */
  uint64_t budget_bytes;
  /**
   * Each file's first read (0: 256 KiB): files up to it take one read.
   */
  uint64_t first_read_bytes;
};

/**
 * Called once per path, as each file finishes (not in the order of
 * `paths`): `index` into `paths`; `err` 0 and the file's `len` bytes at
 * `data`, or a negative errno (-ENOENT, -EACCES, -EISDIR, -EFBIG, ...),
 * `data` NULL, and `msg` saying what failed for which path. `data` and
 * `msg` are valid only during the call: copy what is kept.
 */
typedef void (*nowait_file_cb)(void *userdata,
                               size_t index,
                               int err,
                               const uint8_t *data,
                               size_t len,
                               const char *msg);

/**
 * Options for `nowait_queue_create`. Set it up with
 * `nowait_queue_options_init`, then change the fields you need. The
 * struct may grow at its end in later versions: `size` tells the library
 * how much of it the caller knows (fields past it take their defaults),
 * and a newer caller's extra fields must be zero for an older library.
 */
struct nowait_queue_options {
  /**
   * `sizeof(struct nowait_queue_options)` as the caller was compiled.
   */
  uint32_t size;
  /**
   * Reads in flight at most: 1 to `NOWAIT_MAX_DEPTH` (0: 32). A read
   * counts from `nowait_push` until `nowait_reap` collects it from the
   * backend: a finished read that was not reaped yet still counts (reap
   * to make room). `nowait_reap` collects every finished read and keeps
   * those that do not fit the caller's array for the next call; those
   * no longer count, so `nowait_queue_in_flight` can exceed `depth` by
   * them.
   */
  uint32_t depth;
  /**
   * One of `NOWAIT_BACKEND_*` (default `NOWAIT_BACKEND_AUTO`).
   */
  uint32_t backend;
  /**
   * One of `NOWAIT_MODE_*` (the pool backend's `RWF_NOWAIT` policy).
   */
  uint32_t nowait_mode;
  /**
   * Worker threads of the pool backend (0: its default).
   */
  uint32_t pool_workers;
  /**
   * One of `NOWAIT_CACHE_*` (default `NOWAIT_CACHE_KEEP`): what the
   * queue's buffered reads leave in the page cache. Direct reads ignore it.
   */
  uint32_t cache;
};

/**
 * One read for `nowait_push_read`: `nowait_push`'s arguments and the
 * read's I/O priority.
 */
struct nowait_read {
  /**
   * The file to read.
   */
  const struct nowait_file *file;
  /**
   * Where the bytes go (the rules of `nowait_push`'s `buf`).
   */
  void *buf;
  /**
   * Bytes to read.
   */
  size_t len;
  /**
   * Byte offset in the file.
   */
  uint64_t offset;
  /**
   * Returned unchanged in the read's `nowait_cqe`.
   */
  uint64_t user_data;
  /**
   * The read's I/O priority as `ioprio_set(2)` spells it (class << 13 |
   * level: `NOWAIT_IOPRIO_CLASS_IDLE << 13` for class idle), or 0 for none
   * of its own (the submitting thread's applies). io_uring's
   * `sqe->ioprio`, native AIO's `aio_reqprio`, `ioprio_set(2)` on the
   * pool's worker and around the sync backend's `pread`. A priority the
   * kernel refuses fails the read: its `res` is -EINVAL (unknown class)
   * or -EPERM (real-time class without `CAP_SYS_ADMIN`).
   */
  uint16_t ioprio;
};

/**
 * A completed read, as `nowait_reap` stores it.
 */
struct nowait_cqe {
  /**
   * The `user_data` the read was pushed with.
   */
  uint64_t user_data;
  /**
   * Bytes read (fewer than asked only at end of file: 0 at or past it),
   * or a negative errno (-EIO, ... ; `nowait_strerror`).
   */
  int64_t res;
};

#ifdef __cplusplus
extern "C" {
#endif /* __cplusplus */

/**
 * The message of the last failed call on this thread ("" if none). The
 * pointer stays valid until the next failing call on the same thread.
 */
const char *nowait_last_error(void);

/**
 * The library version (`"0.1.0"`), a string with static lifetime.
 */
const char *nowait_version(void);

/**
 * A description of an errno (negative or positive; 0 is `"success"`):
 * its name and the system's words, e.g. `"EBUSY: Device or resource
 * busy"`. The string is static: valid for the life of the process, never
 * freed by the caller. Thread-safe.
 */
const char *nowait_strerror(int err);

/**
 * Open `path` for reading (`open(2)` with `O_RDONLY|O_CLOEXEC`, plus
 * `O_DIRECT` as `direct` asks: `NOWAIT_DIRECT_OFF`, `_ON` or `_AUTO`) and
 * learn its O_DIRECT alignment (`statx` `STATX_DIOALIGN`, else the
 * device's logical block size) and filesystem. Regular files and block
 * devices only.
 *
 * Returns 0 and stores the file in `*out`, or a negative errno and `*out`
 * is not written: the `open(2)` errno (-ENOENT, -EACCES, ...), -EISDIR
 * for a directory, -ESPIPE for a fifo, a socket or a character device
 * (nowait reads only regular files and block devices, at offsets),
 * -EOPNOTSUPP when `NOWAIT_DIRECT_ON` is refused (the filesystem has no
 * O_DIRECT: ask for `NOWAIT_DIRECT_AUTO` or `NOWAIT_DIRECT_OFF`), -EINVAL
 * for a bad `direct`, a NULL `path` or `out`.
 *
 * # Safety
 * `path` must be NULL or a NUL-terminated string; `out` NULL or writable.
 */
int nowait_file_open(const char *path, int direct, struct nowait_file **out);

/**
 * Close a file (NULL is ignored). Reads of it still in flight keep the
 * descriptor open until they complete.
 *
 * Closing a file twice, or using it after it is closed, is undefined
 * behaviour, as for `free(3)`: its memory is freed.
 *
 * # Safety
 * `file` must be NULL or a file from `nowait_file_open` not closed yet.
 */
void nowait_file_close(struct nowait_file *file);

/**
 * 1 if reads of the file bypass the page cache (`O_DIRECT`), 0 if they
 * are buffered, or a negative errno (bad handle).
 *
 * # Safety
 * `file` must be NULL or a live file.
 */
int nowait_file_is_direct(const struct nowait_file *file);

/**
 * The file's descriptor, for calls nowait does not make on the caller's
 * behalf (`posix_fadvise(2)` read-ahead hints, `fstat(2)`, a block
 * device's ioctls). It belongs to the file: valid until the file is
 * closed and its reads are done; do not close it, read from it, or
 * change its flags (`O_DIRECT` included). Returns the fd (>= 0) or a
 * negative errno (bad handle).
 *
 * # Safety
 * `file` must be NULL or a live file.
 */
int nowait_file_fd(const struct nowait_file *file);

/**
 * The file's O_DIRECT alignment: `*mem_align` for buffer addresses,
 * `*offset_align` for offsets and lengths (both 1 for a buffered file).
 * Either pointer may be NULL. Returns 0 or a negative errno.
 *
 * # Safety
 * `file` must be NULL or a live file; each pointer NULL or writable.
 */
int nowait_file_dio_align(const struct nowait_file *file,
                          uint32_t *mem_align,
                          uint32_t *offset_align);

/**
 * The file's filesystem (`"ext4"`, `"xfs"`, `"tmpfs"`, `"block device"`,
 * ...), valid until the file is closed; NULL for a bad handle.
 *
 * # Safety
 * `file` must be NULL or a live file.
 */
const char *nowait_file_fs(const struct nowait_file *file);

/**
 * The file's size in bytes (`fstat(2)`, or the device size), or a
 * negative errno.
 *
 * # Safety
 * `file` must be NULL or a live file.
 */
int64_t nowait_file_size(const struct nowait_file *file);

/**
 * The path reads of this file take, as text (direct or buffered and why,
 * alignment and its source, filesystem, inline reads, the pool backend's
 * `RWF_NOWAIT` nowait path). Stores an owned string in `*out` (free it with
 * `nowait_string_free`); returns 0, or a negative errno and `*out` is not
 * written.
 *
 * # Safety
 * `file` must be NULL or a live file; `out` NULL or writable.
 */
int nowait_file_describe(const struct nowait_file *file, char **out);

/**
 * Set what buffered reads of `file` leave in the page cache, for every
 * queue that reads it (`NOWAIT_CACHE_KEEP`, `_DROP` or `_ADAPTIVE`); it
 * overrides the queue's `nowait_queue_options.cache` for this file's
 * reads from the next push on. A file read once (a backup, a scan) with
 * `NOWAIT_CACHE_DROP` leaves the page cache to the others. Returns 0, or
 * -EINVAL for a bad handle or policy. No effect on a direct file.
 *
 * # Safety
 * `file` must be NULL or a live file.
 */
int nowait_file_set_cache(const struct nowait_file *file, uint32_t cache);

/**
 * Allocate `size` bytes (zeroed) whose address is a multiple of `align`
 * (a power of two; 0 means 4096, the page size, which suits O_DIRECT on
 * every device). Returns NULL on failure (`nowait_last_error()` says why:
 * a bad alignment, or no memory). Free it with `nowait_free` (or
 * `free(3)`: it comes from `posix_memalign(3)`).
 */
void *nowait_alloc(size_t size, size_t align);

/**
 * Free memory from `nowait_alloc` (NULL is ignored).
 *
 * # Safety
 * `p` must be NULL or from `nowait_alloc`, not freed yet, and not in a
 * read that has not been reaped.
 */
void nowait_free(void *p);

/**
 * Free a string the library handed out (`nowait_probe`,
 * `nowait_file_describe`). NULL is ignored.
 *
 * # Safety
 * `s` must be NULL or a string from this library, not freed yet.
 */
void nowait_string_free(char *s);

/**
 * Read `count` whole files by path, each handed to `cb` as it finishes:
 * cached files are opened (`openat2(RESOLVE_CACHED)` or io_uring's inline
 * open) and read (`RWF_NOWAIT`) without a thread; only misses wait on one.
 * A missing file, a directory or a permission error fails that path
 * alone (its callback's `err`); the buffers of files in flight never hold
 * more than the budget. Returns when every callback has run.
 *
 * Returns 0, or a negative errno with no callback made: -EINVAL for NULL
 * `paths` (with `count` > 0), a NULL path, a NULL `cb`, a bad option;
 * -EOPNOTSUPP when the backend asked for cannot be used.
 *
 * # Safety
 * `paths` must be NULL or `count` pointers, each NULL or NUL-terminated;
 * `opts` NULL or a valid options struct; `cb` safe to call with
 * `userdata` from this thread.
 */
int nowait_read_files(const char *const *paths,
                      size_t count,
                      const struct nowait_read_files_options *opts,
                      nowait_file_cb cb,
                      void *userdata);

/**
 * Probe the machine (io_uring and its setup flags, native AIO, the
 * backend a default queue picks and why) and, when `path` is not NULL,
 * the file (filesystem, O_DIRECT alignment, RWF_NOWAIT, the path a
 * buffered and a direct read take), as `nowait probe` prints it; with
 * `flags = NOWAIT_PROBE_JSON`, as one JSON object
 * `{"machine": {...}, "file": {...} or null}`. Stores an owned string in
 * `*out` (free it with `nowait_string_free`). Returns 0, or a negative
 * errno and `*out` is not written (the file could not be opened:
 * -ENOENT, -EISDIR, ...; -EINVAL for unknown `flags` or a NULL `out`).
 *
 * # Safety
 * `path` must be NULL or a NUL-terminated string; `out` NULL or writable.
 */
int nowait_probe(const char *path, unsigned int flags, char **out);

/**
 * Fill `opts` with the defaults (depth 32, backend auto) and its `size`.
 *
 * # Safety
 * `opts` must be NULL (ignored) or writable.
 */
void nowait_queue_options_init(struct nowait_queue_options *opts);

/**
 * Create a queue with `opts` (NULL: the defaults). Returns 0 and stores
 * the queue in `*out`, or a negative errno and `*out` is not written:
 * -EINVAL for a bad option (`opts->size` below 8, i.e. not set by
 * `nowait_queue_options_init`; a field past this library's struct set to
 * non-zero; an unknown `backend`, `nowait_mode` or `cache`; `depth` over
 * `NOWAIT_MAX_DEPTH`; `pool_workers` out of range) or a NULL `out`,
 * -EOPNOTSUPP when the backend asked for cannot be set up here (the
 * message says why and which `NOWAIT_BACKEND_*` to ask for instead), or
 * the kernel's errno (-ENOMEM, ...).
 *
 * # Safety
 * `opts` must be NULL or point to an options struct of `opts->size`
 * bytes; `out` NULL or writable.
 */
int nowait_queue_create(const struct nowait_queue_options *opts, struct nowait_queue **out);

/**
 * Destroy a queue (NULL is ignored). Reads pushed and not yet submitted
 * are dropped unread: the kernel never sees them and nothing writes their
 * memory, as with liburing's unsubmitted entries. Reads submitted before
 * (by `nowait_submit` or `nowait_reap`) are waited for (the kernel may be
 * writing into their memory). Once it returns the memory of every read
 * pushed to the queue is the caller's again; completions are discarded.
 * Its completion fd, if it was asked for, is closed: take it out of any
 * epoll set first.
 *
 * Destroying a queue twice, or using it after it is destroyed, is
 * undefined behaviour, as for `free(3)`: its memory is freed.
 *
 * # Safety
 * `q` must be NULL or a queue from `nowait_queue_create`, not destroyed,
 * and not in use by another thread.
 */
void nowait_queue_destroy(struct nowait_queue *q);

/**
 * The queue's completion file descriptor for event loops (epoll, libuv's
 * `uv_poll_t`, tevent): an eventfd that is readable whenever a finished
 * read is waiting to be reaped (level-triggered in effect: after any call
 * on the queue returns, a finished read not yet reaped keeps it readable
 * or makes it so). When it is readable: read its 8-byte counter (the fd is
 * non-blocking; -EAGAIN just means it was already cleared), then call
 * `nowait_reap(q, cqes, n, 0, 0)` until it returns fewer than `n` (or
 * until 0: either rule is enough). A read that finishes meanwhile makes
 * the fd readable again. A wake-up may find nothing (it is a hint); none
 * is lost.
 *
 * What the caller may do with the fd: watch it for reading (epoll, poll,
 * select, or a loop built on them) and read its 8-byte counter. Nothing
 * else: do not write to it, close it, or change its flags (it is
 * `O_NONBLOCK` and `O_CLOEXEC`). It belongs to the queue and is closed by
 * `nowait_queue_destroy`.
 *
 * Ask for it right after creating the queue, before the first push
 * (-EINVAL otherwise); later calls return the same fd. Returns the fd
 * (>= 0) or a negative errno.
 *
 * # Safety
 * `q` must be NULL or a live queue used by this thread only.
 */
int nowait_queue_fd(struct nowait_queue *q);

/**
 * The backend the queue uses: `"uring"`, `"aio"`, `"aio+pool"`, `"pool"`
 * or `"sync"`. The string is static: valid for the life of the process,
 * also after the queue is destroyed; never freed by the caller. NULL for
 * a NULL queue or a handle of another kind.
 *
 * # Safety
 * `q` must be NULL or a live queue.
 */
const char *nowait_queue_backend(const struct nowait_queue *q);

/**
 * Why the backend was chosen (and what was skipped on the way, e.g.
 * "io_uring disabled by NOWAIT_DISABLE_URING"). The string belongs to the
 * queue: valid until the queue is destroyed (copy it to keep it longer).
 * NULL for a NULL queue or a handle of another kind.
 *
 * # Safety
 * `q` must be NULL or a live queue.
 */
const char *nowait_queue_backend_reason(const struct nowait_queue *q);

/**
 * Reads pushed and not yet handed back by `nowait_reap`, or a negative errno.
 *
 * # Safety
 * `q` must be NULL or a live queue.
 */
int nowait_queue_in_flight(const struct nowait_queue *q);

/**
 * Queue a read of `len` bytes at `offset` of `file` into the caller's
 * memory `buf`. It reaches the kernel at the next `nowait_submit` or
 * `nowait_reap`; `nowait_queue_destroy` drops it unread if neither came.
 * (A read of a memory-backed file, tmpfs or zram, may be done at once on
 * the calling thread instead, writing `buf` before `nowait_push` returns;
 * such a push first submits the reads queued before it.) On a
 * `NOWAIT_DIRECT_ON` file, `offset`, `len` and `buf` must meet
 * `nowait_file_dio_align`; on a `NOWAIT_DIRECT_AUTO` one an unaligned read
 * is bounced.
 *
 * `buf` may be any writable memory, uninitialised included (`malloc(3)`):
 * the library never reads it, and only the read writes into it. It must
 * stay valid, and untouched by the caller, until the read's completion is
 * reaped (or the queue destroyed). When the completion's `res` is `n >=
 * 0`, the first `n` bytes of `buf` are the file's, and `n < len` only at
 * end of file. The bytes from `n` to `len` are unspecified: a buffered
 * read leaves them as they were, an O_DIRECT read may have written the
 * rest of the file's last block there; never use them as data. When
 * `res` is a negative errno, all of `buf` is unspecified.
 *
 * Returns 0, or a negative errno and the read is not queued (`buf` is not
 * touched): -EBUSY when every slot holds a read not yet reaped (reap,
 * then push again: pushing again without reaping fails the same way),
 * -EINVAL for a misaligned read on a `NOWAIT_DIRECT_ON` file, a NULL
 * `buf` with `len > 0`, a read over the per-request limit, one ending
 * past the largest file offset (2^63 - 1), or a NULL `q` or `file`;
 * -ENOMEM when the aligned bounce buffer of an unaligned read on a
 * `NOWAIT_DIRECT_AUTO` file cannot be allocated (read it in smaller
 * pieces, or aligned; the bounce covers the request only up to the
 * file's size, so a read far past end of file costs what it returns);
 * -EBADF for a handle of another kind.
 *
 * # Safety
 * `q` must be NULL (refused) or a live queue used by this thread only;
 * `file` NULL (refused) or a live file; `buf` NULL with `len == 0`, or
 * valid for writes of `len` bytes until the completion is reaped or the
 * queue destroyed.
 */
int nowait_push(struct nowait_queue *q,
                const struct nowait_file *file,
                void *buf,
                size_t len,
                uint64_t offset,
                uint64_t user_data);

/**
 * Queue one read described by `*read` (`nowait_push` with the read's I/O
 * priority): the same rules, returns and errors as `nowait_push`.
 *
 * # Safety
 * `q` must be NULL (refused) or a live queue used by this thread only;
 * `read` NULL (refused) or a valid `struct nowait_read` whose `file` and
 * `buf` meet `nowait_push`'s rules.
 */
int nowait_push_read(struct nowait_queue *q, const struct nowait_read *read);

/**
 * Hand every queued read to the kernel (one system call for the batch
 * with io_uring). Returns 0 or a negative errno.
 *
 * # Safety
 * `q` must be NULL or a live queue used by this thread only.
 */
int nowait_submit(struct nowait_queue *q);

/**
 * Submit queued reads, wait until at least `min` reads have completed
 * (fewer if fewer are in flight) or `timeout_ms` passes (-1: no timeout,
 * 0: do not wait), and store up to `max` completions in `cqes`. Returns
 * how many were stored (fewer than `min` only when the timeout passed or
 * fewer were in flight), or a negative errno: -EINVAL when `min > max`,
 * `timeout_ms < -1`, `cqes` is NULL with `max > 0`, or `q` is NULL.
 * Completions that do not fit are kept for the next call (and the
 * completion fd, if asked for, stays readable). A read's memory is the
 * caller's again once its completion is stored here. When a stored
 * completion failed (`res < 0`), `nowait_last_error()` holds the message
 * of the last such read (what was read, what the kernel answered).
 *
 * The arguments run as in `epoll_wait(2)` and liburing's
 * `io_uring_peek_batch_cqe`: the array, how many it holds, then how many
 * to wait for. `io_getevents(2)` puts its `min_nr` before `nr`; written
 * in that order here, a call asks for `min > max` and is refused with
 * -EINVAL rather than read as another request (`min == max` means the
 * same either way).
 *
 * # Safety
 * `q` must be NULL or a live queue used by this thread only; `cqes` must
 * be writable for `max` entries.
 */
int nowait_reap(struct nowait_queue *q,
                struct nowait_cqe *cqes,
                uint32_t max,
                uint32_t min,
                int timeout_ms);

/**
 * The queue's counters so far, as `nowait` reports them: the backend and
 * why it was chosen, reads pushed, completed and failed, the pool
 * backend's nowait path (`RWF_NOWAIT` tries, hits, partial hits, misses,
 * reads handed to a worker), reads issued again (short reads finished,
 * EINTR/EAGAIN retries), bounced, inline and small-direct reads, uncached
 * reads, system calls. As text (one `name: value` line each), or with
 * `flags = NOWAIT_PROBE_JSON` as one JSON object with the same names.
 * Stores an owned string in `*out` (free it with `nowait_string_free`).
 * Returns 0, or a negative errno and `*out` is not written (-EINVAL for a
 * NULL `q` or `out`, or unknown `flags`).
 *
 * # Safety
 * `q` must be NULL or a live queue used by this thread only; `out` NULL
 * or writable.
 */
int nowait_queue_stats(const struct nowait_queue *q, unsigned int flags, char **out);

#ifdef __cplusplus
}  /* extern "C" */
#endif  /* __cplusplus */

#endif  /* NOWAIT_H */


