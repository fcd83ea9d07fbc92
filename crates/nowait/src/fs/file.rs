//! [`File`]: a file with a cursor, read through the engine, that speaks
//! `AsyncRead`, `AsyncBufRead` and `AsyncSeek` (tokio's with the feature
//! `tokio`, the `futures-io` ones with the feature `futures-io`), and
//! positional reads into caller buffers.

use std::fmt;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::task::{Context, Poll};

use crate::engine::yielding::StreamTurn;
use crate::fs::readahead::{Front, Window};
use crate::{Buf, Direct, Engine, EngineFile, Error};

/// The default readahead limit of a [`File`] (bytes in flight or read
/// ahead and not yet consumed), as `fio --bs=1m --iodepth=8` keeps in
/// flight; a buffered file on a device the kernel reads far ahead on gets
/// [`BUFFERED_READAHEAD`] instead.
pub const DEFAULT_READAHEAD: usize = 8 << 20;

/// The default readahead limit of a buffered file whose device the kernel
/// reads at least [`KERNEL_READS_AHEAD`] ahead on (`read_ahead_kb`): the
/// kernel's own readahead keeps the device busy, and the window only has to
/// hold the reads that wait when the page cache misses. A deeper window
/// runs ahead of the kernel's and lands the data in its own buffers, to be
/// copied again (measured on a 4 GiB uncached file with `read_ahead_kb`
/// 8192: CPU 1.9–2.1 s with 8 MiB, 0.7–1.0 s with 512 KiB, at the same
/// bandwidth; docs/BENCHMARKS.md).
pub const BUFFERED_READAHEAD: usize = 512 << 10;

/// See [`BUFFERED_READAHEAD`].
pub const KERNEL_READS_AHEAD: u64 = 2 << 20;

/// The largest piece one positional read into a caller's slice asks the
/// engine for at once (bigger reads are done piece after piece): a piece
/// the page cache holds is copied in one poll, so this bounds that poll's
/// work (a few milliseconds), and the thread's turn yields between pieces.
const PIECE: usize = 8 << 20;

/// The smallest stream read tried straight from the page cache into the
/// caller's memory: below it a system call per read costs more than the
/// copy out of the window it saves (about a microsecond against a copy of
/// 128 KiB at ~10 GB/s).
const CACHE_FIRST_MIN: usize = 128 << 10;

/// The most one such try copies: it runs on the polling thread, which
/// serves other tasks (about 200 µs of copying; tokio's own file reads in
/// pieces of 2 MiB too).
const CACHE_FIRST_MAX: usize = 2 << 20;

/// How a sequential reader's large reads are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Straight from the page cache into the caller's memory
    /// (`preadv2(RWF_NOWAIT)`: one copy, by the kernel) when the window
    /// holds nothing at the cursor; a miss starts the window.
    CacheFirst,
    /// From the window's reads; back to [`Stream::CacheFirst`] once a
    /// whole window's reads were answered by the page cache at once.
    Window,
    /// From the window only: `O_DIRECT` files, and filesystems without
    /// `RWF_NOWAIT` reads.
    WindowOnly,
}

