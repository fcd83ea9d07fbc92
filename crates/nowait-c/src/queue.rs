//! `nowait_queue`: push reads into caller-owned memory, submit, reap.
#![allow(unsafe_code)] // `extern "C"` entry points: raw pointers from C.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CString};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use engine::{BackendChoice, BackendKind, Buf, Completion, NowaitMode, Queue, Read};

use crate::boundary::{guard, guard_int, handle, handle_mut, set_last_error, Fail, Tagged};
use crate::file::{cache_policy, NowaitFile, NOWAIT_CACHE_KEEP};
use crate::words::backend_name;

/// `backend`: the fastest this machine offers, falling back down the
/// ladder (uring, then aio+pool, then pool, then sync) with the reason
/// recorded (`nowait_queue_backend_reason`).
pub const NOWAIT_BACKEND_AUTO: u32 = 0;
/// `backend`: io_uring only (-EOPNOTSUPP where it cannot be set up).
pub const NOWAIT_BACKEND_URING: u32 = 1;
/// `backend`: Linux native AIO only (asynchronous for O_DIRECT files).
pub const NOWAIT_BACKEND_AIO: u32 = 2;
/// `backend`: native AIO for O_DIRECT files, the thread pool for buffered ones.
pub const NOWAIT_BACKEND_AIO_POOL: u32 = 3;
/// `backend`: a pool of threads doing `pread(2)`, with the `RWF_NOWAIT`
/// nowait path (tried on the submitting thread) for cached buffered reads.
pub const NOWAIT_BACKEND_POOL: u32 = 4;
/// `backend`: `pread(2)` on the calling thread, inside submit (the baseline).
pub const NOWAIT_BACKEND_SYNC: u32 = 5;

/// `nowait_mode` (pool backend): try `RWF_NOWAIT` inline while the
/// file's hit ratio stays high (the default).
pub const NOWAIT_MODE_ADAPTIVE: u32 = 0;
/// `nowait_mode`: always try `RWF_NOWAIT` inline first.
pub const NOWAIT_MODE_ALWAYS: u32 = 1;
/// `nowait_mode`: never; every read goes to a worker thread.
pub const NOWAIT_MODE_OFF: u32 = 2;

/// The deepest queue (`depth` at most this).
pub const NOWAIT_MAX_DEPTH: u32 = 16384;

/// Options for `nowait_queue_create`. Set it up with
/// `nowait_queue_options_init`, then change the fields you need. The
/// struct may grow at its end in later versions: `size` tells the library
/// how much of it the caller knows (fields past it take their defaults),
/// and a newer caller's extra fields must be zero for an older library.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NowaitQueueOptions {
    /// `sizeof(struct nowait_queue_options)` as the caller was compiled.
    pub size: u32,
    /// Reads in flight at most: 1 to `NOWAIT_MAX_DEPTH` (0: 32). A read
    /// counts from `nowait_push` until `nowait_reap` collects it from the
    /// backend: a finished read that was not reaped yet still counts (reap
    /// to make room). `nowait_reap` collects every finished read and keeps
    /// those that do not fit the caller's array for the next call; those
    /// no longer count, so `nowait_queue_in_flight` can exceed `depth` by
    /// them.
    pub depth: u32,
    /// One of `NOWAIT_BACKEND_*` (default `NOWAIT_BACKEND_AUTO`).
    pub backend: u32,
    /// One of `NOWAIT_MODE_*` (the pool backend's `RWF_NOWAIT` policy).
    pub nowait_mode: u32,
    /// Worker threads of the pool backend (0: its default).
    pub pool_workers: u32,
    /// One of `NOWAIT_CACHE_*` (default `NOWAIT_CACHE_KEEP`): what the
    /// queue's buffered reads leave in the page cache. Direct reads ignore it.
    pub cache: u32,
}

impl Default for NowaitQueueOptions {
    fn default() -> Self {
        NowaitQueueOptions {
            size: std::mem::size_of::<NowaitQueueOptions>() as u32,
            depth: 32,
            backend: NOWAIT_BACKEND_AUTO,
            nowait_mode: NOWAIT_MODE_ADAPTIVE,
            pool_workers: 0,
            cache: NOWAIT_CACHE_KEEP,
        }
    }
}

