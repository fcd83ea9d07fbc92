//! `nowait._nowait`: the compiled half of the `nowait` Python package.
//!
//! The Python package (python/nowait/__init__.py) subclasses [`PyFile`] to
//! add the asyncio methods and the context manager; everything that touches
//! the engine is here. Blocking calls take an idle `Core` (calls.rs) from a
//! process-wide pool (one per Python thread reading at the same time),
//! release the GIL while the engine waits, and hand the core back. asyncio
//! calls go through a `Ring` per event loop whose completion eventfd the
//! loop watches (`loop.add_reader`).
//!
//! Nothing here panics on user input: every failure is a Python exception.
#![deny(unsafe_code)] // allowed only in the buffer/FFI modules (docs/ARCHITECTURE.md)

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

mod args;
mod calls;
mod errors;
mod export;
mod probe_dict;

use crate::args::{Call, Plan};
use crate::calls::{Core, Kind, Op, Source, Tally};
use crate::errors::to_py;
use crate::export::{Landing, TrimOnDrop};

/// Slots of a pooled core used by the blocking calls.
const SYNC_DEPTH: usize = 64;
/// Idle cores kept for reuse.
const POOL_MAX: usize = 64;
/// How often a blocking call that waits checks for signals (Ctrl-C).
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// Longest `aread_at` tried from the page cache first (`File._read_cached`);
/// longer ones take the ring. The try copies with the GIL held on the
/// loop's thread, and past a few hundred KiB the copy, not the ring's
/// ~10 µs, is the cost.
const CACHED_MAX: usize = 1 << 20;
/// Cached hits in a row on one thread before one goes through the ring
/// anyway (tokio's per-task budget is 128 too): a task reading only cached
/// data awaits nothing that suspends, so without this it would keep the
/// event loop from every other task until it stopped reading.
const CACHED_BUDGET: u32 = 128;

thread_local! {
    /// Cached hits on this thread since a read last went through the ring.
    static HITS_IN_A_ROW: Cell<u32> = const { Cell::new(0) };
}

static POOL: Mutex<Vec<Core>> = Mutex::new(Vec::new());
static BACKEND: OnceLock<(String, String, String)> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data
    // inconsistent in a way later calls care about; keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn remember_backend(c: &Core) {
    let r = c.backend();
    BACKEND.get_or_init(|| (r.kind.to_string(), r.reason.to_string(), r.detail.clone()));
}

fn take_core() -> nowait::Result<Core> {
    {
        let mut pool = lock(&POOL);
        while let Some(c) = pool.pop() {
            if c.is_ours() {
                return Ok(c);
            }
            // Inherited through fork: its Drop leaks it without touching it.
            drop(c);
        }
    }
    let c = Core::new(SYNC_DEPTH, false, nowait::SubmitPolicy::Adaptive)?;
    remember_backend(&c);
    Ok(c)
}

fn put_core(c: Core) {
    let mut pool = lock(&POOL);
    if pool.len() < POOL_MAX {
        pool.push(c);
    }
}

/// An open file, for reading. Create with `nowait.open(path)` (buffered, the
/// page cache first) or `nowait.open(path, direct="auto")` (O_DIRECT).
///
/// Blocking methods release the GIL while the engine waits; several threads
/// may use one File at once.
#[pyclass(name = "File", module = "nowait._nowait", subclass, frozen)]
pub struct PyFile {
    inner: RwLock<Option<Arc<nowait::File>>>,
    /// What was opened: the path, or `/proc/self/fd/N` for a descriptor.
    path: PathBuf,
    /// The caller's descriptor, for a file opened from one.
    fd: Option<i32>,
    /// The caller's descriptor while `close()` is to close it (`closefd`).
    close_fd: Mutex<Option<i32>>,
    mode: &'static str,
    calls: AtomicU64,
    /// Reads, bytes and errors, also added by asynchronous calls when
    /// their ring collects them.
    tally: Arc<Tally>,
    async_calls: AtomicU64,
    /// `aread_at`'s page-cache-first mode (`nowait.open(..., nowait=)`).
    nowait: nowait::NowaitMode,
    /// What buffered reads leave in the page cache (`nowait.open(..., cache=)`).
    cache: nowait::CachePolicy,
    cached: CachedCounts,
}

/// The page-cache hits of `read_at` and `aread_at` (`File.stats()` adds
/// them to the calls, reads, bytes and hits it reports), and the hits
/// `aread_at` sent to the ring instead.
///
/// These are changed only with the GIL held (a hit is read with it held),
/// so a load and a store lose no update and take no locked instruction: a
/// cached `read_at` costs three plain additions, not five atomic ones.
/// (This abi3 extension runs only on interpreters with a GIL.)
#[derive(Default)]
struct CachedCounts {
    /// `read_at` calls answered from the page cache.
    read_at: AtomicU64,
    /// `aread_at` calls answered from the page cache.
    aread_at: AtomicU64,
    /// Bytes those calls returned.
    bytes: AtomicU64,
    /// Hits sent to the ring to let the loop run ([`CACHED_BUDGET`]).
    yields: AtomicU64,
}

