//! The engine's typed error.
//!
//! Every message says what was asked, what failed and what to do about it.
//! [`Error`] converts into [`std::io::Error`] with a matching
//! [`std::io::ErrorKind`], so callers that only speak `io::Result` lose
//! nothing but the structure.

use std::io;
use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `open(2)` failed.
    #[error("cannot open {path}: {source}{hint}", hint = open_hint(source))]
    Open {
        /// The file asked for.
        path: PathBuf,
        /// What the kernel answered.
        source: io::Error,
    },

    /// The path names a directory; only regular files and block devices are read.
    #[error("{path} is a directory; nowait reads regular files and block devices, pass a file inside it")]
    IsDirectory {
        /// The path asked for.
        path: PathBuf,
    },

    /// The path is neither a regular file nor a block device.
    #[error("{path} is a {kind}, not a regular file or block device; nowait cannot read it with positional reads")]
    Unsupported {
        /// The path asked for.
        path: PathBuf,
        /// What it is (socket, fifo, character device…).
        kind: &'static str,
    },

    /// `Direct::On` was asked for but the file cannot be opened with `O_DIRECT`.
    #[error("{path} cannot be opened with O_DIRECT ({reason}); open it with Direct::Auto or Direct::Off (--direct=0)")]
    DirectUnsupported {
        /// The file asked for.
        path: PathBuf,
        /// Why (the kernel's answer, or the filesystem's missing alignment).
        reason: String,
    },

    /// A read on a strictly direct file (`Direct::On`) breaks the O_DIRECT alignment rules.
    #[error(
        "O_DIRECT read of {len} bytes at offset {offset} on {path} is not aligned \
         (offset and length must be multiples of {offset_align}, the buffer address of {mem_align}); \
         align the request, or open the file with Direct::Auto to bounce it through an aligned buffer"
    )]
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
    #[error("read of {len} bytes does not fit the {capacity}-byte buffer it was given; pass a buffer of at least {len} bytes or read less")]
    BufferTooSmall {
        /// Length asked for.
        len: usize,
        /// The buffer's capacity.
        capacity: usize,
    },

    /// A single read larger than the kernel's per-call limit.
    #[error(
        "read of {len} bytes is larger than the {max}-byte limit of a single request; split it"
    )]
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
    #[error(
        "read of {len} bytes at offset {offset} ends past the largest file offset ({max}); offsets and lengths must fit a signed 64-bit file position",
        max = i64::MAX
    )]
    OffsetTooLarge {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: usize,
    },

    /// Every slot of the queue holds a request in flight.
    #[error("all {depth} slots of the queue are in flight; reap completions before pushing more, or build the queue deeper")]
    QueueFull {
        /// The queue depth.
        depth: usize,
    },

    /// A read failed in the kernel.
    #[error("read of {len} bytes at offset {offset} of {path} failed: {source}{hint}", hint = read_hint(source))]
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
    #[error(
        "{asked} on {path} names no valid file position: positions run from 0 to {max}, and a \
         range must start at or before its end; ask for one inside those bounds",
        max = i64::MAX
    )]
    BadPosition {
        /// The file.
        path: PathBuf,
        /// What was asked ("seek to End(-10) from position 3", "range 10..4").
        asked: String,
    },

    /// `read_exact_at` reached end of file before filling the request.
    #[error(
        "read of {len} bytes at offset {offset} of {path} reached end of file after {got} bytes"
    )]
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

    /// The backend asked for cannot be used on this machine.
    #[error("the {backend} backend is not available here: {reason}")]
    BackendUnavailable {
        /// Backend name (`uring`, `aio`, `pool`, `sync`).
        backend: &'static str,
        /// Why, with what to do.
        reason: String,
    },

    /// The kernel refused an engine-level call (ring setup, submit, wait).
    #[error("{what} failed: {source}")]
    Kernel {
        /// The call, in words (`io_uring_enter`, `io_uring_setup`…).
        what: &'static str,
        /// What the kernel answered.
        source: io::Error,
    },

    /// A setting is out of range (queue depth, worker count, …).
    #[error("{0}")]
    Config(ConfigError),

    /// A request used a file with a queue that no longer exists.
    #[error("{0}")]
    Closed(String),
}