/// A completed read, as `nowait_reap` stores it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NowaitCqe {
    /// The `user_data` the read was pushed with.
    pub user_data: u64,
    /// Bytes read (fewer than asked only at end of file: 0 at or past it),
    /// or a negative errno (-EIO, ... ; `nowait_strerror`).
    pub res: i64,
}

/// A queue of reads (opaque), owned by one thread at a time. `repr(C)`:
/// the tag first, as for [`crate::file::NowaitFile`].
/// cbindgen:ignore
#[repr(C)]
pub struct NowaitQueue {
    tag: u64,
    queue: Queue,
    /// Reaped from the engine but not yet handed to the caller (their
    /// array was full), oldest first.
    pending: VecDeque<Completion>,
    /// Scratch for `Queue::reap`, kept to avoid an allocation per call.
    scratch: Vec<Completion>,
    backend: BackendKind,
    reason: CString,
    /// The completion eventfd, once asked for.
    fd: Option<RawFd>,
}

impl Tagged for NowaitQueue {
    const TAG: u64 = 0x6e6f_7761_6974_5155; // "nowaitQU"
    const WHAT: &'static str = "queue (from nowait_queue_create)";
    fn tag(&self) -> u64 {
        self.tag
    }
}

/// Fill `opts` with the defaults (depth 32, backend auto) and its `size`.
///
/// # Safety
/// `opts` must be NULL (ignored) or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_options_init(opts: *mut NowaitQueueOptions) {
    guard("nowait_queue_options_init", (), || {
        if !opts.is_null() {
            // SAFETY: non-NULL and writable (caller's contract).
            unsafe { opts.write(NowaitQueueOptions::default()) };
        }
    })
}