impl CachedCounts {
    /// Add `by` to `c`; the GIL is held (`_py`).
    fn bump(_py: Python<'_>, c: &AtomicU64, by: u64) {
        c.store(c.load(Relaxed).wrapping_add(by), Relaxed);
    }

    fn hits(&self) -> u64 {
        self.read_at.load(Relaxed) + self.aread_at.load(Relaxed)
    }
}

impl PyFile {
    fn file(&self) -> PyResult<Arc<nowait::File>> {
        let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(f) => Ok(Arc::clone(f)),
            None => Err(PyValueError::new_err(format!(
                "I/O operation on closed file {}",
                self.path.display()
            ))),
        }
    }

    fn account(&self, op: &Op) {
        self.calls.fetch_add(1, Relaxed);
        self.tally.add(op);
    }

    /// Run one call on a pooled core with the GIL released, checking for
    /// signals every [`SIGNAL_CHECK`] while it waits: an exception raised
    /// by a signal handler (KeyboardInterrupt) ends the call at once, and
    /// the reads already with the kernel finish in the background (the
    /// core reaps them before its next call; their memory is released
    /// then), the ones not yet submitted are dropped.
    fn run_sync(&self, py: Python<'_>, call: Call<'_, '_>, ioprio: u16) -> PyResult<Py<PyAny>> {
        let file = self.file()?;
        let Plan { kind, reqs, shared } = args::plan(py, &file, call)?;
        // Batches try each record from the page cache first, on this thread
        // with the GIL released (read_at has tried already).
        let cached_first =
            Some(self.nowait).filter(|m| *m != nowait::NowaitMode::Off && kind != Kind::One);
        let src = Source {
            file,
            tally: self.tally.clone(),
            cached_first,
            ioprio,
        };
        let mut op = Op::new(py, src, kind, reqs, shared)?;
        if op.cached_first() {
            // Records are read in order until one is not cached; when all
            // are, the call is done here, without a queue. Nothing is lent
            // to the kernel yet, so a signal simply ends the call.
            while !py.detach(|| op.try_cached(SIGNAL_CHECK)) {
                if let Err(e) = py.check_signals() {
                    self.tally.errors.fetch_add(1, Relaxed);
                    return Err(e);
                }
            }
            if op.all_tried() {
                self.account(&op);
                return finish(py, op);
            }
        }
        let mut core = take_core().map_err(to_py)?;
        let id = core.start(op);
        loop {
            match py.detach(|| core.wait_for(id, SIGNAL_CHECK)) {
                Ok(true) => break,
                Ok(false) => {
                    if let Err(e) = py.check_signals() {
                        core.abandon(id);
                        // The reads with the kernel usually finish within
                        // this; any left are reaped by the core's next call.
                        let _ = py.detach(|| core.wait_for(id, SIGNAL_CHECK));
                        put_core(core);
                        self.tally.errors.fetch_add(1, Relaxed);
                        return Err(e);
                    }
                }
                Err(e) => {
                    // The op stays with the core until the kernel is done with it.
                    core.abandon(id);
                    put_core(core);
                    self.tally.errors.fetch_add(1, Relaxed);
                    return Err(to_py(e));
                }
            }
        }
        let mut result = Err(PyValueError::new_err("internal: the call did not finish"));
        for (done_id, op) in core.take_done() {
            if done_id == id {
                self.account(&op);
                result = finish(py, op);
            }
            // Any other finished op was abandoned by an earlier call: drop it.
        }
        put_core(core);
        result
    }
}

