//! A fault-injecting FUSE filesystem for the tests, spoken directly over
//! `/dev/fuse` (no libfuse, no `fusermount`: root mounts it with `mount(2)`).
//!
//! It serves read-only files whose bytes are nowait's verification pattern
//! ([`nowait::pattern`]), each with its own faults: short replies, EIO over a
//! byte range, a delay per read, transient errnos. Files are opened with
//! `FOPEN_DIRECT_IO`, so every read reaches this server and a short reply
//! reaches the application as a short read (without it the page cache would
//! take a short reply for end of file).
//!
//! Threads: a few readers block in `read(2)` on the device and answer each
//! request; a delayed reply goes to a timer thread that writes it when due,
//! so any number of reads can be held in flight. Dropping the mount unmounts
//! (retrying while io_uring's deferred file release keeps it busy), then
//! aborts the connection through `fusectl` and detaches it lazily, so a
//! failing test never leaves a mount or a blocked reader behind.
//!
//! The `unsafe` blocks are the system calls (`mount`, `umount2`, `read`,
//! `write` on the device); each says why its arguments are valid.
#![allow(dead_code)] // each test uses a different subset

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a file's READ replies look like when nothing fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Short {
    /// Every byte asked for (up to end of file).
    Full,
    /// At most this many bytes per reply.
    AtMost(usize),
    /// A random non-empty prefix of what was asked.
    RandomPrefix,
}

/// A transient error answered to some READ requests.
#[derive(Debug, Clone, Copy)]
pub struct Transient {
    /// The errno (EINTR, EAGAIN).
    pub errno: i32,
    /// Every `every`-th READ request of the file gets it (1: all of them).
    pub every: u64,
}

/// One served file and its faults.
#[derive(Debug, Clone)]
pub struct FileSpec {
    pub name: String,
    pub size: u64,
    pub short: Short,
    /// READ requests overlapping this byte range answer EIO.
    pub eio: Option<Range<u64>>,
    /// Each READ reply is held back a random time in this range (ms).
    pub delay_ms: Option<(u64, u64)>,
    pub transient: Option<Transient>,
    /// Open with `FOPEN_DIRECT_IO` (default): every read reaches the server.
    pub direct_io: bool,
}

impl FileSpec {
    pub fn new(name: &str, size: u64) -> FileSpec {
        FileSpec {
            name: name.into(),
            size,
            short: Short::Full,
            eio: None,
            delay_ms: None,
            transient: None,
            direct_io: true,
        }
    }

    pub fn short(mut self, short: Short) -> Self {
        self.short = short;
        self
    }

    pub fn eio(mut self, range: Range<u64>) -> Self {
        self.eio = Some(range);
        self
    }

    pub fn delay_ms(mut self, min: u64, max: u64) -> Self {
        self.delay_ms = Some((min, max));
        self
    }

    pub fn transient(mut self, errno: i32, every: u64) -> Self {
        self.transient = Some(Transient { errno, every });
        self
    }
}

