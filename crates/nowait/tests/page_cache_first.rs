//! The async engine's first poll reads from the page cache with
//! `preadv2(RWF_NOWAIT)` (`QueueBuilder::nowait`): hits are ready in that
//! poll and byte-exact, misses and partly cached reads go to the ring and
//! are just as exact, `Off` never tries, and on tokio a task that only ever
//! hits still yields to the other tasks (the cooperative budget).

#![cfg(feature = "tokio")]

mod common;

use std::future::Future;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::{watchdog, Rng};
use nowait::{BackendChoice, BackendKind, Buf, CacheTry, Direct, Engine, EngineFile, NowaitMode};

/// Not a multiple of the page size: reads straddle and pass end of file.
const SIZE: u64 = (8 << 20) + 1234;

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = common::pattern_file(dir.path(), "data", SIZE);
    (dir, path)
}

/// Read the whole file once, so the page cache holds it.
fn warm(path: &Path) {
    std::fs::read(path).unwrap();
}

fn engine(mode: NowaitMode) -> Engine {
    Engine::builder()
        .queue(|q| q.depth(64).nowait(mode))
        .build()
        .unwrap()
}

/// `None` (with a loud skip) where the filesystem has no RWF_NOWAIT reads.
fn nowait_reads_or_skip(file: &EngineFile, test: &str) -> Option<()> {
    let f = file.file();
    match (f.inline_reason(), f.nowait_state().off) {
        (None, None) => Some(()),
        (memory, off) => {
            common::skip(
                test,
                &format!(
                    "no RWF_NOWAIT reads on {} here ({memory:?}, {off:?})",
                    f.fs()
                ),
            );
            None
        }
    }
}

/// Random offsets and lengths (1 B to 256 KiB), some straddling or past
/// end of file, compared byte for byte with `pread`.
async fn random_reads(file: EngineFile, seed: u64, n: usize) {
    let std_file = std::fs::File::open(file.file().path()).unwrap();
    let mut rng = Rng::from_seed(seed);
    for _ in 0..n {
        let len = 1 + rng.below(256 << 10) as usize;
        let off = rng.below(SIZE + 8192);
        let (r, buf) = file.read_at(Buf::new(len), off).await;
        let mut want = vec![0u8; len];
        let mut got = 0;
        while got < len {
            match std_file
                .read_at(&mut want[got..], off + got as u64)
                .unwrap()
            {
                0 => break,
                k => got += k,
            }
        }
        assert_eq!(r.unwrap(), got, "read of {len} at {off}");
        assert_eq!(buf.as_slice(), &want[..got], "bytes of {len} at {off}");
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn cached_reads_finish_in_the_first_poll_and_are_exact() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(60), move |_| {
        let e = engine(NowaitMode::Adaptive);
        let file = e.open(&path, Direct::Off).unwrap();
        if nowait_reads_or_skip(&file, "cached_reads_finish_in_the_first_poll_and_are_exact")
            .is_none()
        {
            return;
        }
        warm(&path);
        // One poll with a waker that must never be needed. (A cached page
        // can answer EAGAIN now and then, its folio locked for a moment by
        // someone else: a few tries, each a fresh read.)
        let woken = Arc::new(Flag::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut missed = false;
        let ready = (0..5).any(|_| {
            let mut fut = std::pin::pin!(file.read_at(Buf::new(4096), 12_288));
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready((r, buf)) => {
                    assert_eq!(r.unwrap(), 4096);
                    nowait::pattern::check(12_288, buf.as_slice()).unwrap();
                    true
                }
                Poll::Pending => {
                    // Finish it through the ring before the next try.
                    missed = true;
                    let (r, _) = nowait::block_on(fut);
                    assert_eq!(r.unwrap(), 4096);
                    false
                }
            }
        });
        assert!(ready, "a cached read was never ready in its first poll");
        if !missed {
            assert!(!woken.0.load(Ordering::SeqCst), "a hit arranged a wake-up");
        }
        let b = e.stats();
        current_thread().block_on(async {
            let hs: Vec<_> = (0..8)
                .map(|t| tokio::spawn(random_reads(file.clone(), 11 + t, 200)))
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        let s = e.stats();
        println!("{s:?}");
        assert!(s.nowait.hits > 1_000, "{s:?}");
        // The rest (reads wholly past end of file) went to the ring.
        assert_eq!(
            (s.delivered - b.delivered) + (s.nowait.hits - b.nowait.hits),
            1_600,
            "{s:?}"
        );
        assert_eq!(s.in_flight, 0, "{s:?}");
    });
}

#[test]
fn uncached_reads_go_to_the_ring_and_are_exact() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(60), move |_| {
        let e = engine(NowaitMode::Adaptive);
        let file = e.open(&path, Direct::Off).unwrap();
        if nowait_reads_or_skip(&file, "uncached_reads_go_to_the_ring_and_are_exact").is_none() {
            return;
        }
        file.file().drop_cache().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let hs: Vec<_> = (0..16)
                .map(|t| tokio::spawn(random_reads(file.clone(), 100 + t, 60)))
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        let s = e.stats();
        println!("{s:?}");
        assert!(s.nowait.misses + s.nowait.partial_hits > 0, "{s:?}");
        assert!(s.delivered > 0, "nothing went through the ring: {s:?}");
        assert_eq!(
            s.delivered + s.nowait.hits,
            16 * 60,
            "every read is either a hit or delivered by the ring: {s:?}"
        );
    });
}