/// How to open a [`File`]: which engine, direct or buffered, how far to
/// read ahead.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    engine: Option<Engine>,
    direct: Direct,
    /// `None`: chosen at open (see [`OpenOptions::readahead`]).
    readahead: Option<usize>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl OpenOptions {
    /// The defaults: the process's shared engine ([`crate::fs::engine`]),
    /// buffered ([`Direct::Off`], as `tokio::fs::File`), the readahead
    /// limit chosen at open (see [`OpenOptions::readahead`]).
    pub fn new() -> OpenOptions {
        OpenOptions {
            engine: None,
            direct: Direct::Off,
            readahead: None,
        }
    }

    /// Read through this engine instead of the shared one.
    pub fn engine(&mut self, engine: &Engine) -> &mut Self {
        self.engine = Some(engine.clone());
        self
    }

    /// `O_DIRECT` or not (see [`Direct`]): direct reads skip the page
    /// cache, and the kernel reads nothing ahead for them; the file's own
    /// readahead window does.
    pub fn direct(&mut self, direct: Direct) -> &mut Self {
        self.direct = direct;
        self
    }

    /// The most bytes a sequential reader keeps in flight or read ahead
    /// (at least 128 KiB; 0 asks for that least). Unset, it is chosen at
    /// open: [`BUFFERED_READAHEAD`] for a buffered file on a device whose
    /// `read_ahead_kb` is at least [`KERNEL_READS_AHEAD`], else
    /// [`DEFAULT_READAHEAD`] (an `O_DIRECT` file gets no readahead but the
    /// window's).
    pub fn readahead(&mut self, bytes: usize) -> &mut Self {
        self.readahead = Some(bytes);
        self
    }

    fn engine_or_shared(&self) -> io::Result<Engine> {
        match &self.engine {
            Some(e) => Ok(e.clone()),
            None => crate::fs::shared::engine(),
        }
    }

    /// Open `path` for reading (`open(2)`, done on the calling thread: it
    /// does not wait for file data).
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        self.open_now(path)
    }

    /// [`OpenOptions::open`], without a future.
    pub fn open_now(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let engine = self.engine_or_shared()?;
        let file = engine.open(path, self.direct)?;
        Ok(File::new(file, 0, self.readahead))
    }

    /// Read an open `std::fs::File` from its current position (see
    /// [`crate::File::from_std`]; the direct mode is the descriptor's).
    pub fn from_std(&self, mut file: std::fs::File) -> io::Result<File> {
        use std::io::Seek;
        let pos = file.stream_position()?;
        let engine = self.engine_or_shared()?;
        let file = engine.file(crate::File::from_std(file)?);
        Ok(File::new(file, pos, self.readahead))
    }
}

/// An open file read through the nowait engine, with a cursor: the
/// `AsyncRead`/`AsyncBufRead`/`AsyncSeek` file of tokio (feature `tokio`)
/// and of `futures-io` (feature `futures-io`, for smol, async-std and the
/// `futures` crate's adapters), and positional reads that leave the cursor
/// alone.
///
/// Sequential reads keep a window of reads in flight ahead of the cursor
/// (see [`crate::fs::readahead`]): it starts at 256 KiB and doubles while
/// the reader stays sequential, up to the limit given at open
/// ([`OpenOptions::readahead`]; unset, [`DEFAULT_READAHEAD`], or
/// [`BUFFERED_READAHEAD`] for a buffered file the kernel reads far ahead
/// of itself). A seek
/// inside the window keeps what is already read; a seek out of it drops the
/// window without waiting (dropped reads' buffers stay with the engine
/// until the kernel is done with them). Reads happen on the ring of the
/// thread that polls them, wherever the task moves.
///
/// A buffered file's large reads (`poll_read` with room for 128 KiB or
/// more) skip the window while the page cache holds the data: with nothing
/// of the window at the cursor, the read is tried straight into the
/// caller's buffer with `preadv2(RWF_NOWAIT)` (at most 2 MiB a call), so
/// the kernel's copy is the only one. The first miss starts the window
/// there, at the size it had; once a whole window's reads are answered by
/// the page cache at once, large reads go straight to it again after the
/// window is drained. Small reads, [`File::poll_fill`] (`AsyncBufRead`),
/// `O_DIRECT` files and filesystems without `RWF_NOWAIT` reads (tmpfs)
/// always use the window. `AsyncBufRead` (`fill_buf`/`consume`,
/// `tokio::io::copy_buf`) lends the window's buffers in place: on an
/// `O_DIRECT` file, where the device writes into them, nothing is copied
/// at all.
///
/// Which buffer shape each method takes, and why:
///
/// * The stream traits and [`File::read_at`] / [`File::read_exact_at`]
///   fill a **borrowed** buffer (`&mut [u8]`, tokio's `ReadBuf`). A future
///   may be dropped while the kernel still owns the read's memory, and a
///   borrowed buffer is handed back to its owner as soon as the future is
///   gone, so the kernel never gets it: it reads into an engine-owned
///   buffer and the bytes are copied over when the read completes (a
///   second page-cache try straight into the slice was measured: on
///   uncached files it costs a second `preadv2` per read, ~30% of the
///   IOPS, for a 4 KiB copy saved on cached ones).
/// * [`File::read_owned_at`] / [`File::read_exact_owned_at`] take an
///   **owned** `Vec<u8>` or `bytes::BytesMut` and read into its spare
///   capacity with no copy: the buffer moves into the engine with the read
///   and comes back with the result; a dropped future leaves it with the
///   engine, which frees it when the kernel is done.
/// * [`File::engine_file`] gives the engine's own `read_at(Buf, offset)`,
///   with an aligned [`Buf`] (what `O_DIRECT` needs).
pub struct File {
    file: EngineFile,
    /// The cursor.
    pos: u64,
    /// The file's size as last seen (`fstat(2)`), bounding the window.
    size: u64,
    window: Window,
    /// Where large reads come from now.
    stream: Stream,
    /// A tokio `start_seek` whose answer `poll_complete` has not given yet.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    seeked: Option<io::Result<u64>>,
    /// What the stream reads answered since they last returned `Pending`
    /// (they yield when it reaches [`YIELD_READS`](crate::YIELD_READS) or
    /// [`YIELD_BYTES`](crate::YIELD_BYTES)).
    turn: StreamTurn,
    /// The I/O priority of its positional reads ([`File::set_ioprio`]).
    ioprio: u16,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("path", &self.file.file().path())
            .field("direct", &self.file.file().is_direct())
            .field("pos", &self.pos)
            .field("readahead", &self.window.target())
            .finish()
    }
}

