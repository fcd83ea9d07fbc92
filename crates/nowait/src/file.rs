//! An open file together with what the engine learned about it when it was
//! opened: direct or buffered, O_DIRECT alignment and where it came from, the
//! filesystem, and why direct I/O was not used where it was asked for. What
//! the page cache does with its reads (the try, the cache policy) is the
//! `page_cache` module's.

use std::fs;
use std::io::{self, Seek, SeekFrom};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::page_cache::nowait::NowaitFile;
use crate::page_cache::policy::CacheFile;
pub use crate::setting::Direct;
use crate::sys::names::{fs_name, FUSE_MAGIC, RAMFS_MAGIC, TMPFS_MAGIC};
use crate::sys::{self, sysfs, DioAlign};

/// What kind of object the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file on a filesystem.
    Regular,
    /// A block device node such as `/dev/zram0`.
    BlockDevice,
}

/// O_DIRECT alignment requirements of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DioAlignment {
    /// Required alignment of the buffer address.
    pub mem: u32,
    /// Required alignment of the file offset and of the length.
    pub offset: u32,
    /// Where the numbers came from.
    pub source: AlignSource,
}

/// Where a file's O_DIRECT alignment came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlignSource {
    /// A buffered file: no alignment needed.
    Buffered,
    /// `statx(2)` with `STATX_DIOALIGN`.
    Statx,
    /// The device's logical block size (`BLKSSZGET` or sysfs).
    LogicalBlockSize,
    /// Nothing reported: a page, which every device seen in practice accepts.
    AssumedPage,
}

impl AlignSource {
    /// In words, as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            AlignSource::Buffered => "buffered: no alignment needed",
            AlignSource::Statx => "statx STATX_DIOALIGN",
            AlignSource::LogicalBlockSize => "device logical block size",
            AlignSource::AssumedPage => "assumed page size (no alignment reported)",
        }
    }
}

impl std::fmt::Display for AlignSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a memory-backed file's data lives (see [`File::memory_backing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryBacking {
    /// A tmpfs file.
    Tmpfs,
    /// A ramfs file.
    Ramfs,
    /// A RAM block device (`zram0` without a backing device, `ram0`,
    /// `pmem0`), as the file itself or under its filesystem.
    RamDevice(String),
}

impl MemoryBacking {
    /// In words: `tmpfs`, `ramfs`, or the device's name.
    pub fn as_str(&self) -> &str {
        match self {
            MemoryBacking::Tmpfs => "tmpfs",
            MemoryBacking::Ramfs => "ramfs",
            MemoryBacking::RamDevice(name) => name,
        }
    }
}

impl std::fmt::Display for MemoryBacking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DioAlignment {
    /// Alignment of a buffered file: anything goes.
    pub const NONE: DioAlignment = DioAlignment {
        mem: 1,
        offset: 1,
        source: AlignSource::Buffered,
    };

    /// True if a read of `len` bytes at `offset` into memory at `addr` meets these rules.
    pub fn fits(&self, offset: u64, len: usize, addr: usize) -> bool {
        offset % self.offset as u64 == 0
            && len % self.offset as usize == 0
            && addr % self.mem as usize == 0
    }
}

pub(crate) struct FileInner {
    pub(crate) file: fs::File,
    pub(crate) path: PathBuf,
    pub(crate) direct: bool,
    pub(crate) strict: bool,
    pub(crate) align: DioAlignment,
    pub(crate) kind: FileKind,
    pub(crate) fs: &'static str,
    pub(crate) fs_magic: i64,
    pub(crate) buffered_reason: Option<String>,
    /// The RWF_NOWAIT hit ratio and on/off state, shared by every queue
    /// (`pool` backend) and engine ring (first polls) reading this file.
    pub(crate) nowait: NowaitFile,
    /// The cache policy set on the file, whether its filesystem takes
    /// `RWF_DONTCACHE`, and the adaptive policy's scan tracking, shared
    /// like `nowait`.
    pub(crate) cache: CacheFile,
    /// Unique for the life of the process (descriptor numbers are reused;
    /// this is not): keys io_uring's registered-file table.
    pub(crate) id: u64,
    /// Whether the device's queue polls (`queue/io_poll`), for IOPOLL:
    /// [`POLL_NO`], [`POLL_YES`], or [`POLL_REFUSED`] once a polled read
    /// came back EOPNOTSUPP.
    pub(crate) polls: AtomicU8,
    /// Where the file's data lives when that is memory, so reads of it may
    /// be done inline on the calling thread (see [`File::memory_backing`]).
    pub(crate) memory: Option<MemoryBacking>,
    /// io_uring must not read this file (FUSE; why: [`File::pooled_reason`]):
    /// the `uring` backend hands its reads to a thread pool doing `pread(2)`.
    pub(crate) pooled: bool,
    /// The end of file `fstat` last confirmed for a short page-cache read
    /// (`page_cache/try_read.rs`; `u64::MAX`: none yet): the tail of a file
    /// read again and again costs one `fstat`, not one per read.
    pub(crate) eof_seen: std::sync::atomic::AtomicU64,
}

