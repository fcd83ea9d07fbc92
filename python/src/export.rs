//! The Python memory reads land in, lent to the engine: a caller's buffer
//! export (PEP 3118: a `bytearray`, `memoryview`, NumPy array…) or a
//! `bytes` object made for a result and filled in place. This file holds
//! all of the package's unsafe code.
//!
//! A [`Landing`] is the memory of one call's result (one `bytes` per
//! record, or the caller's buffer for `read_into`). It lends its memory to
//! the queue one read at a time as a [`nowait::Buf`] over it
//! ([`Landing::lend`]) and takes each back with the read's completion
//! ([`Landing::give_back`]). Two rules make the lending safe whatever the
//! caller does: a landing never lends a byte twice (each read gets a range
//! past the previous one), and a landing dropped while a read still has
//! its memory is leaked, never freed — the `bytes` keeps its reference, the
//! export stays held — so the kernel never writes into freed memory, even
//! when the Python caller has given up (a cancelled asyncio task) or the
//! queue could not tell when the kernel was done.
//!
//! A `bytes` result costs one buffer: it is allocated uninitialised at the
//! size asked (`PyBytes_FromStringAndSize(NULL, n)`), the kernel reads into
//! it, and a short read (end of file) shrinks it in place
//! (`_PyBytes_Resize`), as `os.pread` does.
//!
//! Hand-written FFI, on purpose: PyO3's `PyBuffer` and pyo3-ffi's
//! `PyObject_GetBuffer` are only offered to abi3 builds targeting 3.11+
//! (when the buffer protocol joined the limited API), and `PyBuffer<u8>`
//! checks the item format, which would refuse a float32 NumPy array. The
//! `Py_buffer` layout and the two functions below have not changed since
//! Python 3.3 and are exported by every CPython this package supports
//! (3.11 made them part of the stable ABI unchanged), so declaring them here
//! lets one abi3 wheel serve 3.10 and later. `_PyBytes_Resize` is outside
//! the limited API but exported by every CPython 3.x (`os.pread` and
//! `socket.recv` shrink their results with it); pyo3-ffi declares it only
//! for non-abi3 builds.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;

use nowait::Buf;
use pyo3::exceptions::{PyMemoryError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `Py_buffer`, as CPython lays it out (Include/pybuffer.h).
#[repr(C)]
struct PyBufferView {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: ffi::Py_ssize_t,
    itemsize: ffi::Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut ffi::Py_ssize_t,
    strides: *mut ffi::Py_ssize_t,
    suboffsets: *mut ffi::Py_ssize_t,
    internal: *mut c_void,
}

const PYBUF_WRITABLE: c_int = 0x0001;
const PYBUF_ND: c_int = 0x0008;
const PYBUF_STRIDES: c_int = 0x0010 | PYBUF_ND;
const PYBUF_C_CONTIGUOUS: c_int = 0x0020 | PYBUF_STRIDES;

extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut PyBufferView, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut PyBufferView);
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, newsize: ffi::Py_ssize_t) -> c_int;
}

/// A writable, C-contiguous buffer export, released (with the GIL) on drop.
pub struct Export {
    // Boxed so the view never moves while exported (exporters may keep
    // pointers into it in `internal`).
    view: Box<PyBufferView>,
}

// SAFETY: the export is only a claim on the exporter's memory; the memory
// does not move while it is held, and the only operation on the view
// (`PyBuffer_Release`, in `Drop`) is done with the GIL held, whichever
// thread drops it.
unsafe impl Send for Export {}

impl Export {
    /// Export `obj`'s memory for writing: it must be writable and
    /// C-contiguous (TypeError otherwise, the exporter's error as the cause).
    /// `method` names the call in the message.
    pub fn writable(obj: &Bound<'_, PyAny>, method: &str) -> PyResult<Export> {
        let mut view = Box::new(PyBufferView {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        // SAFETY: `obj` is a live object (we hold a Bound, so the GIL too) and
        // `view` points to a Py_buffer-shaped allocation the call fills in.
        let rc = unsafe {
            PyObject_GetBuffer(
                obj.as_ptr(),
                &mut *view,
                PYBUF_WRITABLE | PYBUF_C_CONTIGUOUS,
            )
        };
        // Like the standard library's `readinto` and `recv_into`: a buffer
        // that cannot take the bytes is a TypeError, whatever the exporter
        // raised (kept as the cause).
        let refused = |why: String| {
            let kind = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "object".into());
            PyTypeError::new_err(format!(
                "{method} needs a writable, C-contiguous buffer (a bytearray, a memoryview \
                 of one, a writable contiguous NumPy array); this {kind} is not: {why}"
            ))
        };
        if rc != 0 {
            let py = obj.py();
            let cause = PyErr::take(py);
            let why = cause
                .as_ref()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "it refused to export one".into());
            let err = refused(why);
            err.set_cause(py, cause);
            return Err(err);
        }
        if view.readonly != 0 || view.len < 0 || (view.buf.is_null() && view.len > 0) {
            // Release what we got before refusing.
            drop(Export { view });
            return Err(refused("it is read-only".into()));
        }
        Ok(Export { view })
    }