impl AsRef<EngineFile> for File {
    fn as_ref(&self) -> &EngineFile {
        &self.file
    }
}

impl File {
    fn new(file: EngineFile, pos: u64, readahead: Option<usize>) -> File {
        let align = file.file().dio_align();
        let direct = file.file().is_direct();
        let readahead = readahead.unwrap_or_else(|| {
            let kernel = if direct {
                None
            } else {
                file.file().kernel_readahead()
            };
            match kernel {
                Some(k) if k >= KERNEL_READS_AHEAD => BUFFERED_READAHEAD,
                _ => DEFAULT_READAHEAD,
            }
        });
        let (off, mem) = if direct {
            (u64::from(align.offset), align.mem as usize)
        } else {
            (1, crate::PAGE)
        };
        File {
            file,
            pos,
            size: 0,
            window: Window::new(readahead, off, mem),
            stream: if direct {
                Stream::WindowOnly
            } else {
                Stream::CacheFirst
            },
            seeked: None,
            turn: StreamTurn::default(),
            ioprio: 0,
        }
    }

    /// Open `path` for reading, buffered, through the process's shared
    /// engine (as `tokio::fs::File::open`; [`OpenOptions`] for the rest).
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().open_now(path)
    }

    /// Options: engine, direct mode, readahead.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Read an open `std::fs::File` from its current position through the
    /// shared engine (as `tokio::fs::File::from_std`; it fails where the
    /// descriptor cannot be read: a directory, a fifo).
    pub fn from_std(file: std::fs::File) -> io::Result<File> {
        OpenOptions::new().from_std(file)
    }

    /// The engine's file: `read_at(Buf, offset)`, `read_many`, and what
    /// was learned at open (`file().is_direct()`, `file().len()`).
    pub fn engine_file(&self) -> &EngineFile {
        &self.file
    }

    /// The cursor's position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Bytes the readahead window keeps in flight or unconsumed right now
    /// (it grows while the reader stays sequential).
    pub fn readahead_now(&self) -> usize {
        self.window.target()
    }

    /// The file's size now (`fstat(2)`).
    pub fn len(&self) -> io::Result<u64> {
        Ok(self.file.file().len()?)
    }

    /// True if the file is empty now.
    pub fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Move the cursor (`lseek(2)`'s rules: past the end is allowed, before
    /// 0 is an error); see the type's docs for what happens to the window.
    pub fn seek_now(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => {
                self.size = self.len()?;
                self.size.checked_add_signed(d)
            }
        };
        let Some(t) = target.filter(|&t| t <= i64::MAX as u64) else {
            return Err(Error::BadPosition {
                path: self.file.file().path().into(),
                asked: format!("seek to {to:?} from position {}", self.pos),
            }
            .into());
        };
        if t != self.pos {
            let cov = self.window.covers();
            if cov.contains(&t) {
                self.window.skip_to(t);
            } else {
                self.window.reset(t);
            }
            self.pos = t;
        }
        Ok(t)
    }

    /// The bytes at the cursor (empty at end of file), reading ahead.
    ///
    /// Like every stream read, a bounded piece of work: it hands out at most
    /// what the stream's turn has left ([`YIELD_BYTES`](crate::YIELD_BYTES)), and yields first
    /// when the turn ([`YIELD_READS`](crate::YIELD_READS) answers) or tokio's cooperative budget is spent.
    pub fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let Some(grant) = self.turn.begin(cx) else {
            return Poll::Pending;
        };
        let max = self.turn.room();
        let r = self.poll_window(cx, true).map_ok(|d| d.len().min(max));
        self.turn.done(grant, ready_bytes(&r));
        match r {
            // Borrowed again: the window's data at the cursor.
            Poll::Ready(Ok(n)) => Poll::Ready(Ok(&self.window.data(self.pos)[..n])),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The bytes at the cursor from the window; `ahead`: keep the window's
    /// target in flight (else only drain what it holds).
    fn poll_window(&mut self, cx: &mut Context<'_>, ahead: bool) -> Poll<io::Result<&[u8]>> {
        if !self.window.covers().contains(&self.pos) {
            if self.pos >= self.size {
                // At the end as last seen: has the file grown?
                self.size = self.len()?;
                if self.pos >= self.size {
                    return Poll::Ready(Ok(&[]));
                }
            }
            self.window.restart(self.pos);
        }
        if ahead || self.window.held() == 0 {
            self.window.fill(&self.file, self.size, cx);
        }
        match std::task::ready!(self.window.poll_front(self.pos, cx)) {
            Front::Data => Poll::Ready(Ok(self.window.data(self.pos))),
            Front::Failed(e) => Poll::Ready(Err(e)),
            Front::Eof => {
                // A short read: the file ended there when it was read.
                // Drop the reads; the next poll asks the size again.
                self.window.restart(self.pos);
                self.size = self.size.min(self.pos);
                Poll::Ready(Ok(&[]))
            }
        }
    }

    /// Move the cursor past `n` bytes of what [`File::poll_fill`] gave.
    pub fn consume(&mut self, n: usize) {
        self.pos += n as u64;
        self.window.consumed(self.pos, n);
        if self.stream == Stream::Window && self.window.inline_run() >= self.window.target() {
            // The page cache answered a whole window at once: large reads
            // go straight to it again once the window is drained.
            self.stream = Stream::CacheFirst;
        }
    }

    /// Copy what is ready at the cursor into `dst`, waiting only if nothing
    /// is: a read of many chunks takes every chunk already finished, up to
    /// what the stream's turn has left ([`YIELD_BYTES`](crate::YIELD_BYTES)); a call after the
    /// turn or tokio's cooperative budget is spent yields first.
    pub fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_copy(cx, &mut SliceSink { dst, at: 0 })
    }

    /// A large read with nothing of the window at the cursor, tried straight
    /// from the page cache into `sink` ([`Stream::CacheFirst`]): `Some(n)`
    /// bytes read (0 at end of file), or `None`: the window reads from here.
    fn try_cache_first(&mut self, sink: &mut dyn Sink, max: usize) -> io::Result<Option<usize>> {
        if self.pos >= self.size {
            // At the end as last seen: has the file grown?
            self.size = self.len()?;
            if self.pos >= self.size {
                return Ok(Some(0));
            }
        }
        let want = max.min(CACHE_FIRST_MAX);
        let (n, can) = sink.try_cached(self.file.file(), self.pos, want);
        if n > 0 {
            self.pos += n as u64;
            self.size = self.size.max(self.pos);
            return Ok(Some(n));
        }
        self.stream = if can {
            Stream::Window
        } else {
            Stream::WindowOnly
        };
        self.window.resume(self.pos);
        Ok(None)
    }

    /// Hand `sink` what is ready at the cursor, as much as it has room for
    /// and the stream's turn allows, waiting only if nothing is; an error
    /// after some bytes is left for the next call (the window re-reads the
    /// failed chunk then).
    fn poll_copy(&mut self, cx: &mut Context<'_>, sink: &mut dyn Sink) -> Poll<io::Result<usize>> {
        if sink.room() == 0 {
            return Poll::Ready(Ok(0));
        }
        let Some(grant) = self.turn.begin(cx) else {
            return Poll::Pending;
        };
        // A large read gets at least one page-cache try's worth.
        let r = self.poll_copy_some(cx, sink, self.turn.room().max(CACHE_FIRST_MIN));
        self.turn.done(grant, ready_bytes(&r));
        r
    }

    /// [`File::poll_copy`]'s work: at most `max` bytes.
    fn poll_copy_some(
        &mut self,
        cx: &mut Context<'_>,
        sink: &mut dyn Sink,
        max: usize,
    ) -> Poll<io::Result<usize>> {
        let room = sink.room().min(max);
        let mut done = 0;
        while done < room {
            let large = room - done >= CACHE_FIRST_MIN;
            let cache_first = self.stream == Stream::CacheFirst && large;
            if cache_first && !self.window.covers().contains(&self.pos) {
                match self.try_cache_first(sink, room - done) {
                    Ok(Some(n)) => {
                        done += n;
                        // One try per call: it is a copy on this thread.
                        break;
                    }
                    Ok(None) => {}
                    Err(e) if done == 0 => return Poll::Ready(Err(e)),
                    Err(_) => break,
                }
            }
            let ahead = self.stream != Stream::CacheFirst || !large;
            let d = match self.poll_window(cx, ahead) {
                Poll::Ready(Ok(d)) => d,
                Poll::Ready(Err(e)) if done == 0 => return Poll::Ready(Err(e)),
                Poll::Pending if done == 0 => return Poll::Pending,
                Poll::Ready(Err(_)) | Poll::Pending => break,
            };
            if d.is_empty() {
                break;
            }
            let n = d.len().min(room - done);
            sink.put(&d[..n]);
            done += n;
            self.consume(n);
        }
        Poll::Ready(Ok(done))
    }

    /// Give the file's positional reads ([`File::read_at`],
    /// [`File::read_exact_at`], [`File::read_owned_at`],
    /// [`File::read_exact_owned_at`]) I/O priority `prio`
    /// ([`crate::ioprio`]: class and level; 0, the default, for the calling
    /// thread's), as [`ReadAt::ioprio`](crate::ReadAt::ioprio) does for
    /// one read. The cursor's reads (`AsyncRead`, and what it reads
    /// ahead) keep the thread's. A priority the kernel refuses fails a read
    /// that reaches it with EINVAL or EPERM; a read the page cache answers
    /// needs none.
    pub fn set_ioprio(&mut self, prio: u16) {
        self.ioprio = prio;
    }

    /// Read up to `dst.len()` bytes at `offset` into a borrowed slice,
    /// leaving the cursor alone; fewer only at end of file. The engine
    /// reads into a buffer of its own (its first poll tries the page cache
    /// with `preadv2(RWF_NOWAIT)`, as every engine read does) and the bytes
    /// are copied into `dst` when it completes (see the type's docs for
    /// why). Dropping the future leaves `dst` untouched by anything after.
    pub async fn read_at(&self, dst: &mut [u8], offset: u64) -> io::Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        let f = self.file.file();
        let mem_align = if f.is_direct() {
            (f.dio_align().mem as usize).max(crate::PAGE)
        } else {
            crate::PAGE
        };
        let mut done = 0;
        while done < dst.len() {
            let want = (dst.len() - done).min(PIECE);
            let buf = Buf::with_align(want, mem_align);
            let read = self.file.read_at(buf, offset + done as u64);
            let (r, buf) = read.ioprio(self.ioprio).await;
            let n = r?;
            dst[done..done + n].copy_from_slice(&buf.as_slice()[..n]);
            done += n;
            if n < want {
                break;
            }
        }
        Ok(done)
    }

    /// Read exactly `dst.len()` bytes at `offset` ([`File::read_at`]); end
    /// of file before that is an [`io::ErrorKind::UnexpectedEof`] error.
    pub async fn read_exact_at(&self, dst: &mut [u8], offset: u64) -> io::Result<()> {
        let len = dst.len();
        let got = self.read_at(dst, offset).await?;
        self.exact(offset, len, got)
    }

    fn exact(&self, offset: u64, len: usize, got: usize) -> io::Result<()> {
        if got == len {
            return Ok(());
        }
        Err(Error::UnexpectedEof {
            path: self.file.file().path().into(),
            offset,
            len,
            got,
        }
        .into())
    }

    /// Read into the spare capacity of an owned buffer (`Vec<u8>` or
    /// `bytes::BytesMut`: from its length up to its capacity) at `offset`,
    /// with no copy, and hand it back with the bytes read appended; fewer
    /// than the spare capacity only at end of file. Reserve first
    /// (`buf.reserve(n)`) to say how much to read. On a direct file the
    /// engine bounces a read into memory less aligned than the file needs
    /// ([`Direct::Auto`]). If the engine fails the read after taking the
    /// buffer (a failed `io_uring_enter`) the buffer stays with it until
    /// the kernel is done, and an empty one comes back.
    pub async fn read_owned_at<B: OwnedBuf>(&self, buf: B, offset: u64) -> (io::Result<usize>, B) {
        let read = self.file.read_at(buf.into_buf(), offset);
        let (r, b) = read.ioprio(self.ioprio).await;
        (r, B::from_buf(b))
    }

    /// [`File::read_owned_at`] that fills the whole spare capacity; end of
    /// file before that is an [`io::ErrorKind::UnexpectedEof`] error (the
    /// bytes before it are appended all the same).
    pub async fn read_exact_owned_at<B: OwnedBuf>(
        &self,
        buf: B,
        offset: u64,
    ) -> (io::Result<()>, B) {
        let want = buf.spare();
        let (r, b) = self.read_owned_at(buf, offset).await;
        (r.and_then(|got| self.exact(offset, want, got)), b)
    }
}

