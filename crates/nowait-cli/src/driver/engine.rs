//! The engines a job reads through, behind one push/submit/reap shape
//! ([`Engine`]): the library's queue (io_uring, libaio, psync, pool,
//! aio+pool), and the engines nowait runs itself as fio's engine of the
//! same name does ([`Own`]): `null` (no I/O: each read complete at once),
//! `sync` (`lseek(2)` when the position moved, then `read(2)`), `pvsync`
//! (`preadv(2)`), `pvsync2` (`preadv2(2)` with `RWF_HIPRI`, `RWF_NOWAIT`,
//! `RWF_DONTCACHE` as asked) and `mmap` (the file mapped, each read a copy
//! out of the mapping). The synchronous ones read inside `push`, one read
//! at a time (fio caps their depth at 1); `null` completes a batch when it
//! is submitted, at any depth, as fio's does.

use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::os::fd::AsFd;
use std::time::Duration;

use nowait::{
    BackendKind, BackendReason, BackendReport, Buf, Completion, File, Queue, QueueStats, Read,
    Rejected,
};

/// One read for an engine: which of the thread's files, where, how much,
/// into which buffer.
#[derive(Debug)]
pub struct Req {
    /// An index into the thread's files.
    pub file: usize,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to read.
    pub len: usize,
    /// Destination, owned by the engine until its completion.
    pub buf: Buf,
    /// Handed back with the completion.
    pub user_data: u64,
}

use crate::base::sys::Mapping;
use crate::model::job::{Job, OwnEngine};

/// What the read loop asks of an engine: the library queue's shape.
pub trait Engine {
    /// Queue a read (the synchronous engines read it here).
    fn push(&mut self, r: Req) -> Result<(), Rejected>;
    /// Hand the queued reads to the kernel.
    fn submit(&mut self) -> nowait::Result<()>;
    /// Wait for at least `min` completions (fewer when fewer are owed) and
    /// append every one there is to `out`.
    fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> nowait::Result<usize>;
    /// The counters.
    fn stats(&self) -> QueueStats;
    /// What the submission policy chose, if the engine has one.
    fn submission(&self) -> Option<String>;
    /// Which engine this is and why.
    fn backend(&self) -> &BackendReport;
    /// One of the engine's registered buffers, if it has them.
    fn take_buf(&mut self) -> Option<Buf> {
        None
    }
}

/// The library's queue over a thread's files.
pub struct Lib<'a> {
    /// The queue.
    pub q: Queue,
    files: &'a [&'a File],
}

impl<'a> Lib<'a> {
    /// `q` reading `files`.
    pub fn new(q: Queue, files: &'a [&'a File]) -> Lib<'a> {
        Lib { q, files }
    }
}

impl Engine for Lib<'_> {
    #[inline(always)]
    fn push(&mut self, r: Req) -> Result<(), Rejected> {
        self.q.push(Read {
            file: self.files[r.file],
            offset: r.offset,
            len: r.len,
            buf: r.buf,
            user_data: r.user_data,
            ioprio: 0,
            cache: None,
        })
    }
    #[inline]
    fn submit(&mut self) -> nowait::Result<()> {
        self.q.submit()
    }
    #[inline]
    fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> nowait::Result<usize> {
        self.q.reap(min, timeout, out)
    }
    fn stats(&self) -> QueueStats {
        self.q.stats()
    }
    fn submission(&self) -> Option<String> {
        self.q.submission()
    }
    fn backend(&self) -> &BackendReport {
        self.q.backend()
    }
    fn take_buf(&mut self) -> Option<Buf> {
        self.q.take_buf()
    }
}

/// One of nowait's own engines, for one thread.
pub struct Own<'a> {
    kind: OwnEngine,
    files: &'a [&'a File],
    flags: rustix::io::ReadWriteFlags,
    /// Reads pushed and not yet submitted (`null`).
    queued: Vec<Completion>,
    /// Completions not yet reaped.
    done: VecDeque<Completion>,
    /// `sync`: where each file's descriptor is (by file index).
    positions: Vec<Option<u64>>,
    /// `mmap`: each file's mapping (by file index), made on first use.
    maps: Vec<Option<Mapping>>,
    random: bool,
    stats: QueueStats,
    report: BackendReport,
}

/// `RWF_DONTCACHE` (Linux 6.14): drop the pages a buffered read brought in.
const RWF_DONTCACHE: u32 = 0x80;