/// Why io_uring cannot be trusted with reads of a file on FUSE.
///
/// A FUSE file opened in `direct_io` mode (`FOPEN_DIRECT_IO`) on a
/// connection that did not negotiate `FUSE_ASYNC_DIO` (libfuse 2 does not)
/// is read by the kernel's `fuse_direct_IO` for io_uring, which does not
/// advance the request's file position. When the server answers short
/// (which FUSE allows anywhere), io_uring reads the rest itself from the
/// stale position: the result counts every byte asked for, the bytes after
/// the short reply repeat the file from the start of the read, and an error
/// further on is never reported (seen on 6.18 with plain liburing). Neither
/// the open flags nor the negotiated capabilities can be seen from user
/// space, so every FUSE file takes the `pread(2)` path, which reports short
/// reads as they are (AIO does too; the queue then reads the rest itself).
const FUSE_POOLED: &str = "FUSE: io_uring re-reads a short direct_io reply from the wrong offset \
     (wrong bytes, lost errors) unless the server negotiated FUSE_ASYNC_DIO, which user space \
     cannot see; reads go to a thread pool doing pread(2)";

/// The most bytes one `preadv2(2)` transfers (the kernel's `MAX_RW_COUNT`,
/// `INT_MAX` rounded down to a page): [`MAX_READ`](crate::MAX_READ), which
/// lives a layer up (lib.rs checks they agree). A longer read comes back
/// short at this length, which the page-cache try would take for end of
/// file.
pub(crate) const RW_MAX: usize = i32::MAX as usize & !(crate::buf::PAGE - 1);

/// Whether a read of `len` bytes at `offset` ends within the largest file
/// position the kernel takes (`i64::MAX`). Past it `preadv2(2)` and
/// io_uring answer EINVAL, or, for an offset of exactly `u64::MAX` (-1),
/// read at the file's current position: such reads are refused before any
/// system call ([`Error::OffsetTooLarge`]).
pub(crate) fn offset_fits(offset: u64, len: usize) -> bool {
    offset
        .checked_add(len as u64)
        .is_some_and(|end| end <= i64::MAX as u64)
}

/// The device does not poll (or the file is buffered).
pub(crate) const POLL_NO: u8 = 0;
/// The device's queue reports `io_poll = 1`.
pub(crate) const POLL_YES: u8 = 1;
/// A polled read was refused with EOPNOTSUPP: never poll this file again.
pub(crate) const POLL_REFUSED: u8 = 2;

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(1);

/// An open file, cheap to clone (reference counted). Requests in flight keep
/// it open, so dropping the last handle while reads are pending is safe.
#[derive(Clone)]
pub struct File {
    pub(crate) inner: Arc<FileInner>,
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("path", &self.inner.path)
            .field("direct", &self.inner.direct)
            .field("align", &self.inner.align)
            .field("fs", &self.inner.fs)
            .finish()
    }
}

/// What a file nowait cannot read is (`None` for a regular file, a block
/// device or a directory, which have their own answers).
fn special_kind(ft: fs::FileType) -> Option<&'static str> {
    if ft.is_file() || ft.is_block_device() || ft.is_dir() {
        None
    } else if ft.is_char_device() {
        Some("character device")
    } else if ft.is_fifo() {
        Some("fifo")
    } else if ft.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    }
}