/// Read the caller's options: only the `size` bytes it knows; fields past
/// them keep their defaults; bytes past ours must be zero.
///
/// # Safety
/// `opts` must be NULL or readable for `opts->size` bytes.
unsafe fn read_options(opts: *const NowaitQueueOptions) -> Result<NowaitQueueOptions, Fail> {
    let mut o = NowaitQueueOptions::default();
    if opts.is_null() {
        return Ok(o);
    }
    // SAFETY: the first field is readable whatever the caller's version.
    let size = unsafe { opts.cast::<u32>().read() } as usize;
    let ours = std::mem::size_of::<NowaitQueueOptions>();
    if size < 8 {
        return Err(Fail::new(
            libc::EINVAL,
            format!(
                "opts->size is {size}; set it with nowait_queue_options_init (it is \
                 sizeof(struct nowait_queue_options), {ours} in this version)"
            ),
        ));
    }
    let base = opts.cast::<u8>();
    // Newer caller: what we do not know must be left at zero.
    for i in ours..size {
        // SAFETY: the caller's struct is `size` bytes long.
        if unsafe { base.add(i).read() } != 0 {
            return Err(Fail::new(
                libc::EINVAL,
                format!(
                    "opts sets a field at byte {i} that this libnowait ({}) does not know; \
                     upgrade libnowait or leave that option at zero",
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
    }
    // SAFETY: `dst` is our struct; at most `size` (and at most `ours`)
    // bytes of the caller's struct are read, all of which it owns.
    unsafe {
        std::ptr::copy_nonoverlapping(
            base,
            (&mut o as *mut NowaitQueueOptions).cast::<u8>(),
            size.min(ours),
        )
    };
    o.size = ours as u32;
    Ok(o)
}

fn builder(o: &NowaitQueueOptions) -> Result<engine::QueueBuilder, Fail> {
    let depth = if o.depth == 0 { 32 } else { o.depth as usize };
    let backend = match o.backend {
        NOWAIT_BACKEND_AUTO => BackendChoice::Auto,
        NOWAIT_BACKEND_URING => BackendChoice::Exactly(BackendKind::Uring),
        NOWAIT_BACKEND_AIO => BackendChoice::Exactly(BackendKind::Aio),
        NOWAIT_BACKEND_AIO_POOL => BackendChoice::Exactly(BackendKind::AioPool),
        NOWAIT_BACKEND_POOL => BackendChoice::Exactly(BackendKind::Pool),
        NOWAIT_BACKEND_SYNC => BackendChoice::Exactly(BackendKind::Sync),
        b => {
            return Err(Fail::new(
                libc::EINVAL,
                format!("opts->backend = {b} is not a backend; pass one of NOWAIT_BACKEND_AUTO (0) to NOWAIT_BACKEND_SYNC (5)"),
            ))
        }
    };
    let mode = match o.nowait_mode {
        NOWAIT_MODE_ADAPTIVE => NowaitMode::Adaptive,
        NOWAIT_MODE_ALWAYS => NowaitMode::Always,
        NOWAIT_MODE_OFF => NowaitMode::Off,
        m => {
            return Err(Fail::new(
                libc::EINVAL,
                format!("opts->nowait_mode = {m} is not a mode; pass NOWAIT_MODE_ADAPTIVE (0), _ALWAYS (1) or _OFF (2)"),
            ))
        }
    };
    let cache = cache_policy(o.cache, "opts->cache")?;
    // The header lets a queue move between threads (one at a time). An
    // io_uring ring set up SINGLE_ISSUER refuses every call but its
    // creator's (EEXIST), including the waits of `nowait_queue_destroy`,
    // which would then return while the kernel still writes into the
    // caller's buffers: C queues never ask for it.
    let mut b = Queue::builder()
        .depth(depth)
        .backend(backend)
        .nowait(mode)
        .cache(cache)
        .single_issuer(false);
    if o.pool_workers != 0 {
        b = b.pool_workers(o.pool_workers as usize);
    }
    Ok(b)
}

/// Create a queue with `opts` (NULL: the defaults). Returns 0 and stores
/// the queue in `*out`, or a negative errno and `*out` is not written:
/// -EINVAL for a bad option (`opts->size` below 8, i.e. not set by
/// `nowait_queue_options_init`; a field past this library's struct set to
/// non-zero; an unknown `backend`, `nowait_mode` or `cache`; `depth` over
/// `NOWAIT_MAX_DEPTH`; `pool_workers` out of range) or a NULL `out`,
/// -EOPNOTSUPP when the backend asked for cannot be set up here (the
/// message says why and which `NOWAIT_BACKEND_*` to ask for instead), or
/// the kernel's errno (-ENOMEM, ...).
///
/// # Safety
/// `opts` must be NULL or point to an options struct of `opts->size`
/// bytes; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_create(
    opts: *const NowaitQueueOptions,
    out: *mut *mut NowaitQueue,
) -> c_int {
    guard_int("nowait_queue_create", || {
        if out.is_null() {
            return Err(Fail::new(
                libc::EINVAL,
                "out is NULL; pass where to store the queue",
            ));
        }
        // SAFETY: caller's contract.
        let o = unsafe { read_options(opts) }?;
        let queue = builder(&o)?.build()?;
        let report = queue.backend();
        let backend = report.kind;
        let reason = CString::new(report.reason.to_string().replace('\0', "")).unwrap_or_default();
        let depth = queue.depth();
        let h = Box::into_raw(Box::new(NowaitQueue {
            tag: NowaitQueue::TAG,
            queue,
            pending: VecDeque::with_capacity(depth),
            scratch: Vec::with_capacity(depth),
            backend,
            reason,
            fd: None,
        }));
        // SAFETY: non-NULL (checked) and writable (caller's contract).
        unsafe { out.write(h) };
        Ok(0)
    })
}

/// Destroy a queue (NULL is ignored). Reads pushed and not yet submitted
/// are dropped unread: the kernel never sees them and nothing writes their
/// memory, as with liburing's unsubmitted entries. Reads submitted before
/// (by `nowait_submit` or `nowait_reap`) are waited for (the kernel may be
/// writing into their memory). Once it returns the memory of every read
/// pushed to the queue is the caller's again; completions are discarded.
/// Its completion fd, if it was asked for, is closed: take it out of any
/// epoll set first.
///
/// Destroying a queue twice, or using it after it is destroyed, is
/// undefined behaviour, as for `free(3)`: its memory is freed.
///
/// # Safety
/// `q` must be NULL or a queue from `nowait_queue_create`, not destroyed,
/// and not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_destroy(q: *mut NowaitQueue) {
    guard("nowait_queue_destroy", (), || {
        // SAFETY: caller's contract.
        if unsafe { handle_mut(q, "q") }.is_ok() {
            // SAFETY: a live handle from Box::into_raw in nowait_queue_create.
            let mut b = unsafe { Box::from_raw(q) };
            b.tag = 0;
            // Dropping the engine queue waits for the reads it owes.
            drop(b);
        }
    })
}

/// The queue's completion file descriptor for event loops (epoll, libuv's
/// `uv_poll_t`, tevent): an eventfd that is readable whenever a finished
/// read is waiting to be reaped (level-triggered in effect: after any call
/// on the queue returns, a finished read not yet reaped keeps it readable
/// or makes it so). When it is readable: read its 8-byte counter (the fd is
/// non-blocking; -EAGAIN just means it was already cleared), then call
/// `nowait_reap(q, cqes, n, 0, 0)` until it returns fewer than `n` (or
/// until 0: either rule is enough). A read that finishes meanwhile makes
/// the fd readable again. A wake-up may find nothing (it is a hint); none
/// is lost.
///
/// What the caller may do with the fd: watch it for reading (epoll, poll,
/// select, or a loop built on them) and read its 8-byte counter. Nothing
/// else: do not write to it, close it, or change its flags (it is
/// `O_NONBLOCK` and `O_CLOEXEC`). It belongs to the queue and is closed by
/// `nowait_queue_destroy`.
///
/// Ask for it right after creating the queue, before the first push
/// (-EINVAL otherwise); later calls return the same fd. Returns the fd
/// (>= 0) or a negative errno.
///
/// # Safety
/// `q` must be NULL or a live queue used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_fd(q: *mut NowaitQueue) -> c_int {
    guard_int("nowait_queue_fd", || {
        // SAFETY: caller's contract.
        let h = unsafe { handle_mut(q, "q") }?;
        if let Some(fd) = h.fd {
            return Ok(fd);
        }
        let fd = h.queue.completion_fd()?.as_raw_fd();
        h.fd = Some(fd);
        Ok(fd)
    })
}

/// The backend the queue uses: `"uring"`, `"aio"`, `"aio+pool"`, `"pool"`
/// or `"sync"`. The string is static: valid for the life of the process,
/// also after the queue is destroyed; never freed by the caller. NULL for
/// a NULL queue or a handle of another kind.
///
/// # Safety
/// `q` must be NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_backend(q: *const NowaitQueue) -> *const c_char {
    guard("nowait_queue_backend", std::ptr::null(), || {
        // SAFETY: caller's contract.
        match unsafe { handle(q, "q") } {
            Ok(h) => backend_name(h.backend).as_ptr(),
            Err(e) => {
                set_last_error("nowait_queue_backend", &e.msg);
                std::ptr::null()
            }
        }
    })
}

