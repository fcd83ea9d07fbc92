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

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

mod calls;
mod errors;
mod export;
mod probe_dict;

use crate::calls::{Core, Kind, Op, Tally, MAX_PARTS};
use crate::errors::to_py;
use crate::export::Export;

/// Slots of a pooled core used by the blocking calls.
const SYNC_DEPTH: usize = 64;
/// Idle cores kept for reuse.
const POOL_MAX: usize = 64;

/// Longest `aread_at` tried from the page cache first (`File._read_cached`);
/// longer ones take the ring. Bounds the per-thread scratch buffer, and
/// past a few hundred KiB the copy, not the ring's ~10 µs, is the cost.
const CACHED_MAX: usize = 1 << 20;
/// Cached hits in a row on one thread before one goes through the ring
/// anyway (tokio's per-task budget is 128 too): a task reading only cached
/// data awaits nothing that suspends, so without this it would keep the
/// event loop from every other task until it stopped reading.
const CACHED_BUDGET: u32 = 128;

thread_local! {
    /// Where `_read_cached` reads before copying into a `bytes`: reused, so
    /// a miss costs no allocation.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
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

fn parse_direct(direct: &Bound<'_, PyAny>) -> PyResult<nowait::Direct> {
    if let Ok(b) = direct.cast::<pyo3::types::PyBool>() {
        return Ok(if b.is_true() {
            nowait::Direct::On
        } else {
            nowait::Direct::Off
        });
    }
    let s: String = direct.extract().map_err(|_| {
        PyTypeError::new_err("direct must be \"auto\", \"on\" or \"off\" (or a bool)")
    })?;
    match s.as_str() {
        "auto" => Ok(nowait::Direct::Auto),
        "on" => Ok(nowait::Direct::On),
        "off" => Ok(nowait::Direct::Off),
        other => Err(PyValueError::new_err(format!(
            "direct={other:?} is not a mode; use \"auto\" (O_DIRECT where the filesystem allows \
             it, unaligned reads bounced), \"on\" (O_DIRECT or an error) or \"off\" (page cache)"
        ))),
    }
}

fn parse_nowait(mode: &str) -> PyResult<nowait::NowaitMode> {
    match mode {
        "adaptive" => Ok(nowait::NowaitMode::Adaptive),
        "always" => Ok(nowait::NowaitMode::Always),
        "off" => Ok(nowait::NowaitMode::Off),
        other => Err(PyValueError::new_err(format!(
            "nowait={other:?} is not a mode; use \"adaptive\" (aread_at tries the page cache \
             first while the file mostly hits), \"always\" or \"off\" (every aread_at goes \
             through the ring)"
        ))),
    }
}

fn parse_offsets(offsets: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if offsets.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err(
            "offsets must be a sequence of ints (for one read use read_at)",
        ));
    }
    let v: Vec<i64> = offsets.extract().map_err(|e: PyErr| {
        let py = offsets.py();
        // An int too large for a file offset is an OverflowError, as for
        // read_at and os.pread; anything else is the wrong type.
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) {
            pyo3::exceptions::PyOverflowError::new_err(format!(
                "an offset is out of range: file offsets are 0 to 2**63 - 1 ({e})"
            ))
        } else {
            PyTypeError::new_err(format!("offsets must be a sequence of ints: {e}"))
        }
    })?;
    if v.len() > MAX_PARTS {
        return Err(PyValueError::new_err(format!(
            "{} offsets in one call; at most {MAX_PARTS} per call, split the batch",
            v.len()
        )));
    }
    v.into_iter()
        .map(|o| {
            u64::try_from(o).map_err(|_| {
                PyValueError::new_err(format!("offset {o} is negative; offsets count from 0"))
            })
        })
        .collect()
}

fn check_size(s: i64) -> PyResult<usize> {
    let len = usize::try_from(s).map_err(|_| {
        PyValueError::new_err(format!("size {s} is negative; ask for 0 or more bytes"))
    })?;
    if len > nowait::MAX_READ {
        // Refused here, before a buffer of that size is allocated.
        return Err(to_py(nowait::Error::TooLarge {
            len,
            max: nowait::MAX_READ,
        }));
    }
    Ok(len)
}