/// What the server saw for one file.
#[derive(Debug, Default)]
pub struct FileCounters {
    /// READ requests received.
    pub reads: AtomicU64,
    /// Replies shorter than asked (before end of file).
    pub short_replies: AtomicU64,
    pub eio_replies: AtomicU64,
    pub transient_replies: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileStats {
    pub reads: u64,
    pub short_replies: u64,
    pub eio_replies: u64,
    pub transient_replies: u64,
}

#[derive(Default)]
struct Counters {
    files: Vec<FileCounters>,
    /// READ requests received and not yet answered, and the most at once.
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

/// What the server answers to the kernel's INIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiate {
    /// Protocol 7.31 with `FUSE_ASYNC_READ`, `FUSE_ASYNC_DIO` and
    /// `FUSE_MAX_PAGES` (1 MiB requests) when offered, like libfuse 3.
    Modern,
    /// What Debian's libfuse 2.9.9 answers (seen with strace under
    /// `python3-fusepy`): protocol 7.19, `FUSE_ASYNC_READ` only (no
    /// `FUSE_ASYNC_DIO`), 128 KiB readahead and writes, no `max_read`
    /// mount option. Without async direct I/O, io_uring reads of a
    /// `direct_io` file go through a kernel path that re-reads a short
    /// reply from the wrong offset.
    Libfuse2,
}

/// A mounted fault-injecting filesystem; unmounted on drop. Owned by the
/// test's own thread, so it is unmounted even when a worker thread hangs;
/// workers get a [`Served`] view.
pub struct FuseFs {
    served: Served,
    /// Kept for the connection's lifetime (the readers hold clones).
    dev: Arc<OwnedFd>,
    /// The connection's number under /sys/fs/fuse/connections.
    conn: u32,
    timer: Arc<Timer>,
    threads: Vec<JoinHandle<()>>,
    aborted: AtomicBool,
}

/// Paths and server counters of a mount; cheap to clone and send.
#[derive(Clone)]
pub struct Served {
    dir: PathBuf,
    files: Arc<Vec<FileSpec>>,
    counters: Arc<Counters>,
}

impl std::ops::Deref for FuseFs {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.served
    }
}

/// Reader threads: enough to keep serving while others sleep in a write.
const READERS: usize = 4;
/// Largest request the kernel sends us: a header plus `max_write` (4 KiB,
/// we take no writes); the kernel insists on room for 8 KiB at least, and a
/// megabyte also covers a kernel that has not seen our INIT reply yet.
const READ_BUF: usize = (1 << 20) + 4096;
/// The kernel splits reads into requests of at most this (`max_read`).
pub const MAX_READ_REQ: u64 = 128 << 10;

const ROOT: u64 = 1;
const HDR_IN: usize = 40;
const HDR_OUT: usize = 16;

// Opcodes (<linux/fuse.h>).
const LOOKUP: u32 = 1;
const FORGET: u32 = 2;
const GETATTR: u32 = 3;
const OPEN: u32 = 14;
const READ: u32 = 15;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const FLUSH: u32 = 25;
const INIT: u32 = 26;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const INTERRUPT: u32 = 36;
const DESTROY: u32 = 38;
const BATCH_FORGET: u32 = 42;

// INIT flags we accept when the kernel offers them.
const FUSE_ASYNC_READ: u32 = 1 << 0;
const FUSE_ASYNC_DIO: u32 = 1 << 15;
const FUSE_MAX_PAGES: u32 = 1 << 22;
const FOPEN_DIRECT_IO: u32 = 1 << 0;
const FOPEN_KEEP_CACHE: u32 = 1 << 1;

impl FuseFs {
    /// Mount `files` on a fresh directory. `Err` says why this machine
    /// cannot (not root, no /dev/fuse, mount refused).
    pub fn mount(files: Vec<FileSpec>, seed: u64) -> Result<FuseFs, String> {
        FuseFs::mount_with(files, seed, Negotiate::Modern)
    }