/// Turn a finished op into its Python result.
fn finish(py: Python<'_>, mut op: Op) -> PyResult<Py<PyAny>> {
    if let Some((_, e)) = op.error.take() {
        return Err(to_py(e));
    }
    let r = match op.kind {
        Kind::One => {
            let n = op.counts.first().copied().unwrap_or(0);
            match op.landings.pop() {
                Some(l) => l.into_bytes(py, n)?.into_any(),
                None => PyBytes::new(py, &[]).into_any().unbind(),
            }
        }
        Kind::Many => {
            let list = PyList::empty(py);
            for (l, &n) in op.landings.drain(..).zip(&op.counts) {
                list.append(l.into_bytes(py, n)?)?;
            }
            list.into_any().unbind()
        }
        Kind::Into => PyList::new(py, &op.counts)?.into_any().unbind(),
        Kind::IntoOne => op
            .counts
            .first()
            .copied()
            .unwrap_or(0)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        Kind::Whole => {
            // Up to the first short part: the file ended there.
            let mut n = 0;
            for (&got, &(_, asked)) in op.counts.iter().zip(&op.reqs) {
                n += got;
                if got < asked {
                    break;
                }
            }
            if op.landings.len() == 1 {
                let l = op.landings.pop().expect("one landing");
                l.into_bytes(py, n)?.into_any()
            } else {
                // An O_DIRECT file's parts, each in its own buffer: joined.
                let mut all = Vec::with_capacity(n);
                for (l, &got) in op.landings.drain(..).zip(&op.counts) {
                    let b = l.into_bytes(py, got)?;
                    let b = b.bind(py).as_bytes();
                    all.extend_from_slice(&b[..got.min(b.len()).min(n - all.len())]);
                }
                PyBytes::new(py, &all).into_any().unbind()
            }
        }
    };
    // The export (if any) is released here, with the GIL held.
    drop(op);
    Ok(r)
}

