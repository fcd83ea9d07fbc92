//! The probe's reports as one document of plain data, the shape every
//! front end renders alike: the C library's `nowait_probe` JSON and the
//! Python package's `probe()` dict are this document, serialized (serde,
//! the feature `serde`). Keys name units last (`size_bytes`,
//! `memlock_bytes`); an errno comes with its name; every case of a
//! choice has the same keys, `None` where they do not apply.

use crate::file::FileKind;
use crate::probe::{DontcacheProbe, FileReport, MachineReport, NowaitProbe, UringStatus};
use crate::sys::names::errno_name;

/// What the machine (and a file) can do, as one document.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ProbeDoc {
    /// The machine.
    pub machine: MachineDoc,
    /// The file, when one was probed.
    pub file: Option<FileDoc>,
}

impl ProbeDoc {
    /// The document of a machine report and, when one was probed, a file's.
    pub fn new(machine: &MachineReport, file: Option<&FileReport>) -> ProbeDoc {
        ProbeDoc {
            machine: MachineDoc::new(machine),
            file: file.map(FileDoc::new),
        }
    }
}

/// An errno as a number and its name (`EOPNOTSUPP`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ErrnoDoc {
    /// The errno.
    pub errno: i32,
    /// Its name.
    pub name: String,
}

impl ErrnoDoc {
    fn of(errno: i32) -> ErrnoDoc {
        ErrnoDoc {
            errno,
            name: errno_name(errno),
        }
    }
}

/// The machine: [`MachineReport`] as data.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MachineDoc {
    /// Kernel release, for the record (nothing is decided from it).
    pub kernel_release: String,
    /// Online CPUs.
    pub cpus: usize,
    /// `kernel.io_uring_disabled`, if the sysctl exists.
    pub io_uring_disabled: Option<String>,
    /// `RLIMIT_MEMLOCK` soft limit (`None`: unlimited).
    pub memlock_bytes: Option<u64>,
    /// io_uring.
    pub io_uring: UringDoc,
    /// Native AIO.
    pub aio: AioDoc,
    /// The backend a default queue takes, and why.
    pub backend: BackendDoc,
    /// Whether the kernel knows `RWF_DONTCACHE`: `known`, `unknown` or
    /// `failed (ERRNO)`.
    pub rwf_dontcache: String,
}

/// io_uring on this machine.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct UringDoc {
    /// A ring can be set up.
    pub available: bool,
    /// `IORING_OP_READ` is supported (`None`: no ring).
    pub op_read: Option<bool>,
    /// `IORING_OP_READ_FIXED` is supported (`None`: no ring).
    pub op_read_fixed: Option<bool>,
    /// Each setup flag tried, and its answer (`None`: no ring).
    pub flags: Option<Vec<SetupFlagDoc>>,
    /// Why no ring can be set up: the errno of `io_uring_setup(2)`.
    pub refused: Option<ErrnoDoc>,
    /// Why, in words, with what to do.
    pub reason: Option<String>,
}

/// One io_uring setup flag tried.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SetupFlagDoc {
    /// The flag (`SQPOLL`, `DEFER_TASKRUN`, …).
    pub flag: &'static str,
    /// A ring was set up with it.
    pub accepted: bool,
    /// The errno it was refused with.
    pub refused: Option<ErrnoDoc>,
}

/// Native AIO on this machine.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AioDoc {
    /// An AIO context can be set up.
    pub available: bool,
    /// Why not.
    pub reason: Option<String>,
}

/// The backend a default queue takes.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BackendDoc {
    /// Its name (`uring`, `aio`, `pool`, `sync`); `None`: none can be set up.
    pub kind: Option<&'static str>,
    /// Why it was chosen, or why none could be.
    pub reason: String,
    /// What was set up, in words.
    pub detail: Option<String>,
}

