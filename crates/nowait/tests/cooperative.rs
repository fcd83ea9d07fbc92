//! Cooperative reads: every read gives the executor back after a bounded
//! amount of work per poll ([`nowait::YIELD_BYTES`], [`nowait::YIELD_READS`]),
//! on tokio's current-thread and multi-thread runtimes and on a futures-io
//! executor (smol), for a cached, an evicted and an `O_DIRECT` file.
//!
//! The assertions count, they do not time: the bytes a reader is handed in
//! one poll of its task, and whether a ticker task ran between two polls of
//! the reader. The timeouts are a millisecond against a read of tens of
//! milliseconds; after each, the dropped read leaves nothing in flight and
//! the file reads correctly again.
#![cfg(all(feature = "tokio", feature = "futures-io"))]

mod common;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use nowait::fs::File;
use nowait::{Direct, Engine, YIELD_BYTES};

/// Large enough that reading it takes many turns (tens of milliseconds).
const SIZE: u64 = 64 << 20;

/// The most a reader may be handed in one poll of its task: the thread's
/// turn, plus the one read that crosses it (a stream read copies at most a
/// window chunk or a page-cache try, 1 MiB and 2 MiB; one `ReadAt` its own
/// length, 1 MiB here).
const PER_POLL_MAX: u64 = (YIELD_BYTES as u64) + (2 << 20);

const STALL: Duration = Duration::from_secs(30);

/// How the file is read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// In the page cache.
    Cached,
    /// Dropped from the page cache before each read (`fsync`, then
    /// `posix_fadvise(DONTNEED)`).
    Evicted,
    /// `O_DIRECT`.
    Direct,
}

/// The test files: one buffered (cached and evicted), one on a filesystem
/// that takes `O_DIRECT` (skipped loudly where none does).
struct Files {
    _dirs: Vec<tempfile::TempDir>,
    buffered: PathBuf,
    direct: Option<PathBuf>,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let buffered = common::pattern_file(dir.path(), "buffered", SIZE);
    let mut dirs = vec![dir];
    let direct = match common::direct_dir() {
        Ok(d) => {
            let p = common::pattern_file(d.path(), "direct", SIZE);
            dirs.push(d);
            Some(p)
        }
        Err(why) => {
            common::skip("cooperative direct", &why);
            None
        }
    };
    Files {
        _dirs: dirs,
        buffered,
        direct,
    }
}

impl Files {
    fn kinds(&self) -> Vec<(Kind, &Path)> {
        let mut v = vec![
            (Kind::Cached, self.buffered.as_path()),
            (Kind::Evicted, self.buffered.as_path()),
        ];
        if let Some(d) = &self.direct {
            v.push((Kind::Direct, d.as_path()));
        }
        v
    }
}

/// Ready `path` for a read of `kind`: cached or evicted.
fn prepare(kind: Kind, path: &Path) {
    match kind {
        Kind::Cached => {
            // Read it once through std: every page in the cache.
            let v = std::fs::read(path).unwrap();
            assert_eq!(v.len() as u64, SIZE);
        }
        Kind::Evicted => {
            let f = std::fs::File::open(path).unwrap();
            f.sync_all().unwrap();
            let nf = nowait::File::open(path, Direct::Off).unwrap();
            nf.drop_cache().unwrap();
        }
        Kind::Direct => {}
    }
}

fn open(engine: &Engine, kind: Kind, path: &Path) -> File {
    let direct = if kind == Kind::Direct {
        Direct::On
    } else {
        Direct::Off
    };
    File::options()
        .engine(engine)
        .direct(direct)
        .open_now(path)
        .unwrap()
}