fn parse_sizes(size: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<usize>> {
    if size.is_instance_of::<pyo3::types::PyInt>() {
        // Too large for a read is an OverflowError here, as for read_at.
        let s = check_size(size.extract::<i64>()?)?;
        return Ok(vec![s; n]);
    }
    let v: Vec<i64> = size.extract().map_err(|_| {
        PyTypeError::new_err("size must be an int or a sequence of ints, one per offset")
    })?;
    if v.len() != n {
        return Err(PyValueError::new_err(format!(
            "{} sizes for {n} offsets; pass one size per offset, or a single int",
            v.len()
        )));
    }
    v.into_iter().map(check_size).collect()
}

/// A caller's buffer and where each record lands in it.
fn into_plan(buffer: &Bound<'_, PyAny>, n: usize, size: usize) -> PyResult<(Export, Vec<usize>)> {
    let export = Export::writable(buffer)?;
    let need = n.checked_mul(size).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{n} records of {size} bytes overflow the address space"
        ))
    })?;
    if export.len() < need {
        return Err(PyValueError::new_err(format!(
            "the buffer holds {} bytes but {n} records of {size} bytes need {need}; \
             pass a buffer of at least {need} bytes",
            export.len()
        )));
    }
    Ok((export, (0..n).map(|i| i * size).collect()))
}

/// An open file, for reading. Create with `nowait.open(path, direct="auto")`.
///
/// Blocking methods release the GIL while the engine waits; several threads
/// may use one File at once.
#[pyclass(name = "File", module = "nowait._nowait", subclass, frozen)]
pub struct PyFile {
    inner: RwLock<Option<Arc<nowait::File>>>,
    path: PathBuf,
    mode: &'static str,
    calls: AtomicU64,
    /// Reads, bytes and errors, also added by asynchronous calls when
    /// their ring collects them.
    tally: Arc<Tally>,
    async_calls: AtomicU64,
    /// `aread_at`'s page-cache-first mode (`nowait.open(..., nowait=)`).
    nowait: nowait::NowaitMode,
    cached: CachedCounts,
}

/// How the page-cache-first tries of `aread_at` and `read_at` ended
/// (`File.stats()`).
#[derive(Default)]
struct CachedCounts {
    tries: nowait::CacheTryCounts,
    /// Hits sent to the ring to let the loop run ([`CACHED_BUDGET`]).
    yields: AtomicU64,
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

    /// Run one call on a pooled core with the GIL released.
    fn run_sync(
        &self,
        py: Python<'_>,
        kind: Kind,
        reqs: Vec<(u64, usize)>,
        export: Option<(Export, Vec<usize>)>,
    ) -> PyResult<Py<PyAny>> {
        let file = self.file()?;
        let mut core = take_core().map_err(to_py)?;
        let id = core.start(file, self.tally.clone(), kind, &reqs, export);
        let waited = py.detach(|| core.wait(id));
        if let Err(e) = waited {
            // The op stays with the core until the kernel is done with it.
            put_core(core);
            self.tally.errors.fetch_add(1, Relaxed);
            return Err(to_py(e));
        }
        let mut result = Err(PyValueError::new_err("internal: the call did not finish"));
        for (done_id, op) in core.take_done() {
            if done_id == id {
                self.account(&op);
                result = finish(py, &mut core, op);
            }
            // Any other finished op was orphaned by an earlier error: drop it.
        }
        put_core(core);
        result
    }
}

/// Turn a finished op into its Python result (and recycle its buffers).
fn finish(py: Python<'_>, core: &mut Core, mut op: Op) -> PyResult<Py<PyAny>> {
    if let Some((_, e)) = op.error.take() {
        for b in op.bufs.drain(..).flatten() {
            core.recycle(b);
        }
        return Err(to_py(e));
    }
    let r = match op.kind {
        Kind::One => {
            let b = op.bufs.first_mut().and_then(Option::take);
            let n = op.counts.first().copied().unwrap_or(0);
            let bytes = match &b {
                Some(b) => PyBytes::new(py, &b.as_slice()[..n.min(b.len())]),
                None => PyBytes::new(py, &[]),
            };
            if let Some(b) = b {
                core.recycle(b);
            }
            bytes.into_any().unbind()
        }
        Kind::Many => {
            let list = PyList::empty(py);
            for (i, b) in op.bufs.drain(..).enumerate() {
                let n = op.counts.get(i).copied().unwrap_or(0);
                match b {
                    Some(b) => {
                        list.append(PyBytes::new(py, &b.as_slice()[..n.min(b.len())]))?;
                        core.recycle(b);
                    }
                    None => list.append(PyBytes::new(py, &[]))?,
                }
            }
            list.into_any().unbind()
        }
        Kind::Into => PyList::new(py, &op.counts)?.into_any().unbind(),
    };
    // The export (if any) is released here, with the GIL held.
    drop(op);
    Ok(r)
}