/// `open(2)` with `O_RDONLY|O_CLOEXEC|O_NONBLOCK` (and `O_DIRECT`): non-blocking
/// so that a fifo without a writer is refused (by `File::open`'s file-type
/// check) instead of hanging the caller; the flag comes off again for the
/// files nowait reads (`sys::clear_nonblock`).
fn open_raw(path: &Path, direct: bool) -> io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.read(true);
    let mut flags = libc::O_NONBLOCK;
    if direct {
        flags |= libc::O_DIRECT;
    }
    o.custom_flags(flags);
    o.open(path)
}

impl File {
    /// Open `path` for reading (`open(2)` with `O_RDONLY|O_CLOEXEC`, plus
    /// `O_DIRECT` as `direct` asks), and learn its O_DIRECT alignment from
    /// `statx(2)` `STATX_DIOALIGN`, falling back to the device's logical
    /// block size.
    pub fn open(path: impl AsRef<Path>, direct: Direct) -> Result<File> {
        let path = path.as_ref();
        let mut buffered_reason = None;
        let want_direct = direct != Direct::Off;
        let file = match open_raw(path, want_direct) {
            Ok(f) => f,
            // EINVAL at open with O_DIRECT: the filesystem has no direct I/O.
            Err(e) if want_direct && e.raw_os_error() == Some(libc::EINVAL) => {
                if direct == Direct::On {
                    // Tell a directory, a fifo or a socket (which O_DIRECT
                    // also refuses) apart from a filesystem without O_DIRECT.
                    if let Ok(m) = fs::metadata(path) {
                        let ft = m.file_type();
                        if ft.is_dir() {
                            return Err(Error::IsDirectory { path: path.into() });
                        }
                        if let Some(kind) = special_kind(ft) {
                            return Err(Error::Unsupported {
                                path: path.into(),
                                kind,
                            });
                        }
                    }
                    return Err(Error::DirectUnsupported {
                        path: path.into(),
                        reason: "the filesystem answered EINVAL to O_DIRECT at open".into(),
                    });
                }
                buffered_reason =
                    Some("the filesystem answered EINVAL to O_DIRECT at open".to_string());
                open_raw(path, false).map_err(|source| Error::Open {
                    path: path.into(),
                    source,
                })?
            }
            Err(source) => {
                return Err(Error::Open {
                    path: path.into(),
                    source,
                })
            }
        };
        let opened_direct = want_direct && buffered_reason.is_none();
        File::opened(file, path, direct, opened_direct, buffered_reason)
    }

    /// Read an already open `std::fs::File` (as `tokio::fs::File::from_std`
    /// takes one), learning what [`File::open`] learns at open from the
    /// descriptor: `O_DIRECT` from `fcntl(F_GETFL)` (a direct descriptor is
    /// treated as [`Direct::Auto`]), the path for messages from
    /// `/proc/self/fd`. Reads never use or move the descriptor's file
    /// position.
    pub fn from_std(file: fs::File) -> Result<File> {
        let fd = file.as_raw_fd();
        let path = fs::read_link(format!("/proc/self/fd/{fd}"))
            .unwrap_or_else(|_| PathBuf::from(format!("(file descriptor {fd})")));
        let direct = sys::is_direct(file.as_fd()).map_err(|source| Error::Open {
            path: path.clone(),
            source,
        })?;
        let mode = if direct { Direct::Auto } else { Direct::Off };
        File::opened(file, &path, mode, direct, None)
    }