    /// [`FuseFs::mount`], answering INIT as `negotiate` says.
    pub fn mount_with(
        files: Vec<FileSpec>,
        seed: u64,
        negotiate: Negotiate,
    ) -> Result<FuseFs, String> {
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        if !root {
            return Err("needs root to mount a FUSE filesystem with mount(2)".into());
        }
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/fuse")
            .map_err(|e| format!("cannot open /dev/fuse: {e}"))?;
        let dev = Arc::new(OwnedFd::from(dev));
        let dir = tempfile::Builder::new()
            .prefix("nowait-fuse")
            .tempdir()
            .map_err(|e| e.to_string())?
            .keep();
        let mut opts = format!("fd={},rootmode=40000,user_id=0,group_id=0", dev.as_raw_fd());
        if negotiate == Negotiate::Modern {
            opts.push_str(&format!(",max_read={MAX_READ_REQ}"));
        }
        let c_dir = CString::new(dir.as_os_str().as_bytes()).expect("no NUL in a temp path");
        let c_opts = CString::new(opts).expect("no NUL");
        // SAFETY: every pointer is a NUL-terminated string alive for the call;
        // the fd in the options is our open /dev/fuse descriptor.
        let r = unsafe {
            libc::mount(
                c"nowait-faults".as_ptr(),
                c_dir.as_ptr(),
                c"fuse".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_RDONLY,
                c_opts.as_ptr().cast(),
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            return Err(format!("mount(2) of a FUSE filesystem failed: {e}"));
        }
        let counters = Arc::new(Counters {
            files: files.iter().map(|_| FileCounters::default()).collect(),
            ..Counters::default()
        });
        let timer = Arc::new(Timer::default());
        let server = Arc::new(Server {
            dev: dev.clone(),
            files: files.clone(),
            counters: counters.clone(),
            timer: timer.clone(),
            seed,
            sequence: AtomicU64::new(0),
            negotiate,
        });
        let mut threads = Vec::new();
        for i in 0..READERS {
            let s = server.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("fuse-reader-{i}"))
                    .spawn(move || s.serve())
                    .expect("spawn a FUSE reader"),
            );
        }
        let t = timer.clone();
        let fd = dev.clone();
        threads.push(
            std::thread::Builder::new()
                .name("fuse-timer".into())
                .spawn(move || t.run(fd.as_raw_fd()))
                .expect("spawn the FUSE timer"),
        );
        let mut fs = FuseFs {
            served: Served {
                dir,
                files: Arc::new(files),
                counters,
            },
            dev,
            conn: 0,
            timer,
            threads,
            aborted: AtomicBool::new(false),
        };
        // The first request answers INIT: the mount is only usable after it.
        let st_dev = std::fs::metadata(&fs.served.dir)
            .map_err(|e| format!("the fresh FUSE mount does not answer: {e}"))?
            .dev();
        // The kernel names the connection by its own dev_t encoding.
        fs.conn = (libc::major(st_dev) << 20) | libc::minor(st_dev);
        Ok(fs)
    }

    /// A view to hand to worker threads.
    pub fn served(&self) -> Served {
        self.served.clone()
    }

    /// True if [`FuseFs::abort`] ran (a watchdog fired).
    pub fn aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// Abort the connection (`/sys/fs/fuse/connections/N/abort`): every
    /// request pending or to come fails with ENOTCONN, so nothing blocked on
    /// this filesystem stays blocked. Mounts `fusectl` if it is not.
    pub fn abort(&self) -> Result<(), String> {
        self.aborted.store(true, Ordering::SeqCst);
        let base = Path::new("/sys/fs/fuse/connections");
        let file = base.join(self.conn.to_string()).join("abort");
        if !file.exists() {
            // SAFETY: NUL-terminated literals, alive for the call.
            let r = unsafe {
                libc::mount(
                    c"fusectl".as_ptr(),
                    c"/sys/fs/fuse/connections".as_ptr(),
                    c"fusectl".as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            if r != 0 {
                return Err(format!(
                    "cannot mount fusectl: {}",
                    io::Error::last_os_error()
                ));
            }
        }
        std::fs::write(&file, b"1").map_err(|e| format!("cannot write {}: {e}", file.display()))
    }

    /// Run `f` on a thread; if it has not finished after `limit`, abort the
    /// connection (unblocking anything waiting on this filesystem) and
    /// panic naming `what`. A panic inside `f` is passed on.
    pub fn within<T: Send + 'static>(
        &self,
        limit: Duration,
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let r = f();
            let _ = tx.send(());
            r
        });
        match rx.recv_timeout(limit) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match h.join() {
                Ok(v) => v,
                Err(p) => std::panic::resume_unwind(p),
            },
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let abort = self.abort();
                panic!(
                    "{what}: still not done after {limit:?} (hung); aborted the FUSE \
                     connection to unblock it: {abort:?}; {} reads were in flight at the server",
                    self.reads_in_flight()
                );
            }
        }
    }
}