#[pymethods]
impl PyFile {
    #[new]
    #[pyo3(signature = (path, direct = None, nowait = None))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        direct: Option<&Bound<'_, PyAny>>,
        nowait: Option<&str>,
    ) -> PyResult<Self> {
        let path = fs_path(path)?;
        let mode = match direct {
            Some(d) => parse_direct(d)?,
            None => nowait::Direct::Auto,
        };
        let nowait = parse_nowait(nowait.unwrap_or("adaptive"))?;
        let p = path.clone();
        let file = py
            .detach(move || nowait::File::open(&p, mode))
            .map_err(to_py)?;
        Ok(PyFile {
            inner: RwLock::new(Some(Arc::new(file))),
            path,
            mode: match mode {
                nowait::Direct::On => "on",
                nowait::Direct::Off => "off",
                _ => "auto",
            },
            calls: AtomicU64::new(0),
            tally: Arc::default(),
            async_calls: AtomicU64::new(0),
            nowait,
            cached: CachedCounts::default(),
        })
    }

    /// The page-cache-first mode of aread_at: "adaptive", "always" or "off".
    #[getter]
    fn nowait(&self) -> &'static str {
        self.nowait.as_str()
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

    /// The path the file was opened with.
    #[getter]
    fn name(&self) -> std::ffi::OsString {
        // As os.fsdecode gives it: a name that is not UTF-8 comes back with
        // surrogate escapes and opens the same file again.
        self.path.clone().into_os_string()
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
    /// descriptor is closed when the last one is reaped. Idempotent.
    fn close(&self) {
        let f = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        drop(f);
    }

    /// read_at(offset, size) -> bytes
    ///
    /// Read up to `size` bytes at `offset`. Fewer bytes come back only at
    /// end of file (none past it). The GIL is released while the engine waits.
    fn read_at(&self, py: Python<'_>, offset: i64, size: i64) -> PyResult<Py<PyAny>> {
        let offset = u64::try_from(offset).map_err(|_| {
            PyValueError::new_err(format!("offset {offset} is negative; offsets count from 0"))
        })?;
        let size = check_size(size)?;
        // From the page cache first, like aread_at (the GIL held for the
        // copy, as there); a miss goes to the queue, GIL released.
        if let Some(bytes) = self.cached_bytes(py, offset, size, false) {
            return Ok(bytes.into_any());
        }
        self.run_sync(py, Kind::One, vec![(offset, size)], None)
    }

    /// read_many(offsets, size) -> list[bytes]
    ///
    /// Read one record per offset, all submitted to the kernel at once;
    /// `size` is one int for every record or a sequence, one per offset.
    /// Records are returned in the order of `offsets`, each shorter than
    /// asked only at end of file.
    fn read_many(
        &self,
        py: Python<'_>,
        offsets: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let offsets = parse_offsets(offsets)?;
        let sizes = parse_sizes(size, offsets.len())?;
        let reqs = offsets.into_iter().zip(sizes).collect();
        self.run_sync(py, Kind::Many, reqs, None)
    }

    /// read_into(buffer, offsets, size) -> list[int]
    ///
    /// Fill `buffer` (bytearray, memoryview, NumPy array: any writable,
    /// C-contiguous buffer) with `size`-byte records read at `offsets`, back
    /// to back: record i lands at byte i * size. Returns the bytes read per
    /// record (fewer only at end of file; the rest of that record's slot is
    /// unspecified). The kernel writes into the buffer itself where the
    /// alignment allows; on an O_DIRECT file opened with direct="auto", an
    /// unaligned slot is read through an aligned bounce buffer. The buffer
    /// stays exported (cannot be resized) until the call returns.
    fn read_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        offsets: &Bound<'_, PyAny>,
        size: i64,
    ) -> PyResult<Py<PyAny>> {
        let offsets = parse_offsets(offsets)?;
        let size = check_size(size)?;
        let plan = into_plan(buffer, offsets.len(), size)?;
        let reqs = offsets.into_iter().map(|o| (o, size)).collect();
        self.run_sync(py, Kind::Into, reqs, Some(plan))
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
        d.set_item("path", self.name())?;
        d.set_item("mode", self.mode)?;
        d.set_item("closed", self.closed())?;
        d.set_item("calls", self.calls.load(Relaxed))?;
        d.set_item("async_calls", self.async_calls.load(Relaxed))?;
        d.set_item("reads", self.tally.reads.load(Relaxed))?;
        d.set_item("bytes", self.tally.bytes.load(Relaxed))?;
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
        }
        drop(guard);
        d.set_item("nowait", self.nowait.as_str())?;
        let c = self.cached.tries.stats();
        d.set_item("nowait_path_hits", c.hits)?;
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
            self.cached.yields.fetch_add(1, Relaxed);
            return None;
        }
        let tried = SCRATCH.with(|s| {
            let mut s = s.try_borrow_mut().ok()?;
            if s.len() < len {
                s.resize(len, 0);
            }
            match file.try_read_cached(&mut s[..len], offset, self.nowait) {
                nowait::CacheTry::Hit(n) => Some(Ok(PyBytes::new(py, &s[..n]).unbind())),
                other => Some(Err(other)),
            }
        });
        match tried? {
            Ok(bytes) => {
                self.cached.tries.count(nowait::CacheTry::Hit(0));
                // Counted as its method's other reads are.
                if budget {
                    HITS_IN_A_ROW.set(HITS_IN_A_ROW.get() + 1);
                    self.async_calls.fetch_add(1, Relaxed);
                } else {
                    self.calls.fetch_add(1, Relaxed);
                }
                self.tally.reads.fetch_add(1, Relaxed);
                self.tally
                    .bytes
                    .fetch_add(bytes.bind(py).as_bytes().len() as u64, Relaxed);
                Some(bytes)
            }
            Err(other) => {
                self.cached.tries.count(other);
                None
            }
        }
    }
}