/// Why the backend was chosen (and what was skipped on the way, e.g.
/// "io_uring disabled by NOWAIT_DISABLE_URING"). The string belongs to the
/// queue: valid until the queue is destroyed (copy it to keep it longer).
/// NULL for a NULL queue or a handle of another kind.
///
/// # Safety
/// `q` must be NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_backend_reason(q: *const NowaitQueue) -> *const c_char {
    guard("nowait_queue_backend_reason", std::ptr::null(), || {
        // SAFETY: caller's contract.
        match unsafe { handle(q, "q") } {
            Ok(h) => h.reason.as_ptr(),
            Err(e) => {
                set_last_error("nowait_queue_backend_reason", &e.msg);
                std::ptr::null()
            }
        }
    })
}

/// Reads pushed and not yet handed back by `nowait_reap`, or a negative errno.
///
/// # Safety
/// `q` must be NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_in_flight(q: *const NowaitQueue) -> c_int {
    guard_int("nowait_queue_in_flight", || {
        // SAFETY: caller's contract.
        let h = unsafe { handle(q, "q") }?;
        Ok((h.queue.in_flight() + h.pending.len()) as c_int)
    })
}

/// Queue a read of `len` bytes at `offset` of `file` into the caller's
/// memory `buf`. It reaches the kernel at the next `nowait_submit` or
/// `nowait_reap`; `nowait_queue_destroy` drops it unread if neither came.
/// (A read of a memory-backed file, tmpfs or zram, may be done at once on
/// the calling thread instead, writing `buf` before `nowait_push` returns;
/// such a push first submits the reads queued before it.) On a
/// `NOWAIT_DIRECT_ON` file, `offset`, `len` and `buf` must meet
/// `nowait_file_dio_align`; on a `NOWAIT_DIRECT_AUTO` one an unaligned read
/// is bounced.
///
/// `buf` may be any writable memory, uninitialised included (`malloc(3)`):
/// the library never reads it, and only the read writes into it. It must
/// stay valid, and untouched by the caller, until the read's completion is
/// reaped (or the queue destroyed). When the completion's `res` is `n >=
/// 0`, the first `n` bytes of `buf` are the file's, and `n < len` only at
/// end of file. The bytes from `n` to `len` are unspecified: a buffered
/// read leaves them as they were, an O_DIRECT read may have written the
/// rest of the file's last block there; never use them as data. When
/// `res` is a negative errno, all of `buf` is unspecified.
///
/// Returns 0, or a negative errno and the read is not queued (`buf` is not
/// touched): -EBUSY when every slot holds a read not yet reaped (reap,
/// then push again: pushing again without reaping fails the same way),
/// -EINVAL for a misaligned read on a `NOWAIT_DIRECT_ON` file, a NULL
/// `buf` with `len > 0`, a read over the per-request limit, one ending
/// past the largest file offset (2^63 - 1), or a NULL `q` or `file`;
/// -ENOMEM when the aligned bounce buffer of an unaligned read on a
/// `NOWAIT_DIRECT_AUTO` file cannot be allocated (read it in smaller
/// pieces, or aligned; the bounce covers the request only up to the
/// file's size, so a read far past end of file costs what it returns);
/// -EBADF for a handle of another kind.
///
/// # Safety
/// `q` must be NULL (refused) or a live queue used by this thread only;
/// `file` NULL (refused) or a live file; `buf` NULL with `len == 0`, or
/// valid for writes of `len` bytes until the completion is reaped or the
/// queue destroyed.
#[no_mangle]
pub unsafe extern "C" fn nowait_push(
    q: *mut NowaitQueue,
    file: *const NowaitFile,
    buf: *mut c_void,
    len: usize,
    offset: u64,
    user_data: u64,
) -> c_int {
    guard_int("nowait_push", || {
        let r = NowaitRead {
            file,
            buf,
            len,
            offset,
            user_data,
            ioprio: 0,
        };
        // SAFETY: caller's contract.
        unsafe { push_one(q, &r) }
    })
}