impl Served {
    /// Path of served file `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the server saw for file `name` so far.
    pub fn stats(&self, name: &str) -> FileStats {
        let i = self
            .files
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("no file {name} in this mount"));
        let c = &self.counters.files[i];
        FileStats {
            reads: c.reads.load(Ordering::SeqCst),
            short_replies: c.short_replies.load(Ordering::SeqCst),
            eio_replies: c.eio_replies.load(Ordering::SeqCst),
            transient_replies: c.transient_replies.load(Ordering::SeqCst),
        }
    }

    /// READ requests received and not answered yet.
    pub fn reads_in_flight(&self) -> u64 {
        self.counters.in_flight.load(Ordering::SeqCst)
    }

    /// The most READ requests the server held at once.
    pub fn max_reads_in_flight(&self) -> u64 {
        self.counters.max_in_flight.load(Ordering::SeqCst)
    }

    /// Start counting [`Served::max_reads_in_flight`] afresh.
    pub fn reset_max_reads_in_flight(&self) {
        let c = &self.counters;
        c.max_in_flight
            .store(c.in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

impl Drop for FuseFs {
    fn drop(&mut self) {
        let c_dir = CString::new(self.served.dir.as_os_str().as_bytes()).expect("no NUL");
        // io_uring drops a closed ring's files from a kernel worker, so the
        // mount can be busy for a moment: retry, then abort and detach.
        let mut gone = false;
        for _ in 0..40 {
            // SAFETY: `c_dir` is a NUL-terminated path alive for the call.
            if unsafe { libc::umount2(c_dir.as_ptr(), 0) } == 0 {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !gone {
            let abort = self.abort();
            eprintln!(
                "FUSE mount {} stayed busy: aborted the connection ({abort:?}) and detached it",
                self.served.dir.display()
            );
            gone = abort.is_ok();
            // SAFETY: as above.
            unsafe { libc::umount2(c_dir.as_ptr(), libc::MNT_DETACH) };
        }
        self.timer.stop();
        // The kernel ends the connection at unmount (or abort): the readers'
        // next read fails with ENODEV and they return. Without that they may
        // block forever, so they are left to the process exit.
        let threads = std::mem::take(&mut self.threads);
        if gone {
            for t in threads {
                let _ = t.join();
            }
        }
        let _ = std::fs::remove_dir(&self.served.dir);
    }
}

/// What the reader threads share.
struct Server {
    dev: Arc<OwnedFd>,
    files: Vec<FileSpec>,
    counters: Arc<Counters>,
    timer: Arc<Timer>,
    seed: u64,
    sequence: AtomicU64,
    negotiate: Negotiate,
}

/// A parsed request header.
struct Req<'a> {
    opcode: u32,
    unique: u64,
    node: u64,
    body: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

/// A reply under construction: the out header, then the payload.
struct Reply(Vec<u8>);

impl Reply {
    fn new(unique: u64, error: i32) -> Reply {
        let mut v = Vec::with_capacity(128);
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(-error).to_ne_bytes());
        v.extend_from_slice(&unique.to_ne_bytes());
        Reply(v)
    }

    fn u32(&mut self, x: u32) -> &mut Self {
        self.0.extend_from_slice(&x.to_ne_bytes());
        self
    }

    fn u64(&mut self, x: u64) -> &mut Self {
        self.0.extend_from_slice(&x.to_ne_bytes());
        self
    }

    fn zeros(&mut self, n: usize) -> &mut Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }

    fn done(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

/// Write one reply to the device. ENOENT means the request was interrupted
/// or the connection aborted meanwhile: nothing waits for it any more.
fn send(fd: RawFd, reply: &[u8]) {
    // SAFETY: `reply` is a live slice of `reply.len()` bytes.
    let r = unsafe { libc::write(fd, reply.as_ptr().cast(), reply.len()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ECONNABORTED) => {}
            _ => eprintln!("FUSE reply of {} bytes refused: {e}", reply.len()),
        }
    }
}

/// SplitMix64, for fault decisions.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Server {
    fn serve(&self) {
        let fd = self.dev.as_raw_fd();
        let mut buf = vec![0u8; READ_BUF];
        loop {
            // SAFETY: `buf` is a live, exclusively owned buffer of its length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    // A signal, or a request interrupted before we read it.
                    Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::ENOENT) => continue,
                    // Unmounted or aborted: the connection is gone.
                    Some(libc::ENODEV) => return,
                    e => {
                        eprintln!("FUSE reader stops: read(/dev/fuse) failed: {e:?}");
                        return;
                    }
                }
            }
            let n = n as usize;
            if n < HDR_IN {
                eprintln!("FUSE reader: request of {n} bytes is shorter than a header");
                continue;
            }
            let req = Req {
                opcode: u32_at(&buf, 4),
                unique: u64_at(&buf, 8),
                node: u64_at(&buf, 16),
                body: &buf[HDR_IN..n],
            };
            if req.opcode == DESTROY {
                send(fd, &Reply::new(req.unique, 0).done());
                return;
            }
            if let Some(reply) = self.answer(&req) {
                send(fd, &reply);
            }
        }
    }

    /// The reply to `req`, or `None` for requests that take none (or whose
    /// reply the timer sends later).
    fn answer(&self, req: &Req<'_>) -> Option<Vec<u8>> {
        let err = |e: i32| Some(Reply::new(req.unique, e).done());
        match req.opcode {
            INIT => Some(self.init(req)),
            FORGET | BATCH_FORGET | INTERRUPT => None,
            LOOKUP => {
                if req.node != ROOT {
                    return err(libc::ENOTDIR);
                }
                let name = req.body.split(|&b| b == 0).next().unwrap_or(&[]);
                let Some(i) = self.files.iter().position(|f| f.name.as_bytes() == name) else {
                    return err(libc::ENOENT);
                };
                let mut r = Reply::new(req.unique, 0);
                // nodeid, generation, entry_valid, attr_valid (s), then nsecs.
                r.u64(i as u64 + 2).u64(1).u64(3600).u64(3600).u32(0).u32(0);
                self.attr(&mut r, i as u64 + 2);
                Some(r.done())
            }
            GETATTR => {
                if self.file(req.node).is_none() && req.node != ROOT {
                    return err(libc::ENOENT);
                }
                let mut r = Reply::new(req.unique, 0);
                r.u64(3600).u32(0).u32(0);
                self.attr(&mut r, req.node);
                Some(r.done())
            }
            OPEN => {
                let Some(f) = self.file(req.node) else {
                    return err(if req.node == ROOT {
                        libc::EISDIR
                    } else {
                        libc::ENOENT
                    });
                };
                if u32_at(req.body, 0) as i32 & libc::O_ACCMODE != libc::O_RDONLY {
                    return err(libc::EROFS);
                }
                let flags = if f.direct_io {
                    FOPEN_DIRECT_IO
                } else {
                    FOPEN_KEEP_CACHE
                };
                let mut r = Reply::new(req.unique, 0);
                r.u64(req.node).u32(flags).u32(0);
                Some(r.done())
            }
            OPENDIR if req.node == ROOT => {
                let mut r = Reply::new(req.unique, 0);
                r.u64(0).u32(0).u32(0);
                Some(r.done())
            }
            READDIR if req.node == ROOT => Some(self.readdir(req)),
            READ => self.read(req),
            RELEASE | RELEASEDIR | FLUSH => err(0),
            STATFS => {
                let mut r = Reply::new(req.unique, 0);
                let blocks: u64 = self.files.iter().map(|f| f.size.div_ceil(4096)).sum();
                // blocks, bfree, bavail, files, ffree; bsize, namelen, frsize, padding, spare.
                r.u64(blocks)
                    .u64(0)
                    .u64(0)
                    .u64(self.files.len() as u64)
                    .u64(0);
                r.u32(4096).u32(255).u32(4096).u32(0).zeros(24);
                Some(r.done())
            }
            // Everything else (xattrs, access, statx, lseek, writes…): not
            // implemented; the kernel remembers ENOSYS for most of them.
            _ => err(libc::ENOSYS),
        }
    }

    fn file(&self, node: u64) -> Option<&FileSpec> {
        node.checked_sub(2).and_then(|i| self.files.get(i as usize))
    }

    fn init(&self, req: &Req<'_>) -> Vec<u8> {
        let (major, max_readahead, offered) = (
            u32_at(req.body, 0),
            u32_at(req.body, 8),
            u32_at(req.body, 12),
        );
        if major != 7 {
            // Answering with our major makes the kernel retry or give up.
            let mut r = Reply::new(req.unique, 0);
            r.u32(7).u32(31).zeros(56);
            return r.done();
        }
        if self.negotiate == Negotiate::Libfuse2 {
            let mut r = Reply::new(req.unique, 0);
            // major, minor, max_readahead, flags, max_background and
            // congestion_threshold (0: the kernel's defaults), max_write:
            // the 24-byte reply of protocol 7.19.
            r.u32(7).u32(19).u32(max_readahead.min(128 << 10));
            r.u32(offered & FUSE_ASYNC_READ).u32(0).u32(128 << 10);
            return r.done();
        }
        let flags = offered & (FUSE_ASYNC_READ | FUSE_ASYNC_DIO | FUSE_MAX_PAGES);
        let mut r = Reply::new(req.unique, 0);
        // major, minor (7.31: full-size structs, no statx), max_readahead, flags,
        r.u32(7).u32(31).u32(max_readahead).u32(flags);
        // max_background, congestion_threshold (u16 each), max_write, time_gran,
        r.u32(64 | (48 << 16)).u32(4096).u32(1);
        // max_pages (1 MiB), map_alignment, flags2, unused[7].
        r.u32(256).u32(0).zeros(28);
        r.done()
    }

    /// `struct fuse_attr` of node `node` (the root directory or a file).
    fn attr(&self, r: &mut Reply, node: u64) {
        let (size, mode, nlink) = match self.file(node) {
            Some(f) => (f.size, libc::S_IFREG | 0o444, 1),
            None => (0, libc::S_IFDIR | 0o555, 2),
        };
        r.u64(node).u64(size).u64(size.div_ceil(512));
        r.u64(0).u64(0).u64(0).u32(0).u32(0).u32(0); // times
        r.u32(mode).u32(nlink).u32(0).u32(0).u32(0); // uid, gid, rdev
        r.u32(4096).u32(0); // blksize, flags
    }

    fn readdir(&self, req: &Req<'_>) -> Vec<u8> {
        let (offset, size) = (u64_at(req.body, 8), u32_at(req.body, 16) as usize);
        let mut entries: Vec<(u64, &[u8], u32)> = vec![(ROOT, b".", 4), (ROOT, b"..", 4)];
        for (i, f) in self.files.iter().enumerate() {
            entries.push((i as u64 + 2, f.name.as_bytes(), 8));
        }
        let mut r = Reply::new(req.unique, 0);
        for (i, (ino, name, kind)) in entries.iter().enumerate().skip(offset as usize) {
            let rec = (24 + name.len()).next_multiple_of(8);
            if r.0.len() - HDR_OUT + rec > size {
                break;
            }
            r.u64(*ino)
                .u64(i as u64 + 1)
                .u32(name.len() as u32)
                .u32(*kind);
            r.0.extend_from_slice(name);
            r.zeros(rec - 24 - name.len());
        }
        r.done()
    }

    /// READ: apply the file's faults; a delayed reply goes to the timer.
    fn read(&self, req: &Req<'_>) -> Option<Vec<u8>> {
        let Some(i) = req.node.checked_sub(2).map(|i| i as usize) else {
            return Some(Reply::new(req.unique, libc::EISDIR).done());
        };
        let Some(f) = self.files.get(i) else {
            return Some(Reply::new(req.unique, libc::ENOENT).done());
        };
        let c = &self.counters;
        let fc = &c.files[i];
        let nth = fc.reads.fetch_add(1, Ordering::SeqCst) + 1;
        let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let (offset, size) = (u64_at(req.body, 8), u32_at(req.body, 16) as u64);
        let dice = mix(self.seed ^ mix(self.sequence.fetch_add(1, Ordering::Relaxed)));

        let reply = if f.transient.is_some_and(|t| nth % t.every == 0) {
            fc.transient_replies.fetch_add(1, Ordering::SeqCst);
            Reply::new(req.unique, f.transient.unwrap().errno).done()
        } else if f
            .eio
            .as_ref()
            .is_some_and(|r| offset < r.end && r.start < offset + size && offset < f.size)
        {
            fc.eio_replies.fetch_add(1, Ordering::SeqCst);
            Reply::new(req.unique, libc::EIO).done()
        } else {
            let avail = f.size.saturating_sub(offset).min(size) as usize;
            let n = match f.short {
                Short::Full => avail,
                Short::AtMost(m) => avail.min(m),
                Short::RandomPrefix if avail > 0 => 1 + (dice % avail as u64) as usize,
                Short::RandomPrefix => 0,
            };
            if n < avail {
                fc.short_replies.fetch_add(1, Ordering::SeqCst);
            }
            let mut r = Reply::new(req.unique, 0);
            let at = r.0.len();
            r.zeros(n);
            nowait::pattern::fill(offset, &mut r.0[at..]);
            r.done()
        };
        match f.delay_ms {
            Some((lo, hi)) => {
                let ms = lo + (dice >> 32) % (hi - lo + 1);
                self.timer
                    .later(Instant::now() + Duration::from_millis(ms), reply, c);
                None
            }
            None => {
                send(self.dev.as_raw_fd(), &reply);
                c.in_flight.fetch_sub(1, Ordering::SeqCst);
                None
            }
        }
    }
}

