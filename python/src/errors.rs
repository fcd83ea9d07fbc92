//! nowait's errors as Python exceptions, derived from the library's one
//! error model: the errno is `nowait::Error::errno`, the number the C API
//! returns and Rust's `io::Error` carries, and the class follows from the
//! error's kind:
//!
//! - a request nowait refused itself because the call cannot take it
//!   (kind `InvalidInput`, errno EINVAL: a misaligned read on a
//!   `direct="on"` file, a read over the per-request limit, a setting out
//!   of range) is a `ValueError`, as Python's own functions raise for an
//!   argument value they cannot take; it carries `errno` too;
//! - end of file inside an exact read is an `EOFError` (`errno` ENODATA);
//! - everything else, the kernel's answers included, is
//!   `OSError(errno, message, filename)`, which Python turns into the
//!   subclass for the errno (`FileNotFoundError`, `PermissionError`,
//!   `IsADirectoryError`, `BrokenPipeError`, …).
//!
//! The message is the library's, with the settings it names spelled as
//! this package takes them (`direct="auto"`): rendered from the error
//! ([`PyWords`]), never rewritten.

use std::borrow::Cow;
use std::fmt;
use std::io;

use nowait::{BackendChoice, Direct, Setting, Vocabulary};
use pyo3::exceptions::{PyEOFError, PyOSError, PyValueError};
use pyo3::prelude::*;

/// The library's messages in this package's words: `nowait.open`'s
/// `direct=` values and the ring's `depth=`; the package offers no choice
/// of backend, so a message names none.
pub struct PyWords;

impl Vocabulary for PyWords {
    fn setting(&self, setting: Setting) -> Cow<'static, str> {
        match setting {
            Setting::Depth => "depth".into(),
            other => nowait::PlainWords.setting(other),
        }
    }

    fn assigned(&self, setting: Setting, value: &dyn fmt::Display) -> String {
        match setting {
            Setting::Depth => format!("depth={value}"),
            other => nowait::PlainWords.assigned(other, value),
        }
    }

    fn direct(&self, mode: Direct) -> Option<Cow<'static, str>> {
        Some(
            match mode {
                Direct::Off => "direct=\"off\"",
                Direct::On => "direct=\"on\"",
                Direct::Auto => "direct=\"auto\"",
            }
            .into(),
        )
    }

    fn backend(&self, _: BackendChoice) -> Option<Cow<'static, str>> {
        None
    }
}

/// The Python class an error becomes (see the module's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyClass {
    /// `ValueError` with `errno`.
    Value,
    /// `EOFError` with `errno`.
    Eof,
    /// `OSError(errno, message[, filename])`, a subclass by errno.
    Os,
}

/// Which class an error becomes.
pub fn class_of(e: &nowait::Error) -> PyClass {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => PyClass::Eof,
        io::ErrorKind::InvalidInput if e.kernel_answer().is_none() => PyClass::Value,
        _ => PyClass::Os,
    }
}

/// The Python exception for a nowait error.
pub fn to_py(e: nowait::Error) -> PyErr {
    let errno = e.errno();
    let mut msg = e.message(&PyWords).to_string();
    if let nowait::Error::QueueFull { .. } = e {
        msg.push_str(
            " (nowait's Python binding keeps its own backlog, so this is a bug: please report it)",
        );
    }
    match class_of(&e) {
        PyClass::Os => match e.path() {
            // The name as given (as os.fsdecode makes it: a name that is not
            // UTF-8 keeps surrogate escapes and opens the same file again).
            Some(p) => PyOSError::new_err((errno, msg, p.as_os_str().to_os_string())),
            None => PyOSError::new_err((errno, msg)),
        },
        PyClass::Value => with_errno(PyValueError::new_err(msg), errno),
        PyClass::Eof => with_errno(PyEOFError::new_err(msg), errno),
    }
}

/// `err` with an `errno` attribute, as an OSError has.
fn with_errno(err: PyErr, errno: i32) -> PyErr {
    Python::attach(|py| {
        // Setting an attribute on a fresh exception instance cannot fail
        // short of memory; the exception is raised either way.
        let _ = err.value(py).setattr("errno", errno);
        err
    })
}

/// For the test suite (`tests/test_errors.py`): one error of every kind
/// the library has, each as this module raises it: `(variant, errno the
/// library decided, exception)`.
#[pyfunction(name = "_error_samples")]
pub fn error_samples(py: Python<'_>) -> Vec<(&'static str, i32, Py<PyAny>)> {
    nowait::error_samples()
        .into_iter()
        .map(|(name, e)| {
            let errno = e.errno();
            (name, errno, to_py(e).into_value(py).into_any())
        })
        .collect()
}