/// Push `r` to queue `q` (`nowait_push` and `nowait_push_read`).
///
/// # Safety
/// As `nowait_push_read`.
unsafe fn push_one(q: *mut NowaitQueue, r: &NowaitRead) -> Result<c_int, Fail> {
    // SAFETY: caller's contract.
    let h = unsafe { handle_mut(q, "q") }?;
    // SAFETY: caller's contract.
    let f = unsafe { handle(r.file, "file") }?;
    let (buf, len) = (r.buf, r.len);
    if buf.is_null() && len > 0 {
        return Err(Fail::new(
            libc::EINVAL,
            format!("buf is NULL for a read of {len} bytes; pass memory of at least len bytes"),
        ));
    }
    // SAFETY: the caller keeps `buf` valid for writes of `len` bytes
    // and leaves it alone until the completion is reaped or the queue
    // destroyed (the header's rule); the Buf never frees it. The bytes
    // need not be initialised (memory from `malloc`, as the header
    // allows): `from_raw_parts` takes such memory and never shows a
    // byte before a read wrote it.
    let b = unsafe { Buf::from_raw_parts(buf.cast::<u8>(), len) };
    h.queue.push(Read {
        file: &f.file,
        offset: r.offset,
        len,
        buf: b,
        user_data: r.user_data,
        ioprio: r.ioprio,
        cache: None,
    })?;
    Ok(0)
}