fn open_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOENT) => {
            " (check the path; nowait bench lays out a missing file when given --size)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            " (check the file's permissions or run as a user that may read it)"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => " (raise the open-file limit: ulimit -n)",
        Some(libc::ENAMETOOLONG) => " (shorten the path)",
        _ => "",
    }
}

fn read_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EIO) => " (the device reported an error: check dmesg)",
        Some(libc::EINVAL) => {
            " (the kernel refused the request's shape: for O_DIRECT check alignment)"
        }
        Some(libc::EFAULT) => " (bad buffer address: this is a nowait bug, please report it)",
        Some(libc::ECANCELED) => " (the request was cancelled)",
        _ => "",
    }
}

impl Error {
    /// The OS error number behind this error, if there is one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Open { source, .. }
            | Error::Read { source, .. }
            | Error::Kernel { source, .. } => source.raw_os_error(),
            Error::IsDirectory { .. } => Some(libc::EISDIR),
            Error::Misaligned { .. } | Error::BadPosition { .. } => Some(libc::EINVAL),
            _ => None,
        }
    }

    fn kind(&self) -> io::ErrorKind {
        match self {
            Error::Open { source, .. }
            | Error::Read { source, .. }
            | Error::Kernel { source, .. } => source.kind(),
            Error::IsDirectory { .. } => io::ErrorKind::IsADirectory,
            Error::Unsupported { .. }
            | Error::DirectUnsupported { .. }
            | Error::BackendUnavailable { .. } => io::ErrorKind::Unsupported,
            Error::Misaligned { .. }
            | Error::BufferTooSmall { .. }
            | Error::TooLarge { .. }
            | Error::OffsetTooLarge { .. }
            | Error::BadPosition { .. } => io::ErrorKind::InvalidInput,
            Error::QueueFull { .. } => io::ErrorKind::WouldBlock,
            Error::Config(_) => io::ErrorKind::InvalidInput,
            Error::UnexpectedEof { .. } => io::ErrorKind::UnexpectedEof,
            Error::Closed(_) => io::ErrorKind::BrokenPipe,
        }
    }
}

/// Which setting is out of range, and its allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The queue depth.
    #[error("queue depth {depth} is out of range: it must be between 1 and {max}")]
    Depth {
        /// What was asked.
        depth: usize,
        /// The largest allowed ([`MAX_DEPTH`](crate::MAX_DEPTH)).
        max: usize,
    },
    /// The `pool` backend's worker count.
    #[error("pool worker count {workers} is out of range: it must be between 1 and {max}")]
    PoolWorkers {
        /// What was asked.
        workers: usize,
        /// The largest allowed.
        max: usize,
    },
    /// [`Queue::completion_fd`](crate::Queue::completion_fd) asked for
    /// with reads already in flight.
    #[error(
        "completion_fd was asked for with {in_flight} reads in flight; ask for it right after \
         building the queue, before the first push"
    )]
    CompletionFdLate {
        /// Reads in flight at the time.
        in_flight: usize,
    },
    /// The registered buffer pool.
    #[error(
        "fixed buffers: {count} of {size} bytes is out of range (1 to 65535 buffers, non-empty)"
    )]
    FixedBuffers {
        /// Buffers asked for.
        count: usize,
        /// Bytes each.
        size: usize,
    },
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misaligned_message_names_offset_len_and_alignment() {
        let e = Error::Misaligned {
            path: "/data/f".into(),
            offset: 4097,
            len: 4096,
            offset_align: 512,
            mem_align: 512,
        };
        let s = e.to_string();
        assert!(s.contains("offset 4097"), "{s}");
        assert!(s.contains("4096 bytes"), "{s}");
        assert!(s.contains("multiples of 512"), "{s}");
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn open_error_keeps_errno_and_hints() {
        let e = Error::Open {
            path: "/nope".into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        };
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        assert!(e.to_string().contains("check the path"));
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::NotFound);
    }
}