/// Wait until the engine has nothing in flight, dropped reads included:
/// every buffer is back.
fn settle(engine: &Engine, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = engine.stats();
        if s.in_flight == 0 && s.abandoned == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: reads still held by the engine after a dropped read: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn check_all(data: &[u8], what: &str) {
    assert_eq!(data.len() as u64, SIZE, "{what}: length");
    if let Err(m) = nowait::pattern::check(0, data) {
        panic!("{what}: {m}");
    }
}

/// What the reader's polls saw: per poll, the ticker's count before it,
/// the bytes the reader was handed during it, and whether it was ready.
#[derive(Default)]
struct Record {
    polls: Vec<(u64, u64, bool)>,
}

impl Record {
    /// The ticker ran between every two polls of the reader, and no poll
    /// handed out more than [`PER_POLL_MAX`].
    fn assert_cooperative(&self, what: &str) {
        let n = self.polls.len();
        let most = self.polls.iter().map(|p| p.1).max().unwrap_or(0);
        assert!(
            most <= PER_POLL_MAX,
            "{what}: one poll of the reader handed out {most} bytes (at most {PER_POLL_MAX}); {n} polls"
        );
        // A 64 MiB read in turns of a few MiB: many polls.
        assert!(
            n as u64 >= SIZE / PER_POLL_MAX,
            "{what}: the read took only {n} polls"
        );
        let starved = self.polls.windows(2).filter(|w| w[1].0 == w[0].0).count();
        assert_eq!(
            starved, 0,
            "{what}: the ticker did not run between {starved} of {n} consecutive polls of the reader"
        );
    }
}

/// A future that records each poll into `rec` (see [`Record`]).
struct Watched<F> {
    inner: Pin<Box<F>>,
    ticks: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    rec: Arc<std::sync::Mutex<Record>>,
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let ticks = self.ticks.load(Ordering::SeqCst);
        let before = self.bytes.load(Ordering::SeqCst);
        let r = self.inner.as_mut().poll(cx);
        let got = self.bytes.load(Ordering::SeqCst) - before;
        self.rec
            .lock()
            .unwrap()
            .polls
            .push((ticks, got, r.is_ready()));
        r
    }
}

/// A reader that counts the bytes it hands out (tokio's and futures-io's
/// `AsyncRead`).
struct Counting {
    file: File,
    bytes: Arc<AtomicU64>,
}

impl tokio::io::AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.file).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.bytes.fetch_add(n as u64, Ordering::SeqCst);
        r
    }
}

impl futures_io::AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.file).poll_read(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.bytes.fetch_add(n as u64, Ordering::SeqCst);
        }
        r
    }
}

/// Which executor drives the reader and the ticker.
#[derive(Clone, Copy, Debug)]
enum Exec {
    TokioCurrent,
    /// Multi-thread with one worker: the reader and the ticker share it.
    TokioMulti,
    Smol,
}

const EXECS: [Exec; 3] = [Exec::TokioCurrent, Exec::TokioMulti, Exec::Smol];

fn tokio_rt(exec: Exec) -> tokio::runtime::Runtime {
    match exec {
        Exec::TokioCurrent => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap(),
    }
}