/// One read for `nowait_push_read`: `nowait_push`'s arguments and the
/// read's I/O priority.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NowaitRead {
    /// The file to read.
    pub file: *const NowaitFile,
    /// Where the bytes go (the rules of `nowait_push`'s `buf`).
    pub buf: *mut c_void,
    /// Bytes to read.
    pub len: usize,
    /// Byte offset in the file.
    pub offset: u64,
    /// Returned unchanged in the read's `nowait_cqe`.
    pub user_data: u64,
    /// The read's I/O priority as `ioprio_set(2)` spells it (class << 13 |
    /// level: `NOWAIT_IOPRIO_CLASS_IDLE << 13` for class idle), or 0 for none
    /// of its own (the submitting thread's applies). io_uring's
    /// `sqe->ioprio`, native AIO's `aio_reqprio`, `ioprio_set(2)` on the
    /// pool's worker and around the sync backend's `pread`. A priority the
    /// kernel refuses fails the read: its `res` is -EINVAL (unknown class)
    /// or -EPERM (real-time class without `CAP_SYS_ADMIN`).
    pub ioprio: u16,
}

/// `NowaitRead.ioprio`'s class "real time" (needs `CAP_SYS_ADMIN`).
pub const NOWAIT_IOPRIO_CLASS_RT: u16 = 1;
/// `NowaitRead.ioprio`'s class "best effort", every thread's default.
pub const NOWAIT_IOPRIO_CLASS_BE: u16 = 2;
/// `NowaitRead.ioprio`'s class "idle": served when nothing else waits.
pub const NOWAIT_IOPRIO_CLASS_IDLE: u16 = 3;

/// Queue one read described by `*read` (`nowait_push` with the read's I/O
/// priority): the same rules, returns and errors as `nowait_push`.
///
/// # Safety
/// `q` must be NULL (refused) or a live queue used by this thread only;
/// `read` NULL (refused) or a valid `struct nowait_read` whose `file` and
/// `buf` meet `nowait_push`'s rules.
#[no_mangle]
pub unsafe extern "C" fn nowait_push_read(q: *mut NowaitQueue, read: *const NowaitRead) -> c_int {
    guard_int("nowait_push_read", || {
        if read.is_null() {
            return Err(Fail::new(
                libc::EINVAL,
                "read is NULL; pass the read to queue",
            ));
        }
        // SAFETY: non-NULL and valid (caller's contract); copied out.
        let r = unsafe { read.read() };
        // SAFETY: caller's contract, as nowait_push's.
        unsafe { push_one(q, &r) }
    })
}

/// Hand every queued read to the kernel (one system call for the batch
/// with io_uring). Returns 0 or a negative errno.
///
/// # Safety
/// `q` must be NULL or a live queue used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn nowait_submit(q: *mut NowaitQueue) -> c_int {
    guard_int("nowait_submit", || {
        // SAFETY: caller's contract.
        let h = unsafe { handle_mut(q, "q") }?;
        h.queue.submit()?;
        Ok(0)
    })
}