    /// Size of the exported memory in bytes.
    pub fn len(&self) -> usize {
        usize::try_from(self.view.len).unwrap_or(0)
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        Python::attach(|_py| {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer
            // and is released exactly once, here, with the GIL held.
            unsafe { PyBuffer_Release(&mut *self.view) }
        });
    }
}

/// What a landing's memory belongs to.
enum Target {
    /// A `bytes` made for one result; nobody else holds a reference to it
    /// until [`Landing::into_bytes`] hands it over.
    Bytes(Py<PyBytes>),
    /// The caller's buffer, held (not read) until the landing goes.
    Export { _held: Export },
    /// An aligned buffer of the engine's (an O_DIRECT file's result, which
    /// needs memory a `bytes` cannot offer), copied into a `bytes` at the
    /// end; `None` while lent.
    Owned(Option<Buf>),
}

/// The memory one call's reads land in (see the module docs).
pub struct Landing {
    /// `None` once handed over (`into_bytes`) or leaked.
    target: Option<Target>,
    base: *mut u8,
    len: usize,
    /// Bytes below this offset have been lent (each byte at most once).
    next: usize,
    /// Buffers over this memory the engine still has.
    lent: usize,
}

// SAFETY: `base` points into memory the landing keeps alive through
// `target` (a reference to the `bytes`, or the held export) and never
// frees while a buffer over it is lent; the landing itself never reads or
// writes through `base` except in `fill` (which needs `&mut self` and, by
// taking a `Python` token, the GIL). Moving it to another thread (with its
// queue) moves the owner along; `Py<PyBytes>` and `Export` are `Send`.
unsafe impl Send for Landing {}