/// The bytes a stream poll handed out, 0 for an error, `None` if it
/// returned `Pending` (see [`StreamTurn::done`]).
fn ready_bytes(r: &Poll<io::Result<usize>>) -> Option<usize> {
    match r {
        Poll::Ready(Ok(n)) => Some(*n),
        Poll::Ready(Err(_)) => Some(0),
        Poll::Pending => None,
    }
}

/// An owned buffer a read can land in with no copy: its spare capacity
/// (from its length to its capacity) is handed to the engine with the
/// read, and the bytes read are appended. Implemented for `Vec<u8>` and
/// `bytes::BytesMut`.
pub trait OwnedBuf: Send + Sized + 'static {
    /// Bytes a read into it asks for.
    fn spare(&self) -> usize;
    /// The engine's buffer over its spare capacity.
    fn into_buf(self) -> Buf;
    /// Back from the engine's buffer, the bytes read appended.
    fn from_buf(buf: Buf) -> Self;
}

impl OwnedBuf for Vec<u8> {
    fn spare(&self) -> usize {
        self.capacity() - self.len()
    }
    fn into_buf(self) -> Buf {
        Buf::from_vec(self)
    }
    fn from_buf(buf: Buf) -> Self {
        // Only an engine that failed after taking the buffer hands back
        // another (an empty one): the caller's stays with the kernel's read.
        buf.into_vec().unwrap_or_default()
    }
}

