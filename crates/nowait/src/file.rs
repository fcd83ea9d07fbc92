//! An open file together with what the engine learned about it when it was
//! opened: direct or buffered, O_DIRECT alignment and where it came from, the
//! filesystem, and why direct I/O was not used where it was asked for.

use std::fs;
use std::io::{self, Seek, SeekFrom};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::cache_policy::{self, CacheFile, CachePolicy, CacheState, Scan, Uncached};
use crate::error::{Error, Result};
use crate::rwf_nowait::{Answer, Attempt, CacheTry, NowaitFile, NowaitMode, NowaitState, Outcome};
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
    /// (`File::ends_at_eof`; `u64::MAX`: none yet): the tail of a file
    /// read again and again costs one `fstat`, not one per read.
    eof_seen: std::sync::atomic::AtomicU64,
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
/// short at this length, which [`File::try_read_cached`] would take for
/// end of file.
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

    /// The `RWF_NOWAIT` path state for this file: its decaying hit ratio
    /// and, if the path is off, why (shared by every `pool` queue and every
    /// async engine reading the file).
    pub fn nowait_state(&self) -> NowaitState {
        self.inner.nowait.snapshot(self.inner.fs)
    }

    /// Set what this file's buffered reads leave in the page cache, for
    /// every queue and engine reading it (and every clone of this handle);
    /// `None` leaves it to each queue's or engine's own policy
    /// ([`QueueBuilder::cache`](crate::QueueBuilder::cache)). A read may
    /// still ask for its own ([`Read::cache`](crate::Read::cache),
    /// [`ReadAt::cache`](crate::ReadAt::cache)). `O_DIRECT` reads ignore it.
    ///
    /// ```no_run
    /// use nowait::{CachePolicy, Direct, File};
    /// let backup = File::open("/var/lib/db/big.dat", Direct::Off)?;
    /// backup.set_cache_policy(CachePolicy::Drop); // read once: leave the cache to others
    /// # Ok::<(), nowait::Error>(())
    /// ```
    pub fn set_cache_policy(&self, policy: impl Into<Option<CachePolicy>>) {
        self.inner.cache.set_policy(policy.into());
    }

    /// The cache policy set on the file, if any ([`File::set_cache_policy`]).
    pub fn cache_policy(&self) -> Option<CachePolicy> {
        self.inner.cache.policy()
    }

    /// The file's cache-policy state: whether its filesystem takes
    /// `RWF_DONTCACHE` (as far as this process has asked), and what the
    /// adaptive policy made of its reads so far.
    pub fn cache_state(&self) -> CacheState {
        self.inner.cache.snapshot(self.inner.fs)
    }

    /// What `policy` makes of a buffered read of `len` bytes at `offset`
    /// (see [`crate::cache_policy`]): `Yes` to send it with `RWF_DONTCACHE`.
    /// The first read of the file that wants the flag asks the kernel
    /// whether its filesystem takes it (once per file).
    #[inline]
    pub(crate) fn uncached(&self, policy: CachePolicy, offset: u64, len: usize) -> Uncached {
        let f = &*self.inner;
        if policy == CachePolicy::Keep || f.direct {
            return Uncached::No;
        }
        let want = policy == CachePolicy::Drop
            || match f.cache.scan(offset, len) {
                Scan::No | Scan::Keep => false,
                Scan::Drop => true,
                Scan::Check => self.check_scan(),
            };
        if !want {
            return Uncached::No;
        }
        let regular = f.kind == FileKind::Regular;
        if f.cache.usable(f.fs_magic, regular, || {
            sys::preadv2_dontcache_probe(f.file.as_fd())
        }) {
            Uncached::Yes
        } else {
            Uncached::Kept
        }
    }

    /// The adaptive check of a file being scanned: its size against what
    /// the page cache can hold, and, for a large file, how much of it is
    /// resident (`cachestat(2)` over the whole file). Returns whether its
    /// scan reads go uncached until the next check.
    #[cold]
    fn check_scan(&self) -> bool {
        let size = self.len().unwrap_or(0);
        let (drop, resident) =
            cache_policy::verdict(size, sys::cgroup::page_cache_budget(), || {
                let pages = size.div_ceil(crate::buf::PAGE as u64).max(1);
                sys::cachestat(self.inner.file.as_fd(), 0, 0)
                    .ok()
                    .map(|c| c.cached as f64 / pages as f64)
            });
        self.inner.cache.settle(drop, resident)
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

    /// Whether `pos` is at or past the end of the file (a block device's
    /// short read is its end; a failed `fstat` says no).
    fn ends_at_eof(&self, pos: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        match self.inner.kind {
            FileKind::Regular => {
                // The same end as last time: a short read stopping exactly
                // there is end of file again (a file that grew since is read
                // through, not stopped mid-page, by the page cache).
                if self.inner.eof_seen.load(Relaxed) == pos {
                    return true;
                }
                let at_end = self.inner.file.metadata().is_ok_and(|m| pos >= m.len());
                if at_end {
                    self.inner.eof_seen.store(pos, Relaxed);
                }
                at_end
            }
            FileKind::BlockDevice => true,
        }
    }

    /// True if the file is empty.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Drop the file's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`),
    /// as fio's `invalidate=1` does before a run.
    pub fn drop_cache(&self) -> Result<()> {
        sys::fadvise_dontneed(self.inner.file.as_fd(), 0, 0).map_err(|source| Error::Kernel {
            what: "posix_fadvise(DONTNEED)",
            source,
        })
    }

    /// Try a buffered read of `buf.len()` bytes at `offset` from the page
    /// cache alone, with `preadv2(RWF_NOWAIT)` on the calling thread, as
    /// `mode` and the file's hit ratio (against `threshold`) allow; the
    /// outcome is folded into the ratio. Never waits for the device. Not
    /// tried: O_DIRECT files, empty reads, reads longer than
    /// [`RW_MAX`] (they would come back short, as if at end of file), and
    /// reads ending past `i64::MAX`. `dontcache`: the read is uncached
    /// ([`Uncached::Yes`]); the try carries `RWF_DONTCACHE` too once the
    /// file is known to take it, so a miss starts its readahead uncached.
    /// `buf` may be uninitialised (a caller's memory): the kernel gets a
    /// raw pointer, and on a hit its first bytes are written.
    #[inline]
    pub(crate) fn read_cached(
        &self,
        buf: &mut [MaybeUninit<u8>],
        offset: u64,
        mode: NowaitMode,
        threshold: u32,
        dontcache: bool,
    ) -> CacheTry {
        let len = buf.len();
        self.read_cached_with(len, offset, mode, threshold, dontcache, |fd, flags| {
            sys::preadv2_uninit(fd, buf, offset, flags)
        })
        .0
    }

    /// [`File::read_cached`] into the first `len` bytes of `buf`, which are
    /// not zeroed first (only the bytes the page cache returns are written).
    #[inline]
    pub(crate) fn read_cached_into(
        &self,
        buf: &mut crate::buf::Buf,
        len: usize,
        offset: u64,
        mode: NowaitMode,
        threshold: u32,
        dontcache: bool,
    ) -> CacheTry {
        let len = len.min(buf.capacity());
        self.read_cached_with(len, offset, mode, threshold, dontcache, |fd, flags| {
            buf.preadv2_into(fd, len, offset, flags)
        })
        .0
    }

    /// The policy and bookkeeping of a page-cache try of `len` bytes at
    /// `offset`; `read` makes the `preadv2` call with the flags it is given
    /// (`RWF_NOWAIT`, and `RWF_DONTCACHE` for an uncached read of a file
    /// known to take it). Also says how many leading bytes of the buffer
    /// hold the file's bytes: all of a hit, the resident prefix of a
    /// [`CacheTry::Partial`], else 0.
    #[inline]
    fn read_cached_with(
        &self,
        len: usize,
        offset: u64,
        mode: NowaitMode,
        threshold: u32,
        dontcache: bool,
        read: impl FnOnce(BorrowedFd<'_>, u32) -> std::result::Result<usize, i32>,
    ) -> (CacheTry, usize) {
        let f = &*self.inner;
        if f.direct || len == 0 || len > RW_MAX || !offset_fits(offset, len) {
            return (CacheTry::Off, 0);
        }
        let regular = f.kind == FileKind::Regular;
        let reprobe = match f.nowait.attempt(mode, threshold, f.fs_magic, regular) {
            Attempt::Try => false,
            Attempt::Reprobe => true,
            Attempt::Skip => return (CacheTry::Skipped, 0),
            Attempt::Off => return (CacheTry::Off, 0),
        };
        let flags = if dontcache && f.cache.accepted() {
            sys::RWF_NOWAIT | sys::RWF_DONTCACHE
        } else {
            sys::RWF_NOWAIT
        };
        let (outcome, out) = match Answer::of(read(f.file.as_fd(), flags), offset, len) {
            // Short: end of file, which `Answer::of` infers from a stop
            // inside a page. That holds for the page cache's own reads
            // (`filemap_read` stops at end of file or a folio's end); a
            // filesystem with a read path of its own might stop elsewhere,
            // so the size is asked (one `fstat`, only for a read that was
            // short: a file's tail) rather than trusted.
            Answer::Whole(n) if n < len && !self.ends_at_eof(offset + n as u64) => {
                (Outcome::Miss, (CacheTry::Partial, n))
            }
            Answer::Whole(n) => (Outcome::Hit, (CacheTry::Hit(n), n)),
            // The prefix is read again with the rest (a second copy of a
            // few cached pages, against bookkeeping for a split read), so
            // the try saved nothing: it counts as a miss. (The `pool` keeps
            // the prefix, and counts half.) A read across a page-aligned
            // end of file lands here too.
            Answer::Prefix(n) => (Outcome::Miss, (CacheTry::Partial, n)),
            Answer::Miss => (Outcome::Miss, (CacheTry::Miss, 0)),
            Answer::Refused(e) => {
                f.nowait.refuse(e, f.fs_magic, regular);
                return (CacheTry::Refused, 0);
            }
            Answer::Failed => return (CacheTry::Miss, 0),
        };
        f.nowait.record(outcome, reprobe.then_some(threshold));
        out
    }

    /// Try a buffered read of `buf.len()` bytes at `offset` from the page
    /// cache alone: `preadv2(RWF_NOWAIT)` on the calling thread, as `mode`
    /// and the file's hit ratio allow, the outcome folded into that ratio
    /// (shared with every queue and engine reading this file). For a front
    /// end that completes reads its own way and wants a cached read done
    /// at once, as the async engine's first poll does (the Python package's
    /// `aread_at` uses it).
    ///
    /// Only [`CacheTry::Hit`] means `buf` holds the bytes (as many as it
    /// says: all asked, or up to end of file); anything else means "read it
    /// the usual way", which also tells end of file from a miss. Never
    /// waits for the device and never fails. Not tried: O_DIRECT files,
    /// empty reads, reads longer than [`MAX_READ`](crate::MAX_READ), and
    /// the adaptive mode below [`ADAPTIVE_THRESHOLD`] (the `pool`
    /// backend's threshold: a hit there saves a trip through a completion
    /// path that costs as much as a thread hop; re-probed every
    /// [`REPROBE_EVERY`] skipped reads).
    ///
    /// [`ADAPTIVE_THRESHOLD`]: crate::rwf_nowait::ADAPTIVE_THRESHOLD
    /// [`REPROBE_EVERY`]: crate::rwf_nowait::REPROBE_EVERY
    pub fn try_read_cached(&self, buf: &mut [u8], offset: u64, mode: NowaitMode) -> CacheTry {
        let dontcache = self.inner.cache.drops_now();
        let threshold = crate::rwf_nowait::ADAPTIVE_THRESHOLD;
        self.read_cached_with(
            buf.len(),
            offset,
            mode,
            threshold,
            dontcache,
            |fd, flags| sys::preadv2(fd, buf, offset, flags),
        )
        .0
    }

    /// A sequential reader's page-cache try straight into the caller's
    /// memory (`nowait::fs::File`'s reads): `preadv2(RWF_NOWAIT)` of up to
    /// `buf.len()` bytes at `offset`, whatever the file's hit ratio (the
    /// reader decides when to try; the outcome is still folded into the
    /// ratio). A resident prefix counts: a stream may return fewer bytes
    /// than asked. Into the unfilled part of tokio's `ReadBuf` (which may
    /// be uninitialised), at most `max` bytes, the bytes read becoming
    /// filled. The answer: how many bytes were read (0: nothing resident,
    /// or not tried), and whether the try can ever succeed on this file
    /// (false for O_DIRECT files and filesystems that refuse
    /// `RWF_NOWAIT`).
    #[cfg(feature = "tokio")]
    pub(crate) fn read_cached_prefix(
        &self,
        dst: &mut tokio::io::ReadBuf<'_>,
        offset: u64,
        max: usize,
    ) -> (usize, bool) {
        let len = max.min(dst.remaining()).min(RW_MAX);
        self.stream_try(len, offset, |fd, flags| {
            sys::preadv2_read_buf(fd, dst, len, offset, flags)
        })
    }

    /// [`File::read_cached_prefix`] into initialised memory.
    pub(crate) fn read_cached_prefix_init(&self, buf: &mut [u8], offset: u64) -> (usize, bool) {
        let len = buf.len().min(RW_MAX);
        let buf = &mut buf[..len];
        self.stream_try(len, offset, |fd, flags| {
            sys::preadv2(fd, buf, offset, flags)
        })
    }

    fn stream_try(
        &self,
        len: usize,
        offset: u64,
        read: impl FnOnce(BorrowedFd<'_>, u32) -> std::result::Result<usize, i32>,
    ) -> (usize, bool) {
        let dontcache = self.inner.cache.drops_now();
        let (t, n) = self.read_cached_with(
            len,
            offset,
            NowaitMode::Always,
            crate::rwf_nowait::ADAPTIVE_THRESHOLD,
            dontcache,
            read,
        );
        (n, !matches!(t, CacheTry::Off | CacheTry::Refused))
    }

    /// [`File::try_read_cached`] into memory that may not be initialised
    /// (a caller's, or an object's storage fresh from an allocator): the
    /// kernel gets a raw pointer, and no `&[u8]` is formed over `buf`. Only
    /// on [`CacheTry::Hit`]`(n)` are its first `n` bytes initialised, with
    /// the file's bytes.
    pub fn try_read_cached_uninit(
        &self,
        buf: &mut [MaybeUninit<u8>],
        offset: u64,
        mode: NowaitMode,
    ) -> CacheTry {
        // A file set to drop (or whose scan the adaptive policy drops now)
        // tries uncached too, so a miss starts its readahead uncached.
        let dontcache = self.inner.cache.drops_now();
        self.read_cached(
            buf,
            offset,
            mode,
            crate::rwf_nowait::ADAPTIVE_THRESHOLD,
            dontcache,
        )
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
    buf.preadv2_into(file.as_fd(), len, 0, sys::RWF_NOWAIT) == Err(libc::EOPNOTSUPP)
}