#[test]
fn off_never_tries() {
    let (_dir, path) = fixture();
    warm(&path);
    let e = engine(NowaitMode::Off);
    let file = e.open(&path, Direct::Off).unwrap();
    current_thread().block_on(random_reads(file, 7, 100));
    let s = e.stats();
    assert_eq!(s.nowait, nowait::NowaitStats::default(), "{s:?}");
    assert_eq!(s.delivered, 100, "{s:?}");
}

/// Two tasks on one thread: `reader` reads cached data until `stopper`
/// runs, which can only happen once the reader yields. Returns how many
/// reads the reader did before that. `spawn` is the executor's.
async fn reads_before_the_other_task_runs<S, J>(file: EngineFile, spawn: S) -> u64
where
    S: Fn(std::pin::Pin<Box<dyn std::future::Future<Output = u64>>>) -> J,
    J: std::future::Future<Output = u64>,
{
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let reader = {
        let (stop, reads) = (stop.clone(), reads.clone());
        spawn(Box::pin(async move {
            let mut off = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let (r, buf) = file.read_at(Buf::new(4096), off).await;
                assert_eq!(r.unwrap(), 4096);
                nowait::pattern::check(off, buf.as_slice()).unwrap();
                reads.fetch_add(1, Ordering::SeqCst);
                off = (off + 4096) % (SIZE - 8192);
            }
            0
        }))
    };
    let stopper = spawn(Box::pin(async move {
        stop.store(true, Ordering::SeqCst);
        reads.load(Ordering::SeqCst)
    }));
    let before_stop = stopper.await;
    reader.await;
    before_stop
}

/// The yield tests' engine and file, warm; `None` (skipped loudly) where
/// the filesystem has no RWF_NOWAIT reads.
fn warm_engine_file(path: &Path, test: &str) -> Option<(Engine, EngineFile)> {
    let e = engine(NowaitMode::Always);
    let file = e.open(path, Direct::Off).unwrap();
    nowait_reads_or_skip(&file, test)?;
    warm(path);
    Some((e, file))
}

fn assert_yielded(e: &Engine, before_stop: u64) {
    let s = e.stats();
    println!("{before_stop} reads before the other task ran, {s:?}");
    assert!(s.nowait.hits > 0, "{s:?}");
    // 128 reads in a row at most (tokio's budget, the engine's streak);
    // without them the reader ran until a read happened to miss (millions
    // of reads).
    assert!(
        before_stop <= 1_000,
        "the reader kept the executor for {before_stop} reads"
    );
}

/// A task whose reads all hit the page cache is never `Pending` on its own:
/// without tokio's budget it would keep a current-thread runtime to itself
/// and the other task would never run (the watchdog fails the test).
#[test]
fn a_task_reading_only_cached_data_still_yields_on_tokio() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(30), move |_| {
        let test = "a_task_reading_only_cached_data_still_yields_on_tokio";
        let Some((e, file)) = warm_engine_file(&path, test) else {
            return;
        };
        let rt = current_thread();
        let local = tokio::task::LocalSet::new();
        let n = local.block_on(
            &rt,
            reads_before_the_other_task_runs(file, |f| {
                let h = tokio::task::spawn_local(f);
                async move { h.await.unwrap() }
            }),
        );
        assert_yielded(&e, n);
    });
}

