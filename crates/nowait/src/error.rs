//! The engine's typed error, and the one map from each error to its errno.
//!
//! Every front end reports the same errno for the same error: the C API
//! returns its negation, Python raises it as `OSError.errno` (or on the
//! `ValueError` of a request nowait refuses), and the [`io::ErrorKind`] of
//! the [`io::Error`] an [`Error`] converts into derives from it. The map is
//! [`Error::errno`], decided here once with the reason beside each case.
//!
//! What an error says is `message.rs`: the same words in every front end,
//! with the settings it names spelled the way each front end asks for them.

use std::io;
use std::path::{Path, PathBuf};

use crate::setting::BackendChoice;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can report. Its `Display` says what was asked,
/// what failed and what to do, in words that hold in every front end
/// ([`Error::message`] spells the settings it names a front end's way);
/// [`Error::errno`] is its errno in every front end.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `open(2)` failed.
    Open {
        /// The file asked for.
        path: PathBuf,
        /// What the kernel answered.
        source: io::Error,
    },

    /// The path names a directory; only regular files and block devices are read.
    IsDirectory {
        /// The path asked for.
        path: PathBuf,
    },

    /// The path is neither a regular file nor a block device (a fifo, a
    /// socket, a character device): nowait reads at file offsets.
    Unsupported {
        /// The path asked for.
        path: PathBuf,
        /// What it is (socket, fifo, character device…).
        kind: &'static str,
    },

    /// [`Direct::On`](crate::Direct::On) was asked for but the file cannot
    /// be opened with `O_DIRECT`.
    DirectUnsupported {
        /// The file asked for.
        path: PathBuf,
        /// Why (the kernel's answer, or the filesystem's missing alignment).
        reason: String,
    },

    /// A read on a strictly direct file ([`Direct::On`](crate::Direct::On))
    /// breaks the O_DIRECT alignment rules.
    Misaligned {
        /// The file read.
        path: PathBuf,
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
        /// Required offset and length alignment.
        offset_align: u32,
        /// Required buffer address alignment.
        mem_align: u32,
    },

    /// The request asks for more bytes than the buffer it carries can hold.
    BufferTooSmall {
        /// Length asked for.
        len: usize,
        /// The buffer's capacity.
        capacity: usize,
    },

    /// A single read larger than the kernel's per-call limit.
    TooLarge {
        /// Length asked for.
        len: usize,
        /// The limit.
        max: usize,
    },

    /// A read that would end past the largest file position the kernel
    /// takes (`i64::MAX`). Refused rather than sent: `preadv2(2)` and
    /// io_uring read an offset of -1 (`u64::MAX`) as "the file's current
    /// position", which would return the wrong bytes.
    OffsetTooLarge {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
    },

    /// Every slot of the queue holds a request in flight.
    QueueFull {
        /// The queue depth.
        depth: usize,
    },

    /// A read failed in the kernel.
    Read {
        /// The file read.
        path: PathBuf,
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
        /// What the kernel answered.
        source: io::Error,
    },

    /// A seek or a byte range that names no valid file position (the
    /// front ends of [`crate::fs`]).
    BadPosition {
        /// The file.
        path: PathBuf,
        /// What was asked ("seek to End(-10) from position 3", "range 10..4").
        asked: String,
    },

    /// `read_exact_at` reached end of file before filling the request.
    UnexpectedEof {
        /// The file read.
        path: PathBuf,
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
        /// Bytes before end of file.
        got: usize,
    },

    /// A whole-file read by path ([`crate::paths`]) found the file larger
    /// than the size limit it was given.
    FileTooLarge {
        /// The file read.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },

    /// The backend asked for cannot be used on this machine.
    BackendUnavailable {
        /// What was asked for: one backend, or the automatic choice (when
        /// every backend of the ladder was refused).
        backend: BackendChoice,
        /// Why, in words (the refusal of each backend tried).
        reason: String,
    },

    /// The kernel refused an engine-level call (ring setup, submit, wait).
    Kernel {
        /// The call, in words (`io_uring_enter`, `io_uring_setup`…).
        what: &'static str,
        /// What the kernel answered.
        source: io::Error,
    },

    /// A setting is out of range (queue depth, worker count, …).
    Config(ConfigError),

    /// A request used a file with a queue that no longer exists.
    Closed(String),
}