/// Delayed READ replies, written when due by one thread.
#[derive(Default)]
struct Timer {
    state: Mutex<TimerState>,
    cv: Condvar,
}

#[derive(Default)]
struct TimerState {
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    replies: std::collections::HashMap<u64, (Vec<u8>, Arc<Counters>)>,
    next: u64,
    stop: bool,
}

impl Timer {
    fn later(&self, at: Instant, reply: Vec<u8>, c: &Arc<Counters>) {
        let mut s = self.state.lock().unwrap();
        let id = s.next;
        s.next += 1;
        s.due.push(Reverse((at, id)));
        s.replies.insert(id, (reply, c.clone()));
        self.cv.notify_one();
    }

    fn stop(&self) {
        self.state.lock().unwrap().stop = true;
        self.cv.notify_one();
    }

    /// Send each reply when due; at stop, send what is left at once.
    fn run(&self, fd: RawFd) {
        let mut s = self.state.lock().unwrap();
        loop {
            let now = Instant::now();
            match s.due.peek() {
                Some(&Reverse((at, id))) if at <= now || s.stop => {
                    s.due.pop();
                    let (reply, c) = s.replies.remove(&id).expect("a due reply is stored");
                    drop(s);
                    send(fd, &reply);
                    c.in_flight.fetch_sub(1, Ordering::SeqCst);
                    s = self.state.lock().unwrap();
                }
                Some(&Reverse((at, _))) => s = self.cv.wait_timeout(s, at - now).unwrap().0,
                None if s.stop => return,
                None => s = self.cv.wait(s).unwrap(),
            }
        }
    }
}