    /// What [`File::open`] and [`File::from_std`] learn from an open descriptor.
    fn opened(
        mut file: fs::File,
        path: &Path,
        direct: Direct,
        opened_direct: bool,
        mut buffered_reason: Option<String>,
    ) -> Result<File> {
        let meta = file.metadata().map_err(|source| Error::Open {
            path: path.into(),
            source,
        })?;
        let ft = meta.file_type();
        let kind = if ft.is_file() {
            FileKind::Regular
        } else if ft.is_block_device() {
            FileKind::BlockDevice
        } else if ft.is_dir() {
            return Err(Error::IsDirectory { path: path.into() });
        } else {
            return Err(Error::Unsupported {
                path: path.into(),
                kind: special_kind(ft).unwrap_or("special file"),
            });
        };
        sys::clear_nonblock(file.as_fd()).map_err(|source| Error::Open {
            path: path.into(),
            source,
        })?;
        let fs_magic = sys::fs_magic(file.as_fd()).unwrap_or(0);
        let fs = if kind == FileKind::BlockDevice {
            "block device"
        } else {
            fs_name(fs_magic)
        };

        let mut align = DioAlignment::NONE;
        let mut direct_now = opened_direct;
        if opened_direct {
            match dio_alignment(&file, kind, &meta) {
                Ok(a) => align = a,
                Err(reason) => {
                    if direct == Direct::On {
                        return Err(Error::DirectUnsupported {
                            path: path.into(),
                            reason,
                        });
                    }
                    file = open_raw(path, false)
                        .and_then(|f| sys::clear_nonblock(f.as_fd()).map(|()| f))
                        .map_err(|source| Error::Open {
                            path: path.into(),
                            source,
                        })?;
                    buffered_reason = Some(reason);
                    direct_now = false;
                }
            }
        }

        let memory = memory_backing(kind, &meta, fs_magic)
            .filter(|_| refuses_nowait(&file, direct_now, align));

        Ok(File {
            inner: Arc::new(FileInner {
                file,
                path: path.into(),
                direct: direct_now,
                strict: direct == Direct::On,
                align,
                kind,
                fs,
                fs_magic,
                buffered_reason,
                nowait: NowaitFile::default(),
                cache: CacheFile::default(),
                id: NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed),
                polls: AtomicU8::new(if direct_now && device_polls(&meta) {
                    POLL_YES
                } else {
                    POLL_NO
                }),
                memory,
                pooled: fs_magic == FUSE_MAGIC,
                eof_seen: std::sync::atomic::AtomicU64::new(u64::MAX),
            }),
        })
    }

    /// The path the file was opened with.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// True if reads bypass the page cache (`O_DIRECT`).
    pub fn is_direct(&self) -> bool {
        self.inner.direct
    }

    /// O_DIRECT alignment ([`DioAlignment::NONE`] for a buffered file).
    pub fn dio_align(&self) -> DioAlignment {
        self.inner.align
    }

    /// Regular file or block device.
    pub fn kind(&self) -> FileKind {
        self.inner.kind
    }

    /// Filesystem name (`ext4`, `xfs`, `tmpfs`, …, or `block device`).
    pub fn fs(&self) -> &'static str {
        self.inner.fs
    }

    /// Filesystem magic number from `fstatfs(2)`.
    pub fn fs_magic(&self) -> i64 {
        self.inner.fs_magic
    }

    /// Why the file is buffered although direct I/O was asked for (`Direct::Auto`).
    pub fn buffered_reason(&self) -> Option<&str> {
        self.inner.buffered_reason.as_deref()
    }

    /// Why the `uring` backend hands this file's reads to a thread pool
    /// doing `pread(2)` instead of the ring, if it does: files on FUSE,
    /// where io_uring can return wrong bytes for a short reply.
    pub fn pooled_reason(&self) -> Option<&str> {
        self.inner.pooled.then_some(FUSE_POOLED)
    }

    /// `Some(where)` when the file's data lives in memory and its reads may
    /// be done inline, on the thread that pushes them: the file is on tmpfs
    /// or ramfs, or on a RAM block device (zram without a backing device,
    /// brd, pmem), and it refuses `RWF_NOWAIT` (checked once at open). io_uring
    /// hands every read of such a file to one of its io-wq kernel threads,
    /// a thread hop per read for what is a memory copy; see
    /// [`QueueBuilder::memory_inline`](crate::QueueBuilder::memory_inline).
    pub fn inline_reason(&self) -> Option<&str> {
        self.inner.memory.as_ref().map(MemoryBacking::as_str)
    }

    /// Where the file's data lives when that is memory (the enum behind
    /// [`File::inline_reason`]).
    pub fn memory_backing(&self) -> Option<&MemoryBacking> {
        self.inner.memory.as_ref()
    }

    /// Current size in bytes (`fstat(2)`, or the device size for a block device).
    pub fn len(&self) -> Result<u64> {
        let open_err = |source| Error::Open {
            path: self.inner.path.clone(),
            source,
        };
        match self.inner.kind {
            FileKind::Regular => Ok(self.inner.file.metadata().map_err(open_err)?.len()),
            FileKind::BlockDevice => (&self.inner.file).seek(SeekFrom::End(0)).map_err(open_err),
        }
    }

    /// True if the file is empty.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How far the kernel reads ahead of a sequential buffered reader of
    /// this file, in bytes: its block device's `queue/read_ahead_kb` (the
    /// whole disk's for a partition). `None` where sysfs does not say (no
    /// block device under the file: tmpfs, FUSE, NFS).
    pub fn kernel_readahead(&self) -> Option<u64> {
        let meta = self.inner.file.metadata().ok()?;
        let kb: u64 = sysfs::queue_attr(sysfs::device_of(&meta), "read_ahead_kb")?
            .parse()
            .ok()?;
        Some(kb << 10)
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.inner.file.as_raw_fd()
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.file.as_fd()
    }
}