#[pymethods]
impl PyFile {
    /// File(path, direct="off", nowait="adaptive", closefd=True, cache="keep")
    ///
    /// `path` is a path (`str`, `bytes`, `os.PathLike`) or an open file
    /// descriptor (`int`). A descriptor is read through a descriptor of
    /// the file's own, opened again through `/proc/self/fd` with `direct`'s
    /// flags (its open file description, offset and flags stay the
    /// caller's); with `closefd` (the default, as for `open()`), `close()`
    /// closes the caller's descriptor too.
    #[new]
    #[pyo3(signature = (path, direct = None, nowait = None, closefd = true, cache = None))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        direct: Option<&Bound<'_, PyAny>>,
        nowait: Option<&str>,
        closefd: bool,
        cache: Option<&str>,
    ) -> PyResult<Self> {
        let (path, fd) = if path.is_instance_of::<pyo3::types::PyInt>() {
            if path.is_instance_of::<pyo3::types::PyBool>() {
                return Err(PyTypeError::new_err(
                    "path must be a path or a file descriptor (int), not a bool",
                ));
            }
            let fd: i32 = path
                .extract()
                .map_err(|_| PyValueError::new_err(format!("{path} is not a file descriptor")))?;
            // EBADF as Python's own calls raise it, before any reopening.
            py.import("os")?.getattr("fstat")?.call1((fd,))?;
            (PathBuf::from(format!("/proc/self/fd/{fd}")), Some(fd))
        } else {
            if !closefd {
                return Err(PyValueError::new_err(
                    "closefd=False is for a file descriptor; a path's file is always closed",
                ));
            }
            (fs_path(path)?, None)
        };
        let mode = match direct {
            Some(d) => args::parse_direct(d)?,
            None => nowait::Direct::Off,
        };
        let nowait = args::parse_nowait(nowait.unwrap_or("adaptive"))?;
        let cache = args::parse_cache(cache.unwrap_or("keep"))?;
        let p = path.clone();
        let file = py
            .detach(move || nowait::File::open(&p, mode))
            .map_err(to_py)?;
        file.set_cache_policy(cache);
        Ok(PyFile {
            inner: RwLock::new(Some(Arc::new(file))),
            path,
            fd,
            close_fd: Mutex::new(fd.filter(|_| closefd)),
            mode: args::direct_name(mode),
            calls: AtomicU64::new(0),
            tally: Arc::default(),
            async_calls: AtomicU64::new(0),
            nowait,
            cache,
            cached: CachedCounts::default(),
        })
    }

    /// The file descriptor reads go through (nowait's own; for a file
    /// opened from a descriptor, not the caller's). ValueError once closed.
    fn fileno(&self) -> PyResult<i32> {
        use std::os::fd::{AsFd, AsRawFd};
        Ok(self.file()?.as_fd().as_raw_fd())
    }

    /// The descriptor this file was opened from (`nowait.open(fd)`), or
    /// None for a file opened by path.
    #[getter]
    fn _from_fd(&self) -> Option<i32> {
        self.fd
    }

    /// The page-cache-first mode of aread_at: "adaptive", "always" or "off".
    #[getter]
    fn nowait(&self) -> &'static str {
        self.nowait.as_str()
    }

    /// What buffered reads leave in the page cache: "keep", "drop" or
    /// "adaptive".
    #[getter]
    fn cache(&self) -> &'static str {
        self.cache.as_str()
    }

    /// _read_cached(offset, size) -> bytes | None
    ///
    /// `aread_at`'s first try: the read from the page cache alone,
    /// `preadv2(RWF_NOWAIT)` on this thread (`nowait::File::try_read_cached`,
    /// the engine's per-file adaptive policy). The bytes if every one asked
    /// (or up to end of file) was cached; None means "take the ring": a
    /// miss, a partly cached range, end of file, a direct file, the mode or
    /// the policy says no, and also any bad argument or a closed file, so
    /// that `_Ring.start` raises exactly what it always raised.
    ///
    /// The GIL stays held: a cached 4 KiB read is ~1 µs, and giving the GIL
    /// up costs more than that (two state switches, and getting it back may
    /// wait up to the 5 ms switch interval behind another Python thread,
    /// stalling the event loop). The ring path holds it for the same copy
    /// too: io_uring copies cached reads inside the loop's submit.
    #[pyo3(name = "_read_cached")]
    fn read_cached_first(
        &self,
        py: Python<'_>,
        offset: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
    ) -> Option<Py<PyBytes>> {
        if self.nowait == nowait::NowaitMode::Off {
            return None;
        }
        let offset = u64::try_from(offset.extract::<i64>().ok()?).ok()?;
        let len = usize::try_from(size.extract::<i64>().ok()?).ok()?;
        self.cached_bytes(py, offset, len, true)
    }

    /// The path the file was opened with, or the descriptor (an int) for
    /// a file opened from one, as `open()`'s `name`.
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.fd {
            Some(fd) => Ok(fd.into_pyobject(py)?.into_any().unbind()),
            // As os.fsdecode gives it: a name that is not UTF-8 comes back
            // with surrogate escapes and opens the same file again.
            None => Ok(self
                .path
                .clone()
                .into_os_string()
                .into_pyobject(py)?
                .into_any()
                .unbind()),
        }
    }

    /// The direct mode asked for: "auto", "on" or "off".
    #[getter]
    fn mode(&self) -> &'static str {
        self.mode
    }

    /// True once close() was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// True if reads bypass the page cache (the file is open with O_DIRECT).
    #[getter]
    fn direct(&self) -> PyResult<bool> {
        Ok(self.file()?.is_direct())
    }

    /// The backend reads take here ("uring", "aio+pool", "pool", "sync").
    #[getter]
    fn backend(&self) -> PyResult<String> {
        if BACKEND.get().is_none() {
            let c = take_core().map_err(to_py)?;
            put_core(c);
        }
        Ok(BACKEND.get().map(|b| b.0.clone()).unwrap_or_default())
    }

    /// The file's size in bytes.
    #[getter]
    fn size(&self) -> PyResult<u64> {
        self.file()?.len().map_err(to_py)
    }

    /// Close the file. Reads in flight (asyncio) finish first; the file
    /// descriptor is closed when the last one is reaped. For a file opened
    /// from a descriptor with `closefd`, the caller's descriptor is closed
    /// now. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let f = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        drop(f);
        if let Some(fd) = lock(&self.close_fd).take() {
            py.import("os")?.getattr("close")?.call1((fd,))?;
        }
        Ok(())
    }

    /// read_at(offset, size, *, ioprio=0) -> bytes
    ///
    /// Read up to `size` bytes at `offset`. Fewer bytes come back only at
    /// end of file (none past it). The kernel reads into the `bytes`
    /// returned (no copy); a read longer than the rest of the file costs
    /// what it returns, not `size`. The GIL is released while the engine
    /// waits.
    ///
    /// `ioprio` (keyword only): the I/O priority of the reads that go to
    /// the kernel, as `nowait.ioprio(class, level)` makes it (0, the
    /// default: the calling thread's); a page-cache hit needs none. A
    /// priority the kernel refuses raises OSError (EINVAL for an unknown
    /// class, EPERM for the real-time class without CAP_SYS_ADMIN).
    #[pyo3(signature = (offset, size, *, ioprio = 0))]
    fn read_at(&self, py: Python<'_>, offset: i64, size: i64, ioprio: u16) -> PyResult<Py<PyAny>> {
        let offset = args::offset(offset)?;
        let size = args::check_size(size)?;
        // From the page cache first, like aread_at (the GIL held for the
        // copy, as there); a miss goes to the queue, GIL released.
        if let Some(bytes) = self.cached_bytes(py, offset, size, false) {
            return Ok(bytes.into_any());
        }
        self.run_sync(py, Call::One { offset, size }, ioprio)
    }

    /// read_many(offsets, size, *, ioprio=0) -> list[bytes]
    ///
    /// Read one record per offset: on a buffered file each is tried from
    /// the page cache first (`preadv2(RWF_NOWAIT)` on this thread, the GIL
    /// released, see `nowait=`), the rest submitted to the kernel at once;
    /// `offsets` is any iterable of ints or an integer NumPy array, `size`
    /// one int for every record or one per offset. Records are returned in
    /// the order of `offsets`, each shorter than asked only at end of file.
    /// `ioprio`: as for `read_at`.
    #[pyo3(signature = (offsets, size, *, ioprio = 0))]
    fn read_many(
        &self,
        py: Python<'_>,
        offsets: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
        ioprio: u16,
    ) -> PyResult<Py<PyAny>> {
        self.run_sync(py, Call::Many { offsets, size }, ioprio)
    }

    /// read_into(buffer, offsets, size, *, ioprio=0) -> list[int]
    ///
    /// Fill `buffer` (bytearray, memoryview, NumPy array: any writable,
    /// C-contiguous buffer) with the records read at `offsets`, back to
    /// back. `size` is one int (record i lands at byte i * size) or one
    /// size per offset (variable-length records packed: record i lands at
    /// the sum of the sizes before it). Returns the bytes read per record
    /// (fewer only at end of file; the rest of that record's slot is
    /// unspecified). The kernel writes into the buffer itself where the
    /// alignment allows; on an O_DIRECT file opened with direct="auto", an
    /// unaligned slot is read through an aligned bounce buffer. The buffer
    /// stays exported (cannot be resized) until the call returns.
    /// `ioprio`: as for `read_at`.
    #[pyo3(signature = (buffer, offsets, size, *, ioprio = 0))]
    fn read_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        offsets: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
        ioprio: u16,
    ) -> PyResult<Py<PyAny>> {
        self.run_sync(
            py,
            Call::Into {
                buffer,
                offsets,
                size,
            },
            ioprio,
        )
    }

    /// readinto(buffer, offset, *, ioprio=0) -> int
    ///
    /// Read `len(buffer)` bytes (its size in bytes) at `offset` into
    /// `buffer`, as `os.preadv` and `RawIOBase.readinto` do; returns the
    /// bytes read (fewer only at end of file). `ioprio`: as for `read_at`.
    #[pyo3(signature = (buffer, offset, *, ioprio = 0))]
    fn readinto(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        offset: i64,
        ioprio: u16,
    ) -> PyResult<Py<PyAny>> {
        let offset = args::offset(offset)?;
        self.run_sync(py, Call::IntoOne { buffer, offset }, ioprio)
    }

    /// read(*, ioprio=0) -> bytes
    ///
    /// The whole file, as it is when the call starts: read in parts of
    /// 2 MiB, many at once, into the one `bytes` returned. `ioprio`: as for
    /// `read_at`.
    #[pyo3(signature = (*, ioprio = 0))]
    fn read(&self, py: Python<'_>, ioprio: u16) -> PyResult<Py<PyAny>> {
        self.run_sync(py, Call::Whole, ioprio)
    }

    /// stats() -> dict
    ///
    /// This file's counters (calls, async_calls, reads, bytes, errors), the
    /// backend and why, whether it is open with O_DIRECT and its alignment,
    /// the filesystem and the RWF_NOWAIT nowait-path state: its hit ratio,
    /// why it is off, `aread_at`'s mode (`nowait`) and how its page-cache
    /// tries ended (`nowait_path_hits`, `_partial`, `_misses`, `_refused`,
    /// `_skipped` below the hit-ratio threshold, `_yields`: hits sent to the
    /// ring so the loop could run other tasks), for `aread_at` and
    /// `read_at`. `calls` counts the blocking calls, `async_calls` the
    /// asynchronous ones; `reads`, `bytes` and `errors` count both, an
    /// asynchronous call's when its reads are collected (also if its task
    /// was cancelled meanwhile; a page-cache hit counts as its method's
    /// other reads do).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("path", self.name(py)?)?;
        d.set_item("mode", self.mode)?;
        d.set_item("closed", self.closed())?;
        let hit = &self.cached;
        d.set_item(
            "calls",
            self.calls.load(Relaxed) + hit.read_at.load(Relaxed),
        )?;
        d.set_item(
            "async_calls",
            self.async_calls.load(Relaxed) + hit.aread_at.load(Relaxed),
        )?;
        d.set_item("reads", self.tally.reads.load(Relaxed) + hit.hits())?;
        d.set_item(
            "bytes",
            self.tally.bytes.load(Relaxed) + hit.bytes.load(Relaxed),
        )?;
        d.set_item("errors", self.tally.errors.load(Relaxed))?;
        let backend = self.backend()?;
        d.set_item("backend", backend)?;
        if let Some((_, reason, detail)) = BACKEND.get() {
            d.set_item("backend_reason", reason)?;
            d.set_item("backend_detail", detail)?;
        }
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = guard.as_ref() {
            d.set_item("direct", f.is_direct())?;
            let a = f.dio_align();
            d.set_item("dio_mem_align", a.mem)?;
            d.set_item("dio_offset_align", a.offset)?;
            d.set_item("fs", f.fs())?;
            d.set_item("buffered_reason", f.buffered_reason())?;
            d.set_item("inline_reason", f.inline_reason())?;
            let fp = f.nowait_state();
            d.set_item("nowait_path_hit_ratio", fp.hit_ratio)?;
            d.set_item("nowait_path_off", fp.off.map(|o| o.to_string()))?;
            let c = f.cache_state();
            d.set_item(
                "dontcache",
                match c.dontcache {
                    nowait::DontcacheSupport::Unknown => "not asked yet".to_string(),
                    nowait::DontcacheSupport::Accepted => "accepted".to_string(),
                    nowait::DontcacheSupport::Off(off) => format!("off: {off}"),
                },
            )?;
            d.set_item("cache_scanning", c.scanning)?;
            d.set_item("cache_switches", c.switches)?;
        } else {
            // Closed: the same keys, with nothing to say.
            for k in [
                "direct",
                "dio_mem_align",
                "dio_offset_align",
                "fs",
                "buffered_reason",
                "inline_reason",
                "nowait_path_hit_ratio",
                "nowait_path_off",
                "dontcache",
                "cache_scanning",
                "cache_switches",
            ] {
                d.set_item(k, py.None())?;
            }
        }
        drop(guard);
        d.set_item("nowait", self.nowait.as_str())?;
        d.set_item("cache", self.cache.as_str())?;
        let c = self.tally.tries.stats();
        d.set_item(
            "nowait_path_hits",
            self.tally.hits.load(Relaxed) + hit.hits(),
        )?;
        d.set_item("nowait_path_partial", c.partial_hits)?;
        d.set_item("nowait_path_misses", c.misses)?;
        d.set_item("nowait_path_refused", c.refused)?;
        d.set_item("nowait_path_skipped", c.skipped)?;
        d.set_item("nowait_path_yields", self.cached.yields.load(Relaxed))?;
        Ok(d)
    }
}