impl<'a> Own<'a> {
    /// The engine `job` asks for over the thread's `files` (none for `null`).
    pub fn new(kind: OwnEngine, job: &Job, files: &'a [&'a File]) -> Own<'a> {
        use rustix::io::ReadWriteFlags as F;
        let mut flags = F::empty();
        if kind == OwnEngine::Pvsync2 {
            if job.hipri == Some(true) {
                flags |= F::HIPRI;
            }
            if job.rwf_nowait {
                flags |= F::NOWAIT;
            }
            if job.normalized().cache == nowait::CachePolicy::Drop {
                flags |= F::from_bits_retain(RWF_DONTCACHE);
            }
        }
        let detail = match kind {
            OwnEngine::Null => "fio's null engine: no I/O, each read complete when submitted",
            OwnEngine::Sync => "fio's sync engine: lseek(2) when the position moved, then read(2)",
            OwnEngine::Pvsync => "fio's pvsync engine: preadv(2) with one buffer",
            OwnEngine::Pvsync2 => "fio's pvsync2 engine: preadv2(2) with the job's RWF_ flags",
            OwnEngine::Mmap => "fio's mmap engine: the file mapped, each read a copy from it",
        };
        Own {
            kind,
            files,
            flags,
            queued: Vec::new(),
            done: VecDeque::new(),
            positions: vec![None; files.len()],
            maps: files.iter().map(|_| None).collect(),
            random: job.rw == crate::model::job::Rw::RandRead,
            stats: QueueStats::default(),
            report: BackendReport {
                kind: BackendKind::Sync,
                reason: BackendReason::AskedFor,
                detail: detail.into(),
            },
        }
    }

    /// Read `r` now: bytes read, or the error.
    fn read_now(&mut self, r: &mut Req) -> std::io::Result<usize> {
        let len = r.len;
        if self.kind == OwnEngine::Null {
            return Ok(len);
        }
        let file = self.files[r.file];
        let buf = &mut r.buf.spare_mut()[..len];
        self.stats.backend.syscalls += 1;
        match self.kind {
            OwnEngine::Null => Ok(len),
            OwnEngine::Pvsync => {
                let mut iov = [IoSliceMut::new(buf)];
                Ok(rustix::io::preadv(file.as_fd(), &mut iov, r.offset)?)
            }
            OwnEngine::Pvsync2 => {
                let mut iov = [IoSliceMut::new(buf)];
                Ok(rustix::io::preadv2(
                    file.as_fd(),
                    &mut iov,
                    r.offset,
                    self.flags,
                )?)
            }
            OwnEngine::Sync => {
                if self.positions[r.file] != Some(r.offset) {
                    rustix::fs::seek(file.as_fd(), rustix::fs::SeekFrom::Start(r.offset))?;
                    self.stats.backend.syscalls += 1;
                }
                let n = rustix::io::read(file.as_fd(), buf)?;
                self.positions[r.file] = Some(r.offset + n as u64);
                Ok(n)
            }
            OwnEngine::Mmap => {
                self.stats.backend.syscalls -= 1;
                if self.maps[r.file].is_none() {
                    let size = file.len().map_err(std::io::Error::from)?;
                    self.stats.backend.syscalls += 1;
                    self.maps[r.file] = Some(Mapping::new(file, 0, size, self.random)?);
                }
                let m = self.maps[r.file].as_ref().expect("mapped above");
                // Past the end of the file (as mapped at the start): EOF.
                Ok(if m.copy_to(r.offset, buf) { len } else { 0 })
            }
        }
    }
}

impl Engine for Own<'_> {
    fn push(&mut self, mut r: Req) -> Result<(), Rejected> {
        if r.len > r.buf.capacity() {
            return Err(Rejected {
                error: nowait::Error::BufferTooSmall {
                    len: r.len,
                    capacity: r.buf.capacity(),
                },
                buf: r.buf,
            });
        }
        self.stats.pushed += 1;
        let result = match self.read_now(&mut r) {
            Ok(n) => {
                if self.kind != OwnEngine::Null {
                    r.buf.set_len(n);
                }
                Ok(n)
            }
            Err(source) => {
                self.stats.errors += 1;
                Err(nowait::Error::Read {
                    path: self.files[r.file].path().to_path_buf(),
                    offset: r.offset,
                    len: r.len,
                    source,
                })
            }
        };
        let c = Completion {
            user_data: r.user_data,
            result,
            buf: r.buf,
        };
        if self.kind == OwnEngine::Null {
            self.queued.push(c);
        } else {
            self.done.push_back(c);
        }
        Ok(())
    }

    fn submit(&mut self) -> nowait::Result<()> {
        // fio's null engine completes what was queued when it is committed.
        self.done.extend(self.queued.drain(..));
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> nowait::Result<usize> {
        self.submit()?;
        let n = self.done.len();
        self.stats.completed += n as u64;
        out.extend(self.done.drain(..));
        Ok(n)
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }

    fn submission(&self) -> Option<String> {
        None
    }

    fn backend(&self) -> &BackendReport {
        &self.report
    }
}

/// Whether a file must be read for `job` (every engine but `null`).
pub fn reads_files(job: &Job) -> bool {
    job.own_engine != Some(OwnEngine::Null)
}

/// Open `path` for `job` as its engine wants it (direct or buffered).
pub fn open_for(job: &Job, path: &std::path::Path) -> nowait::Result<File> {
    let direct = if job.direct {
        nowait::Direct::On
    } else {
        nowait::Direct::Off
    };
    File::open(path, direct)
}