impl MachineDoc {
    /// The document of a machine report.
    pub fn new(m: &MachineReport) -> MachineDoc {
        let io_uring = match &m.uring {
            UringStatus::Available {
                flags,
                op_read,
                op_read_fixed,
            } => UringDoc {
                available: true,
                op_read: Some(*op_read),
                op_read_fixed: Some(*op_read_fixed),
                flags: Some(
                    flags
                        .iter()
                        .map(|p| SetupFlagDoc {
                            flag: p.flag,
                            accepted: p.result.is_ok(),
                            refused: p.result.err().map(ErrnoDoc::of),
                        })
                        .collect(),
                ),
                refused: None,
                reason: None,
            },
            UringStatus::Unavailable { errno, reason } => UringDoc {
                available: false,
                op_read: None,
                op_read_fixed: None,
                flags: None,
                refused: Some(ErrnoDoc::of(*errno)),
                reason: Some(reason.clone()),
            },
        };
        MachineDoc {
            kernel_release: m.kernel_release.clone(),
            cpus: m.cpus,
            io_uring_disabled: m.io_uring_disabled.clone(),
            memlock_bytes: m.memlock_bytes,
            io_uring,
            aio: AioDoc {
                available: m.aio.is_ok(),
                reason: m.aio.clone().err(),
            },
            backend: match &m.auto {
                Ok(r) => BackendDoc {
                    kind: Some(r.kind.as_str()),
                    reason: r.reason.to_string(),
                    detail: Some(r.detail.clone()),
                },
                Err(e) => BackendDoc {
                    kind: None,
                    reason: e.clone(),
                    detail: None,
                },
            },
            rwf_dontcache: m.dontcache.words(),
        }
    }
}

/// A file: [`FileReport`] as data.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FileDoc {
    /// The path probed.
    pub path: String,
    /// `regular` or `block_device`.
    pub kind: &'static str,
    /// Filesystem name (`ext4`, `tmpfs`, …, or `block device`).
    pub fs: &'static str,
    /// Size.
    pub size_bytes: u64,
    /// Whether direct I/O is possible, with what alignment.
    pub direct: DirectDoc,
    /// Whether the device polls (`queue/io_poll`; `None`: sysfs does not say).
    pub io_poll: Option<bool>,
    /// The backend a default queue takes.
    pub backend: &'static str,
    /// The path a buffered read takes, in words.
    pub buffered_path: String,
    /// The path a direct read takes, in words (`None`: no direct I/O).
    pub direct_path: Option<String>,
    /// What one `preadv2(RWF_NOWAIT)` of byte 0 answered.
    pub rwf_nowait: FlagDoc,
    /// The file's `RWF_NOWAIT` hit ratio so far, 0.0 to 1.0.
    pub nowait_path_hit_ratio: f64,
    /// Why the nowait path is off for the file, if it is.
    pub nowait_path_off: Option<String>,
    /// What one `preadv2(RWF_DONTCACHE)` past end of file answered.
    pub rwf_dontcache: FlagDoc,
}

/// Whether direct I/O is possible on a file.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DirectDoc {
    /// `O_DIRECT` reads are possible.
    pub possible: bool,
    /// Alignment of a buffer's address.
    pub mem_align: Option<u32>,
    /// Alignment of the offset and length.
    pub offset_align: Option<u32>,
    /// Where the alignment came from, in words.
    pub align_source: Option<&'static str>,
    /// Why direct I/O is not possible.
    pub reason: Option<String>,
}

/// What a read flag's probe read answered on a file.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FlagDoc {
    /// The flag works on the file.
    pub works: bool,
    /// Why not: `unsupported` (the filesystem refuses it),
    /// `syscall_refused` (`preadv2` itself is), `failed` (another answer).
    pub why: Option<&'static str>,
    /// The errno answered.
    pub refused: Option<ErrnoDoc>,
    /// `RWF_NOWAIT` only: whether byte 0 was in the page cache.
    pub byte0_cached: Option<bool>,
    /// The answer in words, as `nowait probe` prints it.
    pub words: String,
}