impl PyFile {
    /// The page-cache try shared by `_read_cached` (asyncio, `budget`: at
    /// most CACHED_BUDGET hits in a row on a thread) and the blocking
    /// `read_at` (no budget: it never suspends anyway). `None`: read it the
    /// usual way.
    fn cached_bytes(
        &self,
        py: Python<'_>,
        offset: u64,
        len: usize,
        budget: bool,
    ) -> Option<Py<PyBytes>> {
        if self.nowait == nowait::NowaitMode::Off || len == 0 || len > CACHED_MAX {
            return None;
        }
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let file = guard.as_ref()?;
        if file.is_direct() {
            return None;
        }
        if budget && HITS_IN_A_ROW.get() >= CACHED_BUDGET {
            HITS_IN_A_ROW.set(0);
            CachedCounts::bump(py, &self.cached.yields, 1);
            return None;
        }
        // The result itself is what the page cache is read into (a miss
        // costs its allocation, no copy).
        let mut landing = Landing::bytes(py, len).ok()?;
        let tried = landing.fill_at(0, len, |s| {
            let t = file.try_read_cached_uninit(s, offset, self.nowait);
            (matches!(t, nowait::CacheTry::Hit(_)), t)
        })?;
        let tried = match tried {
            nowait::CacheTry::Hit(n) => Ok((landing.into_bytes(py, n).ok()?, n)),
            other => Err(other),
        };
        match tried {
            Ok((bytes, n)) => {
                // Counted as its method's other reads are (`stats()`).
                let c = &self.cached;
                if budget {
                    HITS_IN_A_ROW.set(HITS_IN_A_ROW.get() + 1);
                    CachedCounts::bump(py, &c.aread_at, 1);
                } else {
                    CachedCounts::bump(py, &c.read_at, 1);
                }
                CachedCounts::bump(py, &c.bytes, n as u64);
                Some(bytes)
            }
            Err(other) => {
                self.tally.tried(other);
                None
            }
        }
    }
}

