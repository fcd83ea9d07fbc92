//! A held buffer export (PEP 3118): the memory of a `bytearray`,
//! `memoryview`, NumPy array… that a read writes into.
//!
//! Holding the export is what keeps the memory where it is: while a
//! `Py_buffer` is held, a `bytearray` refuses to resize (BufferError) and
//! NumPy refuses to reallocate, and the exporter object itself is kept
//! alive by the view's reference. An [`Export`] lives in the request until
//! its last read is reaped, so the kernel never writes into freed memory,
//! even when the Python caller has given up (a cancelled asyncio task).
//!
//! Hand-written FFI, on purpose: PyO3's `PyBuffer` and pyo3-ffi's
//! `PyObject_GetBuffer` are only offered to abi3 builds targeting 3.11+
//! (when the buffer protocol joined the limited API), and `PyBuffer<u8>`
//! checks the item format, which would refuse a float32 NumPy array. The
//! `Py_buffer` layout and the two functions below have not changed since
//! Python 3.3 and are exported by every CPython this package supports
//! (3.11 made them part of the stable ABI unchanged), so declaring them here
//! lets one abi3 wheel serve 3.9 and later.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;

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
    /// C-contiguous (TypeError/BufferError otherwise, from the exporter).
    pub fn writable(obj: &Bound<'_, PyAny>) -> PyResult<Export> {
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
                "read_into needs a writable, C-contiguous buffer (a bytearray, a memoryview \
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

    /// First byte of the exported memory.
    pub fn ptr(&self) -> *mut u8 {
        self.view.buf.cast()
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