impl FlagDoc {
    fn off(why: &'static str, errno: i32, words: String) -> FlagDoc {
        FlagDoc {
            works: false,
            why: Some(why),
            refused: Some(ErrnoDoc::of(errno)),
            byte0_cached: None,
            words,
        }
    }
}

impl FileDoc {
    /// The document of a file report.
    pub fn new(r: &FileReport) -> FileDoc {
        let nowait_words = r.nowait_words();
        let rwf_nowait = match r.rwf_nowait {
            NowaitProbe::Supported { cached } => FlagDoc {
                works: true,
                why: None,
                refused: None,
                byte0_cached: Some(cached),
                words: nowait_words,
            },
            NowaitProbe::Unsupported { errno } => FlagDoc::off("unsupported", errno, nowait_words),
            NowaitProbe::SyscallRefused { errno } => {
                FlagDoc::off("syscall_refused", errno, nowait_words)
            }
            NowaitProbe::Failed { errno } => FlagDoc::off("failed", errno, nowait_words),
        };
        let dontcache_words = r.rwf_dontcache.words(r.fs);
        let rwf_dontcache = match r.rwf_dontcache {
            DontcacheProbe::Supported => FlagDoc {
                works: true,
                why: None,
                refused: None,
                byte0_cached: None,
                words: dontcache_words,
            },
            DontcacheProbe::Unsupported { errno } => {
                FlagDoc::off("unsupported", errno, dontcache_words)
            }
            DontcacheProbe::SyscallRefused { errno } => {
                FlagDoc::off("syscall_refused", errno, dontcache_words)
            }
        };
        FileDoc {
            path: r.path.to_string_lossy().into_owned(),
            kind: match r.kind {
                FileKind::Regular => "regular",
                FileKind::BlockDevice => "block_device",
            },
            fs: r.fs,
            size_bytes: r.size,
            direct: match &r.direct {
                Ok(a) => DirectDoc {
                    possible: true,
                    mem_align: Some(a.mem),
                    offset_align: Some(a.offset),
                    align_source: Some(a.source.as_str()),
                    reason: None,
                },
                Err(why) => DirectDoc {
                    possible: false,
                    mem_align: None,
                    offset_align: None,
                    align_source: None,
                    reason: Some(why.clone()),
                },
            },
            io_poll: r.io_poll,
            backend: r.backend.as_str(),
            buffered_path: r.buffered_path.clone(),
            direct_path: r.direct_path.clone(),
            rwf_nowait,
            nowait_path_hit_ratio: r.nowait_state.hit_ratio,
            nowait_path_off: r.nowait_state.off.map(|o| o.to_string()),
            rwf_dontcache,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_on_tmpfs_reads_as_refusing_both_flags() {
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("SKIP a_file_on_tmpfs_reads_as_refusing_both_flags: no /dev/shm");
            return;
        };
        let path = dir.path().join("f");
        crate::pattern::write_file(&path, 8192, |_| {}).unwrap();
        let m = crate::probe::machine();
        let f = crate::probe::file(&path, &m).unwrap();
        let doc = ProbeDoc::new(&m, Some(&f));
        let file = doc.file.unwrap();
        assert_eq!(
            (file.kind, file.fs, file.size_bytes),
            ("regular", "tmpfs", 8192)
        );
        assert!(!file.rwf_nowait.works);
        assert_eq!(file.rwf_nowait.why, Some("unsupported"));
        assert_eq!(
            file.rwf_nowait.refused,
            Some(ErrnoDoc {
                errno: libc::EOPNOTSUPP,
                name: "EOPNOTSUPP".into()
            })
        );
        assert_eq!(file.rwf_nowait.words, f.nowait_words());
        assert!(!file.rwf_dontcache.works);
        assert_eq!(doc.machine.cpus, m.cpus);
        assert_eq!(
            doc.machine.io_uring.available,
            doc.machine.io_uring.refused.is_none()
        );
    }
}