/// The asynchronous side: one queue per asyncio event loop or trio run,
/// its completion eventfd watched by the loop. Used by
/// python/nowait/__init__.py (asyncio) and python/nowait/_trio.py.
#[pyclass(name = "_Ring", module = "nowait._nowait", frozen)]
pub struct Ring {
    core: Mutex<Core>,
    fd: i32,
    /// Last: dropped after the core and the results it held.
    _trim: TrimOnDrop,
}

#[pymethods]
impl Ring {
    /// `submit`: the queue's submission policy, "adaptive" (the default),
    /// "batch" or "paced" (see `nowait::SubmitPolicy`; the tests pin it).
    #[new]
    #[pyo3(signature = (depth = 256, submit = "adaptive"))]
    fn new(depth: usize, submit: &str) -> PyResult<Self> {
        let policy = nowait::SubmitPolicy::parse(submit).ok_or_else(|| {
            PyValueError::new_err(format!(
                "submit={submit:?} is not a policy; use \"adaptive\", \"batch\" or \"paced\""
            ))
        })?;
        let core = Core::new(depth, true, policy).map_err(to_py)?;
        remember_backend(&core);
        let fd = core
            .fd()
            .ok_or_else(|| PyValueError::new_err("internal: the ring has no completion fd"))?;
        Ok(Ring {
            core: Mutex::new(core),
            fd,
            _trim: TrimOnDrop,
        })
    }