impl Landing {
    /// A `bytes` of `len` bytes to read into, allocated without being
    /// initialised (MemoryError if it cannot be had).
    pub fn bytes(py: Python<'_>, len: usize) -> PyResult<Landing> {
        let n = ffi::Py_ssize_t::try_from(len)
            .map_err(|_| PyMemoryError::new_err(format!("a result of {len} bytes")))?;
        // SAFETY: the GIL is held (`py`); a NULL source asks CPython for
        // `len` bytes it does not fill. The call returns a new reference
        // or NULL with an exception set.
        let obj = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), n) };
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: `obj` is a new, owned reference to a bytes object.
        let bytes: Py<PyBytes> = unsafe { Py::from_owned_ptr(py, obj) };
        // SAFETY: a bytes object's storage pointer, valid for `len` bytes
        // while the object lives (and for len == 0 the empty singleton's,
        // never written: no buffer is lent over zero bytes).
        let base = unsafe { ffi::PyBytes_AsString(bytes.as_ptr()) }.cast::<u8>();
        if base.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Landing {
            target: Some(Target::Bytes(bytes)),
            base,
            len,
            next: 0,
            lent: 0,
        })
    }

    /// An aligned buffer of `len` bytes whose result is copied into a
    /// `bytes` (for O_DIRECT files: the kernel needs the memory aligned).
    pub fn owned(len: usize, align: usize) -> Landing {
        Landing {
            target: Some(Target::Owned(Some(Buf::with_align(len, align)))),
            base: std::ptr::null_mut(),
            len,
            next: 0,
            lent: 0,
        }
    }

    /// The caller's buffer.
    pub fn export(e: Export) -> Landing {
        Landing {
            base: e.view.buf.cast(),
            len: e.len(),
            target: Some(Target::Export { _held: e }),
            next: 0,
            lent: 0,
        }
    }

    /// Size of the memory in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// A buffer over bytes `at..at + len` for one read, or `None` if that
    /// range is not inside the memory or not past every range lent before.
    pub fn lend(&mut self, at: usize, len: usize) -> Option<Buf> {
        let end = at.checked_add(len)?;
        if at < self.next || end > self.len || self.target.is_none() {
            return None;
        }
        if len == 0 {
            // No memory to lend: the engine's empty buffer.
            return Some(Buf::new(0));
        }
        if let Some(Target::Owned(slot)) = &mut self.target {
            // Lent whole, once.
            let buf = slot.take().filter(|_| at == 0)?;
            self.next = end;
            self.lent += 1;
            return Some(buf);
        }
        self.next = end;
        self.lent += 1;
        // SAFETY: `at..end` lies inside the landing's memory (checked above),
        // which `target` keeps alive and in place (the bytes object is ours
        // alone; the export keeps the exporter from moving or freeing it)
        // and which is never freed while this buffer is lent (`Drop` leaks
        // it). No byte of it was lent before (`next`), the landing does not
        // touch lent memory, and the caller sees it only once the landing
        // is done (after `give_back`). The bytes hold whatever CPython's
        // allocator or the exporter left there, initialised or not, which
        // `from_raw_parts` allows: a result exposes only the bytes a read
        // wrote.
        Some(unsafe { Buf::from_raw_parts(self.base.wrapping_add(at), len) })
    }

    /// Take back a buffer from [`Landing::lend`] (with its completion, or
    /// refused at push). A buffer that is not over this memory is ignored.
    pub fn give_back(&mut self, buf: Buf) {
        if buf.capacity() == 0 {
            return;
        }
        if let Some(Target::Owned(slot)) = &mut self.target {
            if self.lent > 0 && slot.is_none() && !buf.is_foreign() {
                *slot = Some(buf);
                self.lent -= 1;
            }
            return;
        }
        let p = buf.as_slice().as_ptr() as usize;
        let base = self.base as usize;
        if self.lent > 0 && p >= base && p < base + self.len {
            self.lent -= 1;
        }
    }

    /// Fill bytes `at..at + len` here on this thread with `f` (the
    /// page-cache try), which says whether it filled them: if it did, the
    /// range counts as lent and given back (never lent again). `None` for a
    /// range [`Landing::lend`] would refuse, and for an engine buffer
    /// (O_DIRECT results are never tried).
    pub fn fill_at<R>(
        &mut self,
        at: usize,
        len: usize,
        f: impl FnOnce(&mut [MaybeUninit<u8>]) -> (bool, R),
    ) -> Option<R> {
        let end = at.checked_add(len)?;
        if at < self.next || end > self.len || len == 0 {
            return None;
        }
        if !matches!(
            self.target,
            Some(Target::Bytes(_)) | Some(Target::Export { .. })
        ) {
            return None;
        }
        // SAFETY: `at..end` lies inside the landing's memory, alive and in
        // place while `self` is borrowed (see `lend`); no buffer over it is
        // lent (it is past `next`), the bytes object is ours alone and the
        // caller's buffer is the call's to fill, so nothing else reads or
        // writes it meanwhile. Its bytes may be uninitialised (a fresh
        // bytes object's storage): they are lent as `MaybeUninit`, which
        // claims nothing about them, and `f` has only the kernel write
        // them.
        let s = unsafe {
            std::slice::from_raw_parts_mut(
                self.base.wrapping_add(at).cast::<MaybeUninit<u8>>(),
                len,
            )
        };
        let (filled, r) = f(s);
        if filled {
            self.next = end;
        }
        Some(r)
    }

    /// The `bytes` result holding the first `n` bytes (shrunk in place
    /// when `n` is less than its size). For a landing that is still lent
    /// or is the caller's buffer: an empty `bytes`.
    pub fn into_bytes(mut self, py: Python<'_>, n: usize) -> PyResult<Py<PyBytes>> {
        if self.lent > 0 {
            return Ok(PyBytes::new(py, &[]).unbind());
        }
        let bytes = match self.target.take() {
            Some(Target::Bytes(b)) => b,
            Some(Target::Owned(Some(buf))) => {
                let filled = buf.as_slice();
                return Ok(PyBytes::new(py, &filled[..n.min(filled.len())]).unbind());
            }
            other => {
                self.target = other;
                return Ok(PyBytes::new(py, &[]).unbind());
            }
        };
        if n >= self.len {
            return Ok(bytes);
        }
        let mut raw = bytes.into_ptr();
        // SAFETY: `raw` is the only reference to a bytes object that no
        // Python code has seen (what `_PyBytes_Resize` requires); on
        // success it is replaced by the (possibly moved) resized object, on
        // failure the object is released, `raw` set to NULL and MemoryError
        // raised.
        let rc = unsafe { _PyBytes_Resize(&mut raw, n as ffi::Py_ssize_t) };
        if rc != 0 || raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a successful resize leaves an owned reference in `raw`.
        Ok(unsafe { Py::from_owned_ptr(py, raw) })
    }
}

impl Drop for Landing {
    fn drop(&mut self) {
        if self.lent > 0 {
            // The engine still has a buffer over this memory (the kernel may
            // write into it): keep it for ever rather than free it.
            if let Some(t) = self.target.take() {
                std::mem::forget(t);
            }
        }
    }
}

/// Hands the C allocator's free memory back to the system when dropped:
/// the last field of an asyncio ring, so that the `bytes` results a burst
/// of reads on a loop's thread left free in glibc's heap (where live small
/// allocations above them keep the heap from shrinking, as they do after
/// a burst of `os.pread`) leave the resident set when the loop goes.
pub struct TrimOnDrop;

impl Drop for TrimOnDrop {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: `malloc_trim` has no preconditions: it takes each arena's
        // lock and releases free pages; 0 keeps no extra padding.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}