/// The asyncio side: one queue per event loop, its completion eventfd
/// watched by the loop. Used by python/nowait/__init__.py.
#[pyclass(name = "_Ring", module = "nowait._nowait", frozen)]
pub struct Ring {
    core: Mutex<Core>,
    fd: i32,
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
    /// `submit`. `kind` is "one", "many" or "into".
    #[pyo3(signature = (file, kind, offsets, size, buffer = None))]
    fn start(
        &self,
        file: &Bound<'_, PyFile>,
        kind: &str,
        offsets: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
        buffer: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(u64, bool)> {
        let pf = file.get();
        // This thread's task suspends for this read: the loop runs the others.
        HITS_IN_A_ROW.set(0);
        let f = pf.file()?;
        let (kind, reqs, plan) = match kind {
            "one" => {
                let o: i64 = offsets.extract()?;
                let o = u64::try_from(o).map_err(|_| {
                    PyValueError::new_err(format!("offset {o} is negative; offsets count from 0"))
                })?;
                let s = check_size(size.extract()?)?;
                (Kind::One, vec![(o, s)], None)
            }
            "many" => {
                let offs = parse_offsets(offsets)?;
                let sizes = parse_sizes(size, offs.len())?;
                (Kind::Many, offs.into_iter().zip(sizes).collect(), None)
            }
            "into" => {
                let offs = parse_offsets(offsets)?;
                let s = check_size(size.extract()?)?;
                let buffer =
                    buffer.ok_or_else(|| PyTypeError::new_err("read_into needs a buffer"))?;
                let plan = into_plan(buffer, offs.len(), s)?;
                (
                    Kind::Into,
                    offs.into_iter().map(|o| (o, s)).collect(),
                    Some(plan),
                )
            }
            other => return Err(PyValueError::new_err(format!("internal: kind {other:?}"))),
        };
        pf.async_calls.fetch_add(1, Relaxed);
        let mut core = lock(&self.core);
        let id = core.start(f, pf.tally.clone(), kind, &reqs, plan);
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
        while core.reap(0).map_err(to_py)? > 0 {}
        let mut v = Vec::new();
        for (id, op) in core.take_done() {
            // The call was counted in `async_calls` when it started.
            op.tally.add(&op);
            match finish(py, &mut core, op) {
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

#[pymodule]
fn _nowait(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFile>()?;
    m.add_class::<Ring>()?;
    m.add_function(wrap_pyfunction!(probe, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