/// Run `read` (handed the counter of bytes it is given) beside a ticker
/// task that counts its turns, on `exec`; the reader's polls recorded.
fn beside_ticker<T, F>(
    exec: Exec,
    read: impl FnOnce(Arc<AtomicU64>) -> F + Send + 'static,
) -> (T, Record)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let ticks = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let rec = Arc::new(std::sync::Mutex::new(Record::default()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watched = Watched {
        inner: Box::pin(read(bytes.clone())),
        ticks: ticks.clone(),
        bytes,
        rec: rec.clone(),
    };
    let ticker = {
        let (ticks, done) = (ticks.clone(), done.clone());
        async move {
            while !done.load(Ordering::SeqCst) {
                ticks.fetch_add(1, Ordering::SeqCst);
                // Ready again at once (a self-wake): the ticker is always
                // in the run queue, as a task woken by anything would be.
                let mut once = false;
                std::future::poll_fn(|cx| {
                    if std::mem::replace(&mut once, true) {
                        Poll::Ready(())
                    } else {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                })
                .await;
            }
        }
    };
    let out = match exec {
        Exec::TokioCurrent | Exec::TokioMulti => {
            let rt = tokio_rt(exec);
            rt.block_on(async move {
                let t = tokio::spawn(ticker);
                // The reader as a task of its own, so the two share the
                // one thread only through the scheduler.
                let out = tokio::spawn(watched).await.unwrap();
                done.store(true, Ordering::SeqCst);
                t.await.unwrap();
                out
            })
        }
        Exec::Smol => {
            let ex = smol::LocalExecutor::new();
            smol::block_on(ex.run(async {
                let t = ex.spawn(ticker);
                let out = ex.spawn(watched).await;
                done.store(true, Ordering::SeqCst);
                t.await;
                out
            }))
        }
    };
    let rec = std::mem::take(&mut *rec.lock().unwrap());
    (out, rec)
}

/// `read_to_end` of a large file gives the executor back every few MiB:
/// a ticker task on the same thread runs between every two polls of the
/// reader, on each executor, cached, evicted and `O_DIRECT`. (Before the
/// cooperative budget, the whole cached file was read in one poll.)
#[test]
fn read_to_end_lets_a_ticker_run_between_polls() {
    common::watchdog("read_to_end beside a ticker", STALL, |p| {
        let files = files();
        let engine = Engine::new().unwrap();
        for exec in EXECS {
            for (kind, path) in files.kinds() {
                let what = format!("{exec:?} {kind:?}");
                p.step(|| what.clone());
                prepare(kind, path);
                let file = open(&engine, kind, path);
                let (data, rec) = beside_ticker(exec, move |bytes| async move {
                    let mut r = Counting { file, bytes };
                    let mut v = Vec::new();
                    match exec {
                        Exec::Smol => {
                            smol::io::AsyncReadExt::read_to_end(&mut r, &mut v)
                                .await
                                .unwrap();
                        }
                        _ => {
                            tokio::io::AsyncReadExt::read_to_end(&mut r, &mut v)
                                .await
                                .unwrap();
                        }
                    }
                    v
                });
                check_all(&data, &what);
                rec.assert_cooperative(&what);
                eprintln!("{what}: {} polls", rec.polls.len());
            }
        }
    });
}

/// `AsyncBufRead` (`fill_buf`/`consume`, as `tokio::io::copy_buf` drives
/// it) hands out at most a turn per poll too.
#[test]
fn fill_buf_lets_a_ticker_run_between_polls() {
    common::watchdog("fill_buf beside a ticker", STALL, |p| {
        let files = files();
        let engine = Engine::new().unwrap();
        for exec in [Exec::TokioCurrent, Exec::Smol] {
            for (kind, path) in files.kinds() {
                let what = format!("{exec:?} {kind:?} fill_buf");
                p.step(|| what.clone());
                prepare(kind, path);
                let mut file = open(&engine, kind, path);
                let (data, rec) = beside_ticker(exec, move |bytes| async move {
                    let mut v = Vec::new();
                    loop {
                        // What the window lends, copied out (as a BufRead
                        // consumer does), then consumed.
                        let d = std::future::poll_fn(|cx| {
                            file.poll_fill(cx).map(|r| r.map(|d| d.to_vec()))
                        })
                        .await
                        .unwrap();
                        if d.is_empty() {
                            break;
                        }
                        file.consume(d.len());
                        bytes.fetch_add(d.len() as u64, Ordering::SeqCst);
                        v.extend_from_slice(&d);
                    }
                    v
                });
                check_all(&data, &what);
                let most = rec.polls.iter().map(|p| p.1).max().unwrap_or(0);
                assert!(
                    most <= PER_POLL_MAX,
                    "{what}: one poll handed out {most} bytes"
                );
            }
        }
    });
}

/// Positional engine reads that the page cache answers in their first
/// poll (`ReadAt`, no op, no ring) count against the thread's turn: a task
/// reading a cached file 1 MiB at a time yields every few MiB.
#[test]
fn first_poll_hits_yield_every_turn() {
    common::watchdog("first-poll hits beside a ticker", STALL, |p| {
        let files = files();
        let engine = Engine::new().unwrap();
        for exec in EXECS {
            let what = format!("{exec:?} ReadAt cached");
            p.step(|| what.clone());
            prepare(Kind::Cached, &files.buffered);
            let f = engine.open(&files.buffered, Direct::Off).unwrap();
            let (data, rec) = beside_ticker(exec, move |bytes| async move {
                let mut v = Vec::with_capacity(SIZE as usize);
                let chunk = 1usize << 20;
                let mut off = 0u64;
                while off < SIZE {
                    let (r, buf) = f.read_at(nowait::Buf::new(chunk), off).await;
                    let n = r.unwrap();
                    v.extend_from_slice(&buf.as_slice()[..n]);
                    bytes.fetch_add(n as u64, Ordering::SeqCst);
                    off += n as u64;
                }
                v
            });
            check_all(&data, &what);
            rec.assert_cooperative(&what);
        }
    });
}

/// A millisecond's timeout fires in the middle of `read_to_end` of a
/// large file (it cannot finish in a millisecond), on each executor; the
/// dropped read leaves nothing with the engine, and the file then reads
/// whole and correct.
#[test]
fn timeout_fires_mid_read_to_end_and_the_file_reads_again() {
    common::watchdog("timeout mid read_to_end", STALL, |p| {
        let files = files();
        let engine = Engine::new().unwrap();
        for exec in EXECS {
            for (kind, path) in files.kinds() {
                let what = format!("{exec:?} {kind:?} timeout");
                p.step(|| what.clone());
                prepare(kind, path);
                let mut file = open(&engine, kind, path);
                let timed_out = match exec {
                    Exec::Smol => smol::block_on(async {
                        let mut v = Vec::new();
                        let read = async {
                            smol::io::AsyncReadExt::read_to_end(&mut file, &mut v)
                                .await
                                .unwrap();
                            false
                        };
                        let timer = async {
                            smol::Timer::after(Duration::from_millis(1)).await;
                            true
                        };
                        smol::future::or(read, timer).await
                    }),
                    _ => tokio_rt(exec).block_on(async {
                        let mut v = Vec::new();
                        tokio::time::timeout(
                            Duration::from_millis(1),
                            tokio::io::AsyncReadExt::read_to_end(&mut file, &mut v),
                        )
                        .await
                        .is_err()
                    }),
                };
                assert!(
                    timed_out,
                    "{what}: a 1 ms timeout around read_to_end of {SIZE} bytes did not fire"
                );
                // The same file, read from the start again, and a fresh one.
                let data = tokio_rt(Exec::TokioCurrent).block_on(async {
                    tokio::io::AsyncSeekExt::seek(&mut file, std::io::SeekFrom::Start(0))
                        .await
                        .unwrap();
                    let mut v = Vec::new();
                    tokio::io::AsyncReadExt::read_to_end(&mut file, &mut v)
                        .await
                        .unwrap();
                    v
                });
                check_all(&data, &format!("{what}: the same file after the timeout"));
                drop(file);
                settle(&engine, &what);
            }
        }
    });
}

/// A read dropped after a few polls of its task, at many points of the
/// file, leaves no read with the engine; a new read of the whole file is
/// correct.
#[test]
fn dropped_mid_read_leaves_nothing_behind() {
    common::watchdog("cancel mid read", STALL, |p| {
        let files = files();
        let engine = Engine::new().unwrap();
        for (kind, path) in files.kinds() {
            for polls in [1usize, 2, 5, 13] {
                let what = format!("{kind:?} dropped after {polls} polls");
                p.step(|| what.clone());
                prepare(kind, path);
                let mut file = open(&engine, kind, path);
                let polled = tokio_rt(Exec::TokioCurrent).block_on(async {
                    let mut v = Vec::new();
                    let mut fut =
                        std::pin::pin!(tokio::io::AsyncReadExt::read_to_end(&mut file, &mut v));
                    let mut n = 0;
                    std::future::poll_fn(|cx| {
                        n += 1;
                        match fut.as_mut().poll(cx) {
                            Poll::Ready(r) => Poll::Ready(Some(r.unwrap())),
                            Poll::Pending if n >= polls => Poll::Ready(None),
                            Poll::Pending => Poll::Pending,
                        }
                    })
                    .await
                });
                assert!(
                    polled.is_none(),
                    "{what}: read_to_end of {SIZE} bytes finished within {polls} polls"
                );
                // Its readahead dropped with it: every buffer back.
                drop(file);
                settle(&engine, &what);
                let mut again = open(&engine, kind, path);
                let data = tokio_rt(Exec::TokioCurrent).block_on(async {
                    let mut v = Vec::new();
                    tokio::io::AsyncReadExt::read_to_end(&mut again, &mut v)
                        .await
                        .unwrap();
                    v
                });
                check_all(&data, &what);
                drop(again);
                settle(&engine, &what);
            }
        }
    });
}
