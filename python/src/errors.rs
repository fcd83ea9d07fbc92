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
        // The name as given (as os.fsdecode makes it: a name that is not
        // UTF-8 keeps surrogate escapes and opens the same file again).
        Some(p) => PyOSError::new_err((errno, msg, p.as_os_str().to_os_string())),
        None => PyOSError::new_err((errno, msg)),
    }
}

/// The Python exception for a nowait error.
pub fn to_py(e: nowait::Error) -> PyErr {
    use nowait::Error as E;
    let msg = pythonic(&e.to_string());
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

/// The engine's message in this package's words: its Rust names for the
/// direct modes become `nowait.open`'s arguments, command-line hints go,
/// and the "(os error N)" tail goes (the exception carries `errno`).
fn pythonic(msg: &str) -> String {
    let mut m = msg
        .replace("Direct::Off (--direct=0)", "direct=\"off\"")
        .replace("Direct::Auto", "direct=\"auto\"")
        .replace("Direct::Off", "direct=\"off\"")
        .replace("Direct::On", "direct=\"on\"")
        .replace(
            "; nowait bench lays out a missing file when given --size",
            "",
        );
    while let Some(i) = m.find(" (os error ") {
        match m[i..].find(')') {
            Some(j) => m.replace_range(i..i + j + 1, ""),
            None => break,
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::pythonic;

    #[test]
    fn messages_speak_python() {
        assert_eq!(
            pythonic("x cannot be opened with O_DIRECT (y); open it with Direct::Auto or Direct::Off (--direct=0)"),
            "x cannot be opened with O_DIRECT (y); open it with direct=\"auto\" or direct=\"off\""
        );
        assert_eq!(
            pythonic("cannot open /a: No such file or directory (os error 2); check"),
            "cannot open /a: No such file or directory; check"
        );
    }
}
