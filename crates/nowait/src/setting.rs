//! The settings a caller chooses: a file's direct mode, a queue's backend,
//! and the names of the numeric settings an error can point at. They sit
//! below every other layer so that errors ([`Error`](crate::Error)) can
//! name the choice at fault and the ones to try instead, and each front end
//! can spell them its own way ([`Vocabulary`](crate::Vocabulary)).

use std::fmt;
use std::str::FromStr;

/// Whether reads bypass the page cache with `O_DIRECT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direct {
    /// Buffered reads through the page cache.
    #[default]
    Off,
    /// `O_DIRECT`, strictly: opening fails where the filesystem refuses it,
    /// and an unaligned read is refused with [`Error::Misaligned`](crate::Error::Misaligned).
    On,
    /// `O_DIRECT` where the filesystem allows it, buffered otherwise; an
    /// unaligned read is bounced through an aligned buffer covering its range.
    Auto,
}

/// The backends nowait can use. Names are spelled the same in modules,
/// flags and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// io_uring: async buffered and direct reads without a thread per I/O.
    Uring,
    /// Linux native AIO (`io_submit`), asynchronous for `O_DIRECT` files.
    Aio,
    /// `aio` and `pool` in one queue: reads of `O_DIRECT` files go to native
    /// AIO, reads of buffered files to the pool (where native AIO would
    /// block inside `io_submit`). The ladder's step below `uring`. Not in
    /// [`BackendKind::ALL`], which lists the single backends.
    AioPool,
    /// A pool of worker threads doing `pread(2)`, with the `RWF_NOWAIT`
    /// nowait path for cached buffered reads.
    Pool,
    /// A plain `pread(2)` loop on the calling thread: the baseline.
    Sync,
}

impl BackendKind {
    /// Every single backend, in the order the engine prefers them
    /// ([`BackendKind::AioPool`] pairs two of them and is not listed).
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Uring,
        BackendKind::Aio,
        BackendKind::Pool,
        BackendKind::Sync,
    ];

    /// The backend's name as used in flags and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Uring => "uring",
            BackendKind::Aio => "aio",
            BackendKind::AioPool => "aio+pool",
            BackendKind::Pool => "pool",
            BackendKind::Sync => "sync",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BackendKind {
    type Err = String;

    /// Accepts nowait's names and fio's (`io_uring`, `psync`, `sync`, `pvsync`),
    /// and `threads` for the pool.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "uring" | "io_uring" => Ok(BackendKind::Uring),
            "aio" | "libaio" => Ok(BackendKind::Aio),
            "aio+pool" => Ok(BackendKind::AioPool),
            "pool" | "threads" => Ok(BackendKind::Pool),
            "sync" | "psync" | "pvsync" | "pread" => Ok(BackendKind::Sync),
            _ => Err(format!(
                "unknown backend '{s}': expected one of uring (io_uring), aio (libaio), pool (threads), sync (psync), \
                 aio+pool (O_DIRECT files on aio, buffered files on pool)"
            )),
        }
    }
}

/// Which backend a queue should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The fastest this machine offers, falling back down the ladder
    /// (uring → aio+pool → pool → sync, the last only if threads cannot be
    /// started) with the reason recorded.
    #[default]
    Auto,
    /// Exactly this backend, or an error saying why it is unavailable.
    Exactly(BackendKind),
}

/// A numeric setting an error names as the one at fault. The library's
/// messages call it by the words in its docs; a front end may spell it its
/// own way ([`Vocabulary::setting`](crate::Vocabulary::setting)): a C
/// option field, a Python keyword, a CLI flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// "queue depth": the reads a queue holds in flight at most.
    Depth,
    /// "pool worker count": the `pool` backend's worker threads.
    PoolWorkers,
    /// "fixed buffers": the buffers a queue registers with io_uring.
    FixedBuffers,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip_and_fio_aliases_parse() {
        for k in BackendKind::ALL.into_iter().chain([BackendKind::AioPool]) {
            assert_eq!(k.as_str().parse::<BackendKind>().unwrap(), k);
        }
        assert_eq!(
            "io_uring".parse::<BackendKind>().unwrap(),
            BackendKind::Uring
        );
        assert_eq!("psync".parse::<BackendKind>().unwrap(), BackendKind::Sync);
        let e = "posixaio".parse::<BackendKind>().unwrap_err();
        assert!(e.contains("posixaio") && e.contains("uring"), "{e}");
    }
}