/// O_DIRECT alignment: `statx` STATX_DIOALIGN first, then the logical block
/// size of the device. `Err` carries why direct I/O cannot be used.
fn dio_alignment(
    file: &fs::File,
    kind: FileKind,
    meta: &fs::Metadata,
) -> std::result::Result<DioAlignment, String> {
    match sys::statx_dioalign(file.as_fd()) {
        Ok(DioAlign::Known { mem, offset }) => {
            return Ok(DioAlignment {
                mem,
                offset,
                source: AlignSource::Statx,
            });
        }
        Ok(DioAlign::NotSupported) => {
            return Err("statx STATX_DIOALIGN reports no direct I/O support for this file".into());
        }
        Ok(DioAlign::Unknown) | Err(_) => {}
    }
    let lbs = match kind {
        FileKind::BlockDevice => sys::block_logical_size(file.as_fd()).ok(),
        FileKind::Regular => sysfs::logical_block_size(sysfs::device_of(meta)),
    };
    Ok(match lbs {
        Some(n) if n.is_power_of_two() => DioAlignment {
            mem: n,
            offset: n,
            source: AlignSource::LogicalBlockSize,
        },
        // Nothing reported: a page satisfies every device seen in practice.
        _ => DioAlignment {
            mem: 4096,
            offset: 4096,
            source: AlignSource::AssumedPage,
        },
    })
}

/// True if the block queue behind the file polls (`queue/io_poll` is 1).
fn device_polls(meta: &fs::Metadata) -> bool {
    sysfs::io_poll(sysfs::device_of(meta)) == Some(true)
}

/// Where a file's data lives when that is memory: `tmpfs`/`ramfs` by
/// filesystem magic, or the RAM block device (`zram0`, `ram0`, `pmem0`)
/// under the file or block device. A zram device with a backing device is
/// left out: a read of a page written back to it waits on that device.
/// tmpfs pages can be swapped out too; that is the one documented case
/// where an inline read may wait (turn it off with `memory_inline(false)`).
fn memory_backing(kind: FileKind, meta: &fs::Metadata, fs_magic: i64) -> Option<MemoryBacking> {
    if kind == FileKind::Regular {
        match fs_magic {
            TMPFS_MAGIC => return Some(MemoryBacking::Tmpfs),
            RAMFS_MAGIC => return Some(MemoryBacking::Ramfs),
            _ => {}
        }
    }
    sysfs::ram_device(sysfs::device_of(meta)).map(MemoryBacking::RamDevice)
}

/// Does `file` refuse `RWF_NOWAIT` reads (EOPNOTSUPP)? Then io_uring cannot
/// try a read inline and hands each one to an io-wq worker. One read of the
/// first block (aligned for a direct file) answers it; any other answer
/// (data, 0 at end of file, EAGAIN) means the kernel takes non-blocking reads.
fn refuses_nowait(file: &fs::File, direct: bool, align: DioAlignment) -> bool {
    let len = if direct {
        (align.offset as usize).max(crate::buf::PAGE)
    } else {
        1
    };
    let mut buf = crate::buf::Buf::with_align(len, (align.mem as usize).max(crate::buf::PAGE));
    sys::read_into(file.as_fd(), &mut buf, 0, len, 0, sys::RWF_NOWAIT) == Err(libc::EOPNOTSUPP)
}
