//! nowait's typed errors as Python exceptions.
//!
//! Errors that come from the kernel become `OSError(errno, message,
//! filename)`; Python picks the subclass from the errno
//! (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`, …). The
//! message is nowait's own: what was asked, what failed, what to do.
//! Requests the caller got wrong (a misaligned read on a `direct="on"` file,
//! a read too large for one request) are `ValueError`.

use std::path::Path;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

fn os_error(errno: i32, msg: String, path: Option<&Path>) -> PyErr {
    match path {
        Some(p) => PyOSError::new_err((errno, msg, p.to_string_lossy().into_owned())),
        None => PyOSError::new_err((errno, msg)),
    }
}

/// The Python exception for a nowait error.
pub fn to_py(e: nowait::Error) -> PyErr {
    use nowait::Error as E;
    let msg = e.to_string();
    match &e {
        E::Open { path, source } | E::Read { path, source, .. } => {
            os_error(source.raw_os_error().unwrap_or(libc::EIO), msg, Some(path))
        }
        E::IsDirectory { path } => os_error(libc::EISDIR, msg, Some(path)),
        E::Unsupported { path, .. } => os_error(libc::EINVAL, msg, Some(path)),
        E::DirectUnsupported { path, .. } => os_error(libc::EINVAL, msg, Some(path)),
        E::Kernel { source, .. } => os_error(source.raw_os_error().unwrap_or(libc::EIO), msg, None),
        E::BackendUnavailable { .. } => os_error(libc::ENOSYS, msg, None),
        E::Misaligned { .. }
        | E::BufferTooSmall { .. }
        | E::TooLarge { .. }
        | E::OffsetTooLarge { .. }
        | E::Config(_) => PyValueError::new_err(msg),
        E::UnexpectedEof { .. } => pyo3::exceptions::PyEOFError::new_err(msg),
        E::Closed(_) => PyValueError::new_err(msg),
        E::QueueFull { .. } => PyRuntimeError::new_err(format!(
            "{msg} (nowait's Python binding keeps its own backlog, so this is a bug: please report it)"
        )),
        _ => match e.raw_os_error() {
            Some(errno) => os_error(errno, msg, None),
            None => PyRuntimeError::new_err(msg),
        },
    }
}