/// The same on smol, which has no budget: the engine's own streak limit
/// makes the reader yield.
#[test]
fn a_task_reading_only_cached_data_still_yields_on_smol() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(30), move |_| {
        let test = "a_task_reading_only_cached_data_still_yields_on_smol";
        let Some((e, file)) = warm_engine_file(&path, test) else {
            return;
        };
        let ex = smol::LocalExecutor::new();
        let n = smol::block_on(ex.run(reads_before_the_other_task_runs(file, |f| ex.spawn(f))));
        assert_yielded(&e, n);
    });
}

/// A task draining a `read_many` of cached reads yields too: each batch
/// completes inside its submit, so without the streak limit the task would
/// deliver all of them before the other task ran.
#[test]
fn a_task_draining_a_cached_read_many_still_yields() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(30), move |_| {
        let e = engine(NowaitMode::Off);
        let file = e.open(&path, Direct::Off).unwrap();
        warm(&path);
        let ex = smol::LocalExecutor::new();
        let total = 20_000u64;
        let before_stop = smol::block_on(ex.run(async {
            let stop = Arc::new(AtomicBool::new(false));
            let items = Arc::new(AtomicU64::new(0));
            let reader = {
                let (stop, items) = (stop.clone(), items.clone());
                ex.spawn(async move {
                    let reads = (0..total).map(|i| {
                        let off = (i * 4096) % (SIZE - 8192);
                        (off, Buf::new(4096))
                    });
                    let mut many = file.read_many(reads);
                    let mut n = 0;
                    while let Some(item) = many.next().await {
                        assert_eq!(item.result.unwrap(), 4096);
                        nowait::pattern::check(item.offset, item.buf.as_slice()).unwrap();
                        items.fetch_add(1, Ordering::SeqCst);
                        n += 1;
                    }
                    assert!(stop.load(Ordering::SeqCst));
                    n
                })
            };
            let stopper = ex.spawn(async move {
                stop.store(true, Ordering::SeqCst);
                items.load(Ordering::SeqCst)
            });
            let before = stopper.await;
            assert_eq!(reader.await, total);
            before
        }));
        println!("{before_stop} of {total} items before the other task ran");
        assert!(
            before_stop <= 1_000,
            "the task draining read_many kept the executor for {before_stop} items"
        );
    });
}