/// Submit queued reads, wait until at least `min` reads have completed
/// (fewer if fewer are in flight) or `timeout_ms` passes (-1: no timeout,
/// 0: do not wait), and store up to `max` completions in `cqes`. Returns
/// how many were stored (fewer than `min` only when the timeout passed or
/// fewer were in flight), or a negative errno: -EINVAL when `min > max`,
/// `timeout_ms < -1`, `cqes` is NULL with `max > 0`, or `q` is NULL.
/// Completions that do not fit are kept for the next call (and the
/// completion fd, if asked for, stays readable). A read's memory is the
/// caller's again once its completion is stored here. When a stored
/// completion failed (`res < 0`), `nowait_last_error()` holds the message
/// of the last such read (what was read, what the kernel answered).
///
/// The arguments run as in `epoll_wait(2)` and liburing's
/// `io_uring_peek_batch_cqe`: the array, how many it holds, then how many
/// to wait for. `io_getevents(2)` puts its `min_nr` before `nr`; written
/// in that order here, a call asks for `min > max` and is refused with
/// -EINVAL rather than read as another request (`min == max` means the
/// same either way).
///
/// # Safety
/// `q` must be NULL or a live queue used by this thread only; `cqes` must
/// be writable for `max` entries.
#[no_mangle]
pub unsafe extern "C" fn nowait_reap(
    q: *mut NowaitQueue,
    cqes: *mut NowaitCqe,
    max: u32,
    min: u32,
    timeout_ms: c_int,
) -> c_int {
    guard_int("nowait_reap", || {
        // SAFETY: caller's contract.
        let h = unsafe { handle_mut(q, "q") }?;
        if cqes.is_null() && max > 0 {
            return Err(Fail::new(
                libc::EINVAL,
                format!("cqes is NULL with max = {max}; pass an array of max entries"),
            ));
        }
        if min > max {
            return Err(Fail::new(
                libc::EINVAL,
                format!("min = {min} is more than max = {max}: cqes cannot hold that many; pass min <= max"),
            ));
        }
        let timeout = match timeout_ms {
            -1 => None,
            t if t >= 0 => Some(Duration::from_millis(t as u64)),
            t => {
                return Err(Fail::new(
                    libc::EINVAL,
                    format!("timeout_ms = {t}; pass -1 (wait without limit), 0 (do not wait) or a positive number of milliseconds"),
                ))
            }
        };
        let max = max as usize;
        let mut n = 0;
        let mut put = |c: Completion| {
            let res = cqe_res(c.result);
            // SAFETY: n < max and `cqes` holds `max` entries (caller's contract).
            unsafe {
                cqes.add(n).write(NowaitCqe {
                    user_data: c.user_data,
                    res,
                })
            };
            n += 1;
            // `c.buf` is the caller's memory (from_raw_parts): dropping it
            // here ends the engine's use of it and frees nothing.
        };
        // Completions left over from the last call first, oldest first.
        let from_pending = h.pending.len().min(max);
        for c in h.pending.drain(..from_pending) {
            put(c);
        }
        if from_pending < max {
            let need = (min as usize).saturating_sub(from_pending);
            h.scratch.clear();
            if let Err(e) = h.queue.reap(need, timeout, &mut h.scratch) {
                // Nothing is lost: what was collected waits for the next call;
                // the error is reported now unless completions were stored.
                h.pending.extend(h.scratch.drain(..));
                if n == 0 {
                    return Err(e.into());
                }
                set_last_error("nowait_reap", &Fail::from(&e).msg);
                return Ok(n as c_int);
            }
            let fit = h.scratch.len().min(max - from_pending);
            let mut rest = h.scratch.drain(..);
            for c in rest.by_ref().take(fit) {
                put(c);
            }
            // What does not fit in the caller's array waits for the next call.
            h.pending.extend(rest);
        }
        if !h.pending.is_empty() {
            // Completions wait here, not in the engine: keep the fd readable.
            h.queue.signal_completion_fd();
        }
        Ok(n as c_int)
    })
}