/// Which setting is out of range, and its allowed range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The queue depth.
    Depth {
        /// What was asked.
        depth: usize,
        /// The largest allowed ([`MAX_DEPTH`](crate::MAX_DEPTH)).
        max: usize,
    },
    /// The `pool` backend's worker count.
    PoolWorkers {
        /// What was asked.
        workers: usize,
        /// The largest allowed.
        max: usize,
    },
    /// [`Queue::completion_fd`](crate::Queue::completion_fd) asked for
    /// with reads already in flight.
    CompletionFdLate {
        /// Reads in flight at the time.
        in_flight: usize,
    },
    /// The registered buffer pool.
    FixedBuffers {
        /// Buffers asked for.
        count: usize,
        /// Bytes each.
        size: usize,
    },
}

impl Error {
    /// The errno this error stands for, the same in every front end: the C
    /// API returns its negation, Python raises it as `errno`, and
    /// [`Error::kind`] derives from it. Decided once per error, for the
    /// reason written beside it.
    pub fn errno(&self) -> i32 {
        match self {
            // The kernel's own answer, kept as is (ENOENT, EACCES, EIO, ...);
            // an io::Error made in user space carries none: EIO.
            Error::Open { source, .. }
            | Error::Read { source, .. }
            | Error::Kernel { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            // What read(2) of a directory answers.
            Error::IsDirectory { .. } => libc::EISDIR,
            // What pread(2) answers on a file without positions (a fifo, a
            // socket); nowait gives the same for every file it does not read
            // at offsets (character devices too). Not EINVAL, which tells the
            // caller to change the arguments: the file is what cannot be read.
            Error::Unsupported { .. } => libc::ESPIPE,
            // The filesystem has no O_DIRECT. open(2) answers EINVAL, but the
            // same request is right on another file and the way out is
            // another mode (buffered, or auto), as for a backend this
            // machine lacks: EOPNOTSUPP, operation not supported.
            Error::DirectUnsupported { .. } => libc::EOPNOTSUPP,
            // What the kernel answers for a misaligned O_DIRECT read.
            Error::Misaligned { .. } => libc::EINVAL,
            // A request of the wrong shape (the kernel answers EINVAL to a
            // length or end offset it cannot take): the caller changes it.
            Error::BufferTooSmall { .. }
            | Error::TooLarge { .. }
            | Error::OffsetTooLarge { .. } => libc::EINVAL,
            // A position before 0 or past the largest offset, or a range
            // that ends before it starts: what lseek(2) answers to the same.
            Error::BadPosition { .. } => libc::EINVAL,
            // A setting out of range, or asked for at the wrong time.
            Error::Config(_) => libc::EINVAL,
            // Every slot is in flight until completions are reaped: EBUSY,
            // as io_uring_enter(2) answers when completions must be reaped
            // before more is submitted. Not EAGAIN (io::ErrorKind::WouldBlock),
            // which says the same call may succeed if simply tried again.
            Error::QueueFull { .. } => libc::EBUSY,
            // End of file before the request was filled has no errno of its
            // own: ENODATA, "no data available"; the kind is UnexpectedEof,
            // what read_exact reports.
            Error::UnexpectedEof { .. } => libc::ENODATA,
            // What the kernel answers for a file larger than a limit
            // (RLIMIT_FSIZE, an offset past s_maxbytes): file too large.
            Error::FileTooLarge { .. } => libc::EFBIG,
            // The backend asked for cannot be set up here: EOPNOTSUPP. Not
            // ENOSYS, which the kernel reserves for a system call that does
            // not exist; a backend is refused for many reasons (seccomp, a
            // sysctl, memlock, no threads), and the message names the one.
            Error::BackendUnavailable { .. } => libc::EOPNOTSUPP,
            // The engine behind the file is gone, as the reader of a pipe.
            Error::Closed(_) => libc::EPIPE,
        }
    }

    /// The [`io::ErrorKind`] of this error, derived from [`Error::errno`]
    /// as the standard library derives a kind from an OS error, with two
    /// exceptions: EOPNOTSUPP, which std leaves uncategorised, is
    /// [`Unsupported`](io::ErrorKind::Unsupported); end of file inside
    /// `read_exact_at` is [`UnexpectedEof`](io::ErrorKind::UnexpectedEof),
    /// as for `read_exact`. A kernel answer without an errno keeps its own
    /// kind.
    pub fn kind(&self) -> io::ErrorKind {
        if let Error::UnexpectedEof { .. } = self {
            return io::ErrorKind::UnexpectedEof;
        }
        match self.kernel_answer() {
            Some(source) if source.raw_os_error().is_none() => source.kind(),
            _ => kind_of_errno(self.errno()),
        }
    }

    /// [`Error::errno`], as an `Option` like [`io::Error::raw_os_error`]:
    /// always `Some`.
    pub fn raw_os_error(&self) -> Option<i32> {
        Some(self.errno())
    }

    /// What the kernel answered, for errors that are the kernel's answer
    /// (`open`, a read, an engine-level call); `None` for what nowait
    /// refused itself before asking the kernel.
    pub fn kernel_answer(&self) -> Option<&io::Error> {
        match self {
            Error::Open { source, .. }
            | Error::Read { source, .. }
            | Error::Kernel { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The file the error is about, where there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::Open { path, .. }
            | Error::IsDirectory { path }
            | Error::Unsupported { path, .. }
            | Error::DirectUnsupported { path, .. }
            | Error::Misaligned { path, .. }
            | Error::BadPosition { path, .. }
            | Error::Read { path, .. }
            | Error::UnexpectedEof { path, .. }
            | Error::FileTooLarge { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The errno behind an [`io::Error`]: nowait's own ([`Error::errno`])
    /// when it carries an [`Error`], as every `io::Error` from nowait does,
    /// else the OS error it holds.
    pub fn errno_in(e: &io::Error) -> Option<i32> {
        match e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
            Some(ours) => Some(ours.errno()),
            None => e.raw_os_error(),
        }
    }
}

/// The kind std gives an OS error, and Unsupported for EOPNOTSUPP.
fn kind_of_errno(errno: i32) -> io::ErrorKind {
    match errno {
        libc::EOPNOTSUPP => io::ErrorKind::Unsupported,
        e => io::Error::from_raw_os_error(e).kind(),
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Config(c) => Some(c),
            e => e
                .kernel_answer()
                .map(|s| s as &(dyn std::error::Error + 'static)),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

impl From<ConfigError> for Error {
    fn from(c: ConfigError) -> Error {
        Error::Config(c)
    }
}

/// The variants, in declaration order; [`variant`] gives each error's
/// index here. A new variant needs a name here, an arm in [`variant`] and
/// an error in [`samples`] (the tests check all three).
const VARIANTS: [&str; 17] = [
    "Open",
    "IsDirectory",
    "Unsupported",
    "DirectUnsupported",
    "Misaligned",
    "BufferTooSmall",
    "TooLarge",
    "OffsetTooLarge",
    "QueueFull",
    "Read",
    "UnexpectedEof",
    "BackendUnavailable",
    "Kernel",
    "Config",
    "Closed",
    "BadPosition",
    "FileTooLarge",
];

/// The variant's name (no wildcard arm: a new variant does not compile
/// until it is named).
fn variant(e: &Error) -> &'static str {
    VARIANTS[match e {
        Error::Open { .. } => 0,
        Error::IsDirectory { .. } => 1,
        Error::Unsupported { .. } => 2,
        Error::DirectUnsupported { .. } => 3,
        Error::Misaligned { .. } => 4,
        Error::BufferTooSmall { .. } => 5,
        Error::TooLarge { .. } => 6,
        Error::OffsetTooLarge { .. } => 7,
        Error::QueueFull { .. } => 8,
        Error::Read { .. } => 9,
        Error::UnexpectedEof { .. } => 10,
        Error::BackendUnavailable { .. } => 11,
        Error::Kernel { .. } => 12,
        Error::Config(_) => 13,
        Error::Closed(_) => 14,
        Error::BadPosition { .. } => 15,
        Error::FileTooLarge { .. } => 16,
    }]
}

/// One error of every variant (and of every [`ConfigError`], and a
/// kernel answer with and without an errno), each with its variant's
/// name: what the front ends' tests walk to check that every error
/// reaches their callers with the errno [`Error::errno`] decides.
#[doc(hidden)]
pub fn samples() -> Vec<(&'static str, Error)> {
    use crate::setting::BackendKind;
    let p = || PathBuf::from("/data/sample");
    let os = io::Error::from_raw_os_error;
    let all = vec![
        Error::Open {
            path: p(),
            source: os(libc::ENOENT),
        },
        Error::Open {
            path: p(),
            source: io::Error::other("an answer without an errno"),
        },
        Error::IsDirectory { path: p() },
        Error::Unsupported {
            path: "/dev/null".into(),
            kind: "character device",
        },
        Error::DirectUnsupported {
            path: p(),
            reason: "the filesystem answered EINVAL to O_DIRECT at open".into(),
        },
        Error::Misaligned {
            path: p(),
            offset: 4097,
            len: 4096,
            offset_align: 512,
            mem_align: 512,
        },
        Error::BufferTooSmall {
            len: 8192,
            capacity: 4096,
        },
        Error::TooLarge {
            len: 1 << 40,
            max: 0x7fff_f000,
        },
        Error::OffsetTooLarge {
            offset: u64::MAX,
            len: 4096,
        },
        Error::QueueFull { depth: 4 },
        Error::Read {
            path: p(),
            offset: 0,
            len: 4096,
            source: os(libc::EIO),
        },
        Error::UnexpectedEof {
            path: p(),
            offset: 0,
            len: 4096,
            got: 100,
        },
        Error::BadPosition {
            path: p(),
            asked: "seek to End(-10) from position 3 of a 5-byte file".into(),
        },
        Error::FileTooLarge {
            path: p(),
            limit: 64 << 20,
        },
        Error::BackendUnavailable {
            backend: BackendChoice::Exactly(BackendKind::Uring),
            reason: "io_uring_setup answered EPERM: blocked by a seccomp filter".into(),
        },
        Error::BackendUnavailable {
            backend: BackendChoice::Exactly(BackendKind::Pool),
            reason: "cannot start worker threads".into(),
        },
        Error::Kernel {
            what: "io_uring_enter",
            source: os(libc::ENOMEM),
        },
        ConfigError::Depth {
            depth: 100_000,
            max: 16_384,
        }
        .into(),
        ConfigError::PoolWorkers {
            workers: 0,
            max: 1024,
        }
        .into(),
        ConfigError::CompletionFdLate { in_flight: 3 }.into(),
        ConfigError::FixedBuffers {
            count: 0,
            size: 4096,
        }
        .into(),
        Error::Closed(
            "cannot read /data/sample: the engine it was opened with has been dropped".into(),
        ),
    ];
    all.into_iter().map(|e| (variant(&e), e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The decided errno and kind of every sample: a change here is a
    /// change of the ABI (C), of the exceptions (Python) and of the kinds
    /// (Rust), so it must be made on purpose.
    #[test]
    fn every_error_has_its_decided_errno_and_kind() {
        use io::ErrorKind as K;
        // std's kind for EIO from the OS (Uncategorized, which cannot be
        // named outside std).
        let eio = io::Error::from_raw_os_error(libc::EIO).kind();
        let want: &[(&str, i32, K)] = &[
            ("Open", libc::ENOENT, K::NotFound),
            ("Open", libc::EIO, K::Other),
            ("IsDirectory", libc::EISDIR, K::IsADirectory),
            ("Unsupported", libc::ESPIPE, K::NotSeekable),
            ("DirectUnsupported", libc::EOPNOTSUPP, K::Unsupported),
            ("Misaligned", libc::EINVAL, K::InvalidInput),
            ("BufferTooSmall", libc::EINVAL, K::InvalidInput),
            ("TooLarge", libc::EINVAL, K::InvalidInput),
            ("OffsetTooLarge", libc::EINVAL, K::InvalidInput),
            ("QueueFull", libc::EBUSY, K::ResourceBusy),
            ("Read", libc::EIO, eio),
            ("UnexpectedEof", libc::ENODATA, K::UnexpectedEof),
            ("BadPosition", libc::EINVAL, K::InvalidInput),
            ("FileTooLarge", libc::EFBIG, K::FileTooLarge),
            ("BackendUnavailable", libc::EOPNOTSUPP, K::Unsupported),
            ("BackendUnavailable", libc::EOPNOTSUPP, K::Unsupported),
            ("Kernel", libc::ENOMEM, K::OutOfMemory),
            ("Config", libc::EINVAL, K::InvalidInput),
            ("Config", libc::EINVAL, K::InvalidInput),
            ("Config", libc::EINVAL, K::InvalidInput),
            ("Config", libc::EINVAL, K::InvalidInput),
            ("Closed", libc::EPIPE, K::BrokenPipe),
        ];
        let got: Vec<(&str, i32, K)> = samples()
            .iter()
            .map(|(name, e)| (*name, e.errno(), e.kind()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn samples_cover_every_variant() {
        let named: BTreeSet<&str> = samples().iter().map(|(n, _)| *n).collect();
        let all: BTreeSet<&str> = VARIANTS.into_iter().collect();
        assert_eq!(named, all, "every variant needs a sample in samples()");
    }

    /// The Rust front end: the io::Error an Error becomes has the kind
    /// derived from the errno, and the errno is found again in it.
    #[test]
    fn io_errors_carry_the_same_errno() {
        for (name, e) in samples() {
            let (errno, kind) = (e.errno(), e.kind());
            let io: io::Error = e.into();
            assert_eq!(io.kind(), kind, "{name}");
            assert_eq!(Error::errno_in(&io), Some(errno), "{name}");
            if name != "UnexpectedEof" && !(name == "Open" && errno == libc::EIO) {
                assert_eq!(kind, kind_of_errno(errno), "{name}: kind not derived");
            }
        }
        let plain = io::Error::from_raw_os_error(libc::EAGAIN);
        assert_eq!(Error::errno_in(&plain), Some(libc::EAGAIN));
    }
}