    /// The eventfd to watch for readability.
    fn fileno(&self) -> i32 {
        self.fd
    }

    /// Reads started and not yet reaped.
    fn outstanding(&self) -> usize {
        lock(&self.core).outstanding()
    }

    /// The queue's counters.
    fn queue_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = lock(&self.core).queue_stats();
        let d = PyDict::new(py);
        d.set_item("pushed", s.pushed)?;
        d.set_item("completed", s.completed)?;
        d.set_item("errors", s.errors)?;
        d.set_item("bounced", s.bounced)?;
        d.set_item("syscalls", s.backend.syscalls)?;
        d.set_item("inline", s.inline)?;
        d.set_item("paced_submits", s.backend.paced_submits)?;
        Ok(d)
    }

    /// The most reads one submit hands to the kernel per system call right
    /// now (`nowait::Queue::submit_chunk`): 2 while paced, else a huge number.
    fn submit_chunk(&self) -> usize {
        lock(&self.core).submit_chunk()
    }

    /// Start a call; returns its id and whether reads it pushed wait for
    /// `submit`. `kind` is "one", "many", "into", "intoone" (readinto: the
    /// offset in `offsets`) or "whole" (read); `ioprio` the I/O priority of
    /// its reads.
    #[pyo3(signature = (file, kind, offsets, size, buffer = None, ioprio = 0))]
    fn start(
        &self,
        file: &Bound<'_, PyFile>,
        kind: &str,
        offsets: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
        buffer: Option<&Bound<'_, PyAny>>,
        ioprio: u16,
    ) -> PyResult<(u64, bool)> {
        let pf = file.get();
        // This thread's task suspends for this read: the loop runs the others.
        HITS_IN_A_ROW.set(0);
        let f = pf.file()?;
        let buffer = || buffer.ok_or_else(|| PyTypeError::new_err("internal: no buffer"));
        let call = match kind {
            "one" => Call::One {
                offset: args::offset(offsets.extract()?)?,
                size: args::check_size(size.extract()?)?,
            },
            "many" => Call::Many { offsets, size },
            "into" => Call::Into {
                buffer: buffer()?,
                offsets,
                size,
            },
            "intoone" => Call::IntoOne {
                buffer: buffer()?,
                offset: args::offset(offsets.extract()?)?,
            },
            "whole" => Call::Whole,
            other => return Err(PyValueError::new_err(format!("internal: kind {other:?}"))),
        };
        let Plan { kind, reqs, shared } = args::plan(file.py(), &f, call)?;
        let src = Source {
            file: f,
            tally: pf.tally.clone(),
            cached_first: None,
            ioprio,
        };
        let op = Op::new(file.py(), src, kind, reqs, shared)?;
        pf.async_calls.fetch_add(1, Relaxed);
        let mut core = lock(&self.core);
        let id = core.start(op);
        // Nothing waits here; the eventfd says when the reads are done.
        // While the queue batches (cached reads), pushed and not submitted:
        // the loop calls `submit` at the end of the iteration, so the reads
        // of every task that ran in it share one system call. While it
        // paces (reads wait on the device), submitted as soon as a system
        // call's worth is queued: waiting for the end of the iteration
        // would save no system call and keep the device idle meanwhile.
        let fed = core.feed_chunked();
        if core.has_done() {
            // An op can finish inside `feed` without the kernel (every part
            // refused, zero records): wake the loop for it.
            core.signal();
        }
        let queued = fed.map_err(to_py)?;
        Ok((id, queued))
    }

    /// Wait, without the GIL, until the kernel is done with every read of
    /// this ring, giving up on their results: for a ring whose loop is
    /// closed, before it is dropped (dropping it waits the same way, with
    /// the GIL held, which would stop every Python thread meanwhile).
    fn settle(&self, py: Python<'_>) {
        py.detach(|| {
            // A failed reap leaves the buffers to `Drop`, which keeps them.
            let _ = lock(&self.core).settle();
        });
    }

    /// Submit the reads pushed by `start` since the last submit.
    fn submit(&self) -> PyResult<()> {
        let mut core = lock(&self.core);
        let r = core.feed();
        if core.has_done() {
            core.signal();
        }
        r.map_err(to_py)
    }

    /// Clear the eventfd, reap what is done, and return the finished calls
    /// as (id, ok, result-or-exception).
    fn poll(&self, py: Python<'_>) -> PyResult<Vec<(u64, bool, Py<PyAny>)>> {
        let mut core = lock(&self.core);
        core.clear_fd();
        while core.reap(0, None).map_err(to_py)? > 0 {}
        let mut v = Vec::new();
        for (id, op) in core.take_done() {
            // The call was counted in `async_calls` when it started.
            op.tally.add(&op);
            match finish(py, op) {
                Ok(r) => v.push((id, true, r)),
                Err(e) => v.push((id, false, e.into_value(py).into_any())),
            }
        }
        Ok(v)
    }
}