/// The queue's counters so far, as `nowait` reports them: the backend and
/// why it was chosen, reads pushed, completed and failed, the pool
/// backend's nowait path (`RWF_NOWAIT` tries, hits, partial hits, misses,
/// reads handed to a worker), reads issued again (short reads finished,
/// EINTR/EAGAIN retries), bounced, inline and small-direct reads, uncached
/// reads, system calls. As text (one `name: value` line each), or with
/// `flags = NOWAIT_PROBE_JSON` as one JSON object with the same names.
/// Stores an owned string in `*out` (free it with `nowait_string_free`).
/// Returns 0, or a negative errno and `*out` is not written (-EINVAL for a
/// NULL `q` or `out`, or unknown `flags`).
///
/// # Safety
/// `q` must be NULL or a live queue used by this thread only; `out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_queue_stats(
    q: *const NowaitQueue,
    flags: std::ffi::c_uint,
    out: *mut *mut c_char,
) -> c_int {
    guard_int("nowait_queue_stats", || {
        // SAFETY: caller's contract.
        let h = unsafe { handle(q, "q") }?;
        if flags & !crate::probe::NOWAIT_PROBE_JSON != 0 {
            return Err(Fail::new(
                libc::EINVAL,
                format!("flags = {flags:#x} has unknown bits; pass 0 (text) or NOWAIT_PROBE_JSON"),
            ));
        }
        let s = stats_report(h, flags & crate::probe::NOWAIT_PROBE_JSON != 0);
        // SAFETY: caller's contract (NULL is refused by write_out).
        unsafe { crate::boundary::write_out(out, crate::mem::owned_string(s), "out") }?;
        Ok(0)
    })
}

/// `nowait_queue_stats`' report of queue `h`.
fn stats_report(h: &NowaitQueue, json: bool) -> String {
    let s = h.queue.stats();
    let nw = s.backend.nowait;
    let counts: [(&str, u64); 21] = [
        ("pushed", s.pushed),
        ("completed", s.completed),
        ("errors", s.errors),
        ("nowait_tries", nw.tries),
        ("nowait_hits", nw.hits),
        ("nowait_partial_hits", nw.partial_hits),
        ("nowait_misses", nw.misses),
        ("nowait_refused", nw.refused),
        ("nowait_skipped", nw.skipped),
        ("punts", nw.offloads),
        ("worker_reads", nw.worker_reads),
        ("short_retries", s.short_retries),
        ("interrupted_retries", s.interrupted_retries),
        ("orphaned_retries", s.orphaned_retries),
        ("bounced", s.bounced),
        ("inline", s.inline),
        ("small_direct", s.small_direct),
        ("uncached", s.dontcache.uncached),
        ("fixed_reads", s.backend.fixed_reads),
        ("aio_reads", s.backend.aio_reads),
        ("syscalls", s.backend.syscalls),
    ];
    let backend = backend_name(h.backend).to_string_lossy();
    let reason = h.reason.to_string_lossy();
    if json {
        let mut m = serde_json::Map::new();
        m.insert("backend".into(), backend.as_ref().into());
        m.insert("reason".into(), reason.as_ref().into());
        for (k, v) in counts {
            m.insert(k.into(), v.into());
        }
        serde_json::Value::Object(m).to_string()
    } else {
        let mut out = format!("backend: {backend}\nreason: {reason}\n");
        for (k, v) in counts {
            out.push_str(&format!("{k}: {v}\n"));
        }
        out
    }
}

/// A completion's `res`: the bytes read, or the negation of the engine's
/// errno for the error (with its words kept as the last error: a cqe
/// carries only the number).
fn cqe_res(result: engine::Result<usize>) -> i64 {
    match result {
        Ok(bytes) => bytes as i64,
        Err(e) => {
            let fail = Fail::from(&e);
            set_last_error("nowait_reap (a read failed)", &fail.msg);
            -i64::from(fail.errno)
        }
    }
}

// The header lets a queue move between threads (used by one at a time) and
// share files between threads: that needs these bounds.
const _: () = {
    const fn send<T: Send>() {}
    const fn send_sync<T: Send + Sync>() {}
    send::<Queue>();
    send_sync::<engine::File>();
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed read's `res` is the negation of the engine's errno, as a
    /// failed call's return value is.
    #[test]
    fn a_failed_read_carries_its_errno_negated() {
        for (name, e) in engine::error_samples() {
            let errno = e.errno();
            assert_eq!(cqe_res(Err(e)), -i64::from(errno), "{name}");
        }
        assert_eq!(cqe_res(Ok(4096)), 4096);
    }
}