impl OwnedBuf for bytes::BytesMut {
    fn spare(&self) -> usize {
        self.capacity() - self.len()
    }
    fn into_buf(self) -> Buf {
        Buf::from_vec(Vec::from(self))
    }
    fn from_buf(buf: Buf) -> Self {
        bytes::BytesMut::from(bytes::Bytes::from(Vec::<u8>::from_buf(buf)))
    }
}

/// Where a stream read's bytes go: a caller's slice, or tokio's `ReadBuf`.
trait Sink {
    /// Bytes it can still take.
    fn room(&self) -> usize;
    /// Append `d` (at most [`Sink::room`] bytes).
    fn put(&mut self, d: &[u8]);
    /// Append up to `max` bytes at `offset` of `file` straight from the page
    /// cache: see `page_cache::try_read::stream` for the answer.
    fn try_cached(&mut self, file: &crate::File, offset: u64, max: usize) -> (usize, bool);
}

/// A caller's slice, filled from `at` on.
struct SliceSink<'a> {
    dst: &'a mut [u8],
    at: usize,
}

impl Sink for SliceSink<'_> {
    fn room(&self) -> usize {
        self.dst.len() - self.at
    }
    fn put(&mut self, d: &[u8]) {
        self.dst[self.at..self.at + d.len()].copy_from_slice(d);
        self.at += d.len();
    }
    fn try_cached(&mut self, file: &crate::File, offset: u64, max: usize) -> (usize, bool) {
        let end = self.at + max.min(self.room());
        let dst = &mut self.dst[self.at..end];
        let len = dst.len();
        let (n, can) = crate::page_cache::try_read::stream(file, dst, len, offset);
        self.at += n;
        (n, can)
    }
}