/// The streak is per thread: a task that reads 128 cached blocks and then
/// yields by other means leaves the count at the limit each time. Another
/// task's read that yielded for the streak must go on at its next poll,
/// whatever the count then, or it would yield on every poll and never run.
#[test]
fn a_read_that_yielded_for_the_streak_goes_on_next_time() {
    let (_dir, path) = fixture();
    watchdog("page_cache_first", Duration::from_secs(60), move |_| {
        let test = "a_read_that_yielded_for_the_streak_goes_on_next_time";
        let Some((_e, file)) = warm_engine_file(&path, test) else {
            return;
        };
        for many in [false, true] {
            let ex = smol::LocalExecutor::new();
            let done = Arc::new(AtomicU64::new(0));
            let rounds = smol::block_on(ex.run(async {
                let hog = {
                    let (file, done) = (file.clone(), done.clone());
                    ex.spawn(async move {
                        let mut rounds = 0u64;
                        while done.load(Ordering::SeqCst) < 10 && rounds < 300 {
                            for i in 0..128u64 {
                                let off = (i * 4096) % (SIZE - 8192);
                                let (r, buf) = file.read_at(Buf::new(4096), off).await;
                                assert_eq!(r.unwrap(), 4096);
                                nowait::pattern::check(off, buf.as_slice()).unwrap();
                            }
                            smol::future::yield_now().await;
                            rounds += 1;
                        }
                        rounds
                    })
                };
                let other = {
                    let (file, done) = (file.clone(), done.clone());
                    ex.spawn(async move {
                        for i in 0..10u64 {
                            let off = (i * 8192) % (SIZE - 8192);
                            let buf = if many {
                                let mut m = file.read_many([(off, Buf::new(4096))]);
                                let item = m.next().await.unwrap();
                                assert_eq!(item.result.unwrap(), 4096);
                                item.buf
                            } else {
                                let (r, buf) = file.read_at(Buf::new(4096), off).await;
                                assert_eq!(r.unwrap(), 4096);
                                buf
                            };
                            nowait::pattern::check(off, buf.as_slice()).unwrap();
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                };
                other.await;
                hog.await
            }));
            println!(
                "read_many {many}: the other task's 10 reads took {rounds} of the hog's rounds"
            );
            assert_eq!(done.load(Ordering::SeqCst), 10);
            assert!(rounds < 300, "read_many {many}: the other task starved");
        }
    });
}

/// `pool` and `aio+pool` make the try at push and `sync` reads in the poll:
/// their rings never try in the first poll (a miss would cost two system
/// calls and count twice); `uring` and `aio` rings do.
#[test]
fn only_uring_and_aio_rings_try_in_the_first_poll() {
    let (_dir, path) = fixture();
    warm(&path);
    for kind in [
        BackendKind::Uring,
        BackendKind::Aio,
        BackendKind::AioPool,
        BackendKind::Pool,
        BackendKind::Sync,
    ] {
        let e = match Engine::builder()
            .queue(|q| {
                q.backend(BackendChoice::Exactly(kind))
                    .nowait(NowaitMode::Always)
            })
            .build()
        {
            Ok(e) => e,
            Err(err) => {
                common::skip_line(&format!("backend {kind}: {err}"));
                continue;
            }
        };
        let file = e.open(&path, Direct::Off).unwrap();
        if nowait_reads_or_skip(&file, "only_uring_and_aio_rings_try_in_the_first_poll").is_none() {
            return;
        }
        current_thread().block_on(random_reads(file, 3, 50));
        let s = e.stats();
        println!("{kind}: {s:?}");
        let tries = matches!(kind, BackendKind::Uring | BackendKind::Aio);
        assert_eq!(s.nowait.tries > 0, tries, "{kind}: {s:?}");
        // And the ring's report says so, and why.
        for r in e.rings() {
            let want = if tries {
                NowaitMode::Always
            } else {
                NowaitMode::Off
            };
            assert_eq!(r.page_cache_first, want, "{kind}: {r:?}");
            assert!(!r.page_cache_first_reason.is_empty(), "{r:?}");
        }
        assert_eq!(s.delivered + s.nowait.hits, 50, "{kind}: {s:?}");
    }
}

/// A read across the end of a file whose size is a multiple of the page:
/// `RWF_NOWAIT` answers the resident part only, a page-aligned prefix that
/// cannot be told from a partly cached read. The ring reads it whole, and
/// since the prefix is read twice, the file soon stops being tried.
#[test]
fn reads_across_a_page_aligned_end_of_file_are_exact_and_stop_being_tried() {
    let dir = tempfile::tempdir().unwrap();
    let size = 1u64 << 20;
    let path = common::pattern_file(dir.path(), "aligned", size);
    warm(&path);
    let e = engine(NowaitMode::Adaptive);
    let file = e.open(&path, Direct::Off).unwrap();
    if nowait_reads_or_skip(&file, "reads_across_a_page_aligned_end_of_file").is_none() {
        return;
    }
    current_thread().block_on(async {
        for i in 0..200u64 {
            let off = size - 4096 + (i % 8) * 512;
            let (r, buf) = file.read_at(Buf::new(8192), off).await;
            assert_eq!(r.unwrap() as u64, size - off, "at {off}");
            nowait::pattern::check(off, buf.as_slice()).unwrap();
        }
    });
    let s = e.stats();
    println!("{s:?} {:?}", file.file().nowait_state());
    assert_eq!(s.nowait.hits, 0, "{s:?}");
    assert!(s.nowait.partial_hits > 0, "{s:?}");
    assert!(s.nowait.skipped > 100, "a prefix counts as a miss: {s:?}");
    assert!(file.file().nowait_state().engine_skipping);
}

/// A read whose end lies past the largest file position (i64::MAX) is
/// refused with OffsetTooLarge by the engine and by every backend's queue,
/// before any system call: an offset of u64::MAX (-1 to the kernel) would
/// otherwise read at the file's current position, returning its first bytes.
#[test]
fn offsets_past_the_largest_file_position_are_refused() {
    let (_dir, path) = fixture();
    warm(&path);
    let offs = [u64::MAX, u64::MAX - 100, 1u64 << 63, i64::MAX as u64 - 10];
    for mode in [NowaitMode::Always, NowaitMode::Off] {
        let e = engine(mode);
        let file = e.open(&path, Direct::Off).unwrap();
        for off in offs {
            let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), off));
            let err = r.expect_err("a read past the largest offset");
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
            assert!(err.to_string().contains(&off.to_string()), "{err}");
            assert_eq!(buf.capacity(), 4096, "the buffer comes back");
        }
    }
    for kind in common::backend_kinds() {
        let Some(mut q) = common::queue_of(kind, 4) else {
            continue;
        };
        let f = nowait::File::open(&path, Direct::Off).unwrap();
        for off in offs {
            let rejected = q
                .push(nowait::Read {
                    file: &f,
                    offset: off,
                    len: 4096,
                    buf: Buf::new(4096),
                    user_data: 0,
                    ioprio: 0,
                    cache: None,
                })
                .expect_err("refused at push");
            assert!(
                matches!(rejected.error, nowait::Error::OffsetTooLarge { offset, len: 4096 } if offset == off),
                "{kind}: {}",
                rejected.error
            );
        }
        // The largest offset that still fits reads (0 bytes: past end of file).
        let (r, _) = q.read_at(&f, i64::MAX as u64 - 4096, Buf::new(4096));
        assert_eq!(r.unwrap(), 0, "{kind}");
    }
}

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// `File::try_read_cached`, the first poll's try for other front ends (the
/// Python package's `aread_at`): a cached read is a `Hit` holding the bytes,
/// up to end of file; past end of file and on a cold file the answer sends
/// the read the usual way; `Off`, empty reads and O_DIRECT never try.
#[test]
fn try_read_cached_answers() {
    let (_dir, path) = fixture();
    warm(&path);
    let want = std::fs::read(&path).unwrap();
    let f = nowait::File::open(&path, Direct::Off).unwrap();
    if f.inline_reason().is_some() || f.nowait_state().off.is_some() {
        common::skip(
            "try_read_cached_answers",
            &format!("no RWF_NOWAIT reads on {} here", f.fs()),
        );
        return;
    }
    let always = NowaitMode::Always;
    let mut buf = vec![0u8; 5000];
    assert_eq!(
        f.try_read_cached(&mut buf, 4097, always),
        CacheTry::Hit(5000)
    );
    assert_eq!(&buf[..], &want[4097..9097]);
    // Straddling end of file: the bytes up to it.
    let off = SIZE - 10;
    assert_eq!(f.try_read_cached(&mut buf, off, always), CacheTry::Hit(10));
    assert_eq!(&buf[..10], &want[off as usize..]);
    // Past it: 0 bytes, which only a plain read tells from a miss.
    assert_eq!(
        f.try_read_cached(&mut buf, SIZE + 4096, always),
        CacheTry::Miss
    );
    assert_eq!(
        f.try_read_cached(&mut buf, 0, NowaitMode::Off),
        CacheTry::Off
    );
    assert_eq!(f.try_read_cached(&mut [], 0, always), CacheTry::Off);
    // Past the largest file position: never tried (an offset of u64::MAX,
    // -1 to the kernel, would read at the file's current position).
    for off in [
        u64::MAX,
        u64::MAX - 4,
        i64::MAX as u64,
        i64::MAX as u64 - 10,
    ] {
        assert_eq!(
            f.try_read_cached(&mut buf[..16], off, always),
            CacheTry::Off,
            "offset {off}"
        );
    }
    // Cold: nothing resident (written back first: DONTNEED keeps dirty pages).
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    f.drop_cache().unwrap();
    let r = f.try_read_cached(&mut buf, 1 << 20, always);
    assert!(matches!(r, CacheTry::Miss | CacheTry::Partial), "{r:?}");
    if let Ok(d) = nowait::File::open(&path, Direct::On) {
        assert_eq!(
            d.try_read_cached(&mut buf[..4096], 0, always),
            CacheTry::Off
        );
    }
}