/// `nowait.probe(path=None) -> dict`: what `nowait probe [PATH]` prints.
#[pyfunction]
#[pyo3(signature = (path = None))]
fn probe<'py>(py: Python<'py>, path: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let path = path.map(fs_path).transpose()?;
    probe_dict::probe(py, path)
}

/// A path as Python's `open` takes it: `str`, `bytes` or an
/// `os.PathLike` of either (`os.fspath`), bytes kept as they are. A NUL
/// byte is a `ValueError`, as in `open`, not an error from the system.
fn fs_path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let py = obj.py();
    let p = py.import("os")?.getattr("fspath")?.call1((obj,))?;
    let path = if let Ok(b) = p.cast::<pyo3::types::PyBytes>() {
        PathBuf::from(std::ffi::OsStr::from_bytes(b.as_bytes()))
    } else {
        p.extract::<PathBuf>()?
    };
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(PyValueError::new_err(format!(
            "path {:?} contains a NUL byte, which no file name can hold",
            path
        )));
    }
    Ok(path)
}

/// Each path's bytes, in order: `read_files` below, without the GIL while
/// the files are read. An item that fails is its exception (`"return"`),
/// or the first failure in order is raised (`"raise"`).
#[pyfunction]
#[pyo3(signature = (paths, *, on_error = "return", max_file_size = None, budget_bytes = None))]
fn read_files<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    on_error: &str,
    max_file_size: Option<u64>,
    budget_bytes: Option<usize>,
) -> PyResult<Vec<Py<PyAny>>> {
    let raise = match on_error {
        "return" => false,
        "raise" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "on_error={other:?} is not a choice; pass on_error=\"return\" (each failure \
                 in its place) or on_error=\"raise\" (the first failure raised)"
            )))
        }
    };
    let list: Vec<PathBuf> = paths
        .try_iter()?
        .map(|p| fs_path(&p?))
        .collect::<PyResult<_>>()?;
    let mut b = nowait::paths::PathReader::builder();
    if let Some(m) = max_file_size {
        b = b.max_file_size(m);
    }
    if let Some(bb) = budget_bytes {
        b = b.budget_bytes(bb);
    }
    let reader = b.build().map_err(errors::to_py)?;
    let got = py.detach(|| reader.read_files(&list));
    let mut out = Vec::with_capacity(got.len());
    for r in got {
        match r {
            Ok(v) => out.push(pyo3::types::PyBytes::new(py, &v).into_any().unbind()),
            Err(e) if raise => return Err(errors::to_py(e)),
            Err(e) => out.push(errors::to_py(e).into_value(py).into_any()),
        }
    }
    Ok(out)
}

/// `nowait.ioprio(cls, level) -> int`: the `ioprio=` value of I/O priority
/// class `cls` (`IOPRIO_CLASS_RT`, `_BE`, `_IDLE`) and `level` (0, the
/// highest, to 7), as `ioprio_set(2)` and fio's `prioclass`/`prio` spell
/// them. The kernel judges the value when a read reaches it.
#[pyfunction]
fn ioprio(cls: u16, level: u16) -> PyResult<u16> {
    if cls > 7 || level > 0x1fff {
        return Err(PyValueError::new_err(format!(
            "ioprio({cls}, {level}): the class is 3 bits (use IOPRIO_CLASS_RT, IOPRIO_CLASS_BE \
             or IOPRIO_CLASS_IDLE) and the level 13 bits (0, the highest, to 7)"
        )));
    }
    Ok(nowait::ioprio(cls, level))
}

#[pymodule]
fn _nowait(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFile>()?;
    m.add_function(wrap_pyfunction!(ioprio, m)?)?;
    m.add("IOPRIO_CLASS_RT", nowait::IOPRIO_CLASS_RT)?;
    m.add("IOPRIO_CLASS_BE", nowait::IOPRIO_CLASS_BE)?;
    m.add("IOPRIO_CLASS_IDLE", nowait::IOPRIO_CLASS_IDLE)?;
    m.add_class::<Ring>()?;
    m.add_function(wrap_pyfunction!(probe, m)?)?;
    m.add_function(wrap_pyfunction!(read_files, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_samples, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