#[cfg(feature = "tokio")]
mod tokio_io {
    use std::io::{self, SeekFrom};
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, ReadBuf};

    use crate::fs::file::{File, Sink};

    impl AsyncRead for File {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            self.get_mut().poll_copy(cx, buf).map_ok(|_| ())
        }
    }

    impl Sink for ReadBuf<'_> {
        fn room(&self) -> usize {
            self.remaining()
        }
        fn put(&mut self, d: &[u8]) {
            self.put_slice(d)
        }
        fn try_cached(&mut self, file: &crate::File, offset: u64, max: usize) -> (usize, bool) {
            let len = max.min(self.remaining());
            crate::page_cache::try_read::stream(file, self, len, offset)
        }
    }

    impl AsyncBufRead for File {
        fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
            self.get_mut().poll_fill(cx)
        }

        fn consume(self: Pin<&mut Self>, amt: usize) {
            File::consume(self.get_mut(), amt)
        }
    }

    impl AsyncSeek for File {
        fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
            let this = self.get_mut();
            // The seek is done here (no system call waits for the device);
            // `poll_complete` hands out its answer.
            let r = this.seek_now(position);
            this.seeked = Some(r);
            Ok(())
        }

        fn poll_complete(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
            let this = self.get_mut();
            Poll::Ready(this.seeked.take().unwrap_or(Ok(this.pos)))
        }
    }
}

#[cfg(feature = "futures-io")]
mod futures_impls {
    use futures_io::{AsyncBufRead, AsyncRead, AsyncSeek};
    use std::io::{self, SeekFrom};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use crate::fs::file::File;

    impl AsyncRead for File {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            self.get_mut().poll_read_into(cx, buf)
        }
    }

    impl AsyncBufRead for File {
        fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
            self.get_mut().poll_fill(cx)
        }

        fn consume(self: Pin<&mut Self>, amt: usize) {
            File::consume(self.get_mut(), amt)
        }
    }

    impl AsyncSeek for File {
        fn poll_seek(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            pos: SeekFrom,
        ) -> Poll<io::Result<u64>> {
            Poll::Ready(self.get_mut().seek_now(pos))
        }
    }
}
