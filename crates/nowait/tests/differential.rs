//! Differential test: every read API against `pread(2)`.
//!
//! A file of seeded random bytes whose size is a multiple of no alignment
//! is read at random offsets (inside the file, straddling its end, past
//! it) with random lengths from 1 byte to 1 MiB at random depths, through
//! every public way of reading — `push`/`submit`/`reap` with blocking
//! `read_at`/`read_exact_at` interleaved while reads are in flight, the
//! async engine (`read_at`, `read_exact_at`, `read_many`) on tokio's
//! current-thread and multi-thread runtimes, `BlockingFile` and `block_on`,
//! `nowait::fs::read_ranges` and the `AsyncRead`/`AsyncSeek` file — on
//! every backend, with `Direct::Off`, `Auto` and `On`, on the temp
//! directory's filesystem and on tmpfs. Each result is compared length for
//! length and byte for byte with what `pread(2)` returns for the same range
//! (a strict `Direct::On` read that breaks the alignment rules must be
//! refused with `Error::Misaligned` instead).
//!
//! Each combination runs under a watchdog: a combination that makes no
//! progress for a few seconds fails the test, naming the reads in flight,
//! instead of hanging CI. The seed is printed; `NOWAIT_DIFF_SEED=<seed>`
//! replays a run (each combination's reads derive from it).

mod common;
#[path = "common/fusefs.rs"]
mod fusefs;

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{watchdog, Progress, Rng};
use nowait::pattern;
use nowait::{BackendChoice, BackendKind, Buf, Direct, Engine, Error, File, NowaitMode, Read};

/// No progress for this long is a hang.
const STALL: Duration = Duration::from_secs(5);
/// Size of the file: a multiple of no power of two above 1.
const SIZE: u64 = (3 << 20) + 4093;
const MAX_LEN: u64 = 1 << 20;
const DIRECTS: [Direct; 3] = [Direct::Off, Direct::Auto, Direct::On];

/// The printed run seed.
fn run_seed(test: &str) -> u64 {
    common::printed_seed("NOWAIT_DIFF_SEED", test)
}

/// The seeded file on the temp directory's filesystem and on tmpfs, and
/// the reference to compare with: the file read back whole with `pread`.
struct Fixture {
    _dirs: Vec<tempfile::TempDir>,
    /// The FUSE mount serving the third copy (its own bytes: the pattern).
    _fuse: Option<fusefs::FuseFs>,
    files: Vec<(String, PathBuf)>,
    /// What pread returns for each of `files`.
    references: Vec<Arc<Vec<u8>>>,
}

fn fixture(test: &str, seed: u64) -> Fixture {
    let mut rng = Rng::from_seed(seed ^ 0x5eed_f11e);
    let mut data = vec![0u8; SIZE as usize];
    for chunk in data.chunks_mut(8) {
        let x = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&x[..chunk.len()]);
    }
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for base in [std::env::temp_dir(), PathBuf::from("/dev/shm")] {
        let dir = match tempfile::tempdir_in(&base) {
            Ok(d) => d,
            Err(e) => {
                common::skip(
                    &format!("{test} on {}", base.display()),
                    &format!("cannot make a directory: {e}"),
                );
                continue;
            }
        };
        let path = dir.path().join("diff");
        std::fs::write(&path, &data).unwrap();
        let fs = common::fs_of(dir.path());
        files.push((fs.to_string(), path));
        dirs.push(dir);
    }
    assert!(
        !files.is_empty(),
        "{test}: no directory to write the file in"
    );
    // The reference is what pread returns, not what we meant to write.
    let reference = pread_all(&files[0].1);
    assert_eq!(
        reference, data,
        "{test}: pread disagrees with what was written"
    );
    // The files on disk and tmpfs hold the same bytes: one shared reference.
    let reference = Arc::new(reference);
    let mut references: Vec<_> = files.iter().map(|_| reference.clone()).collect();
    // A FUSE file of the same size answered the way libfuse 2 negotiates,
    // with short replies of random length from several server threads: its
    // bytes are the server's (the pattern), its reference pread's.
    let spec = fusefs::FileSpec::new("diff", SIZE).short(fusefs::Short::RandomPrefix);
    let fuse = match fusefs::FuseFs::mount_with(vec![spec], seed, fusefs::Negotiate::Libfuse2) {
        Ok(fs) => {
            let path = fs.path("diff");
            references.push(Arc::new(pread_all(&path)));
            files.push(("fuse".to_string(), path));
            Some(fs)
        }
        Err(why) => {
            common::skip(&format!("{test} on FUSE"), &why);
            None
        }
    };
    Fixture {
        _dirs: dirs,
        _fuse: fuse,
        files,
        references,
    }
}

/// The whole file as `pread(2)` returns it.
fn pread_all(path: &std::path::Path) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut out = vec![0u8; SIZE as usize + 1];
    let mut n = 0;
    loop {
        let k = f.read_at(&mut out[n..], n as u64).unwrap();
        if k == 0 {
            break;
        }
        n += k;
    }
    out.truncate(n);
    out
}

/// One read of the plan.
#[derive(Debug, Clone, Copy)]
struct Req {
    offset: u64,
    len: usize,
}

/// `n` reads: lengths log-uniform in 1 B ..= 1 MiB; offsets mostly inside
/// the file, some straddling its end, some past it; for `Direct::On` most
/// are aligned to `align`, the rest keep their random (mostly misaligned)
/// values.
fn plan(rng: &mut Rng, n: usize, direct: Direct, align: u64) -> Vec<Req> {
    (0..n)
        .map(|_| {
            let shift = rng.below(21);
            let mut len = (1 + rng.below(1 << shift)).min(MAX_LEN);
            let mut offset = match rng.below(10) {
                0..=5 => rng.below(SIZE),
                6 | 7 => SIZE.saturating_sub(1 + rng.below(len)),
                _ => SIZE + rng.below(2 * MAX_LEN),
            };
            if direct == Direct::On && align > 1 && rng.below(5) != 0 {
                offset -= offset % align;
                len = len.next_multiple_of(align).min(MAX_LEN);
            }
            Req {
                offset,
                len: len as usize,
            }
        })
        .collect()
}

/// What an API handed back for one read, in a form every API can give.
enum Outcome<'a> {
    Read(usize, &'a Buf),
    Exact(&'a Buf),
    Misaligned,
    UnexpectedEof,
    Failed(String),
}

fn queue_outcome<'a>(r: Result<usize, Error>, buf: &'a Buf, exact: bool) -> Outcome<'a> {
    match r {
        Ok(_) if exact => Outcome::Exact(buf),
        Ok(n) => Outcome::Read(n, buf),
        Err(Error::Misaligned { .. }) => Outcome::Misaligned,
        Err(Error::UnexpectedEof { .. }) => Outcome::UnexpectedEof,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

fn io_outcome<'a>(r: std::io::Result<usize>, buf: &'a Buf, exact: bool) -> Outcome<'a> {
    match r {
        Ok(_) if exact => Outcome::Exact(buf),
        Ok(n) => Outcome::Read(n, buf),
        Err(e) => match e.get_ref().and_then(|i| i.downcast_ref::<Error>()) {
            Some(Error::Misaligned { .. }) => Outcome::Misaligned,
            _ if e.kind() == std::io::ErrorKind::UnexpectedEof => Outcome::UnexpectedEof,
            _ => Outcome::Failed(e.to_string()),
        },
    }
}

/// What one combination reads and checks against.
#[derive(Clone)]
struct Case {
    name: String,
    path: PathBuf,
    direct: Direct,
    kind: BackendKind,
    reference: Arc<Vec<u8>>,
    seed: u64,
}

impl Case {
    /// Compare one outcome with `pread`'s answer for the same range.
    fn check(&self, file: &File, api: &str, r: Req, out: Outcome<'_>) {
        let what = format!(
            "{} {api}: read of {} at {} (replay with NOWAIT_DIFF_SEED)",
            self.name, r.len, r.offset
        );
        let strict_misaligned = file.is_direct()
            && self.direct == Direct::On
            && !file.dio_align().fits(r.offset, r.len, 0);
        if strict_misaligned {
            match out {
                Outcome::Misaligned => return,
                Outcome::Read(n, _) => {
                    panic!("{what}: misaligned Direct::On read returned {n} bytes")
                }
                Outcome::Exact(_) => panic!("{what}: misaligned Direct::On read succeeded"),
                Outcome::UnexpectedEof => panic!("{what}: misaligned read gave UnexpectedEof"),
                Outcome::Failed(e) => panic!("{what}: misaligned read failed otherwise: {e}"),
            }
        }
        let size = self.reference.len() as u64;
        let start = r.offset.min(size) as usize;
        let end = (r.offset + r.len as u64).min(size) as usize;
        let want = &self.reference[start..end];
        let buf = match out {
            Outcome::Read(n, buf) => {
                assert_eq!(n, want.len(), "{what}: length differs from pread's");
                buf
            }
            Outcome::Exact(buf) => {
                assert_eq!(
                    want.len(),
                    r.len,
                    "{what}: read_exact_at succeeded past end of file"
                );
                buf
            }
            Outcome::UnexpectedEof => {
                assert!(
                    want.len() < r.len,
                    "{what}: UnexpectedEof with {} bytes there",
                    want.len()
                );
                return;
            }
            Outcome::Misaligned => panic!("{what}: refused as misaligned"),
            Outcome::Failed(e) => panic!("{what}: failed: {e}"),
        };
        assert_eq!(buf.len(), want.len(), "{what}: buffer length");
        if let Some(i) = buf.as_slice().iter().zip(want).position(|(a, b)| a != b) {
            panic!(
                "{what}: byte {i} (file offset {}) is {:#04x}, pread says {:#04x}",
                r.offset + i as u64,
                buf.as_slice()[i],
                want[i]
            );
        }
    }
}

/// Every combination of filesystem × backend × direct mode, each run under
/// its own watchdog by `run`.
fn each_case(test: &str, run: impl FnMut(Case, &Arc<Progress>) + Clone + Send + 'static) {
    let seed = run_seed(test);
    let fx = fixture(test, seed);
    let mut n = 0u64;
    let start = std::time::Instant::now();
    for ((fs, path), reference) in fx.files.iter().zip(&fx.references) {
        for kind in common::backend_kinds() {
            for direct in DIRECTS {
                n += 1;
                let case = Case {
                    name: format!("{test} [{fs} {kind} {direct:?}] seed {seed}"),
                    path: path.clone(),
                    direct,
                    kind,
                    reference: reference.clone(),
                    seed: seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                };
                let mut run = run.clone();
                let name = case.name.clone();
                watchdog(&name, STALL, move |p| run(case, p));
            }
        }
    }
    eprintln!("{test}: {n} combinations in {:.1?}", start.elapsed());
}

/// Open the case's file, or skip the case (a filesystem without O_DIRECT).
fn open(case: &Case) -> Option<File> {
    match File::open(&case.path, case.direct) {
        Ok(f) => Some(f),
        Err(e) => {
            common::skip(&case.name, &format!("cannot open: {e}"));
            None
        }
    }
}

fn describe(flight: &BTreeMap<u64, Req>) -> String {
    let mut s = format!("{} reads in flight:", flight.len());
    for (id, r) in flight.iter().take(8) {
        s.push_str(&format!(" #{id} {}@{}", r.len, r.offset));
    }
    if flight.len() > 8 {
        s.push_str(" ...");
    }
    s
}

/// `push`/`submit`/`reap` at a random depth, reaping with random `min`
/// and timeouts, with blocking `read_at`/`read_exact_at` interleaved while
/// reads are in flight, then `drain`.
#[test]
fn differential_queue() {
    each_case("differential_queue", |case, p| {
        let Some(file) = open(&case) else {
            return;
        };
        let mut rng = Rng::from_seed(case.seed);
        let depth = 1 + rng.below(128) as usize;
        let Some(mut q) = common::queue_of(case.kind, depth) else {
            return;
        };
        let reads = plan(&mut rng, 400, case.direct, file.dio_align().offset as u64);
        let mut flight: BTreeMap<u64, Req> = BTreeMap::new();
        let mut done = vec![false; reads.len()];
        let (mut next, mut finished) = (0, 0);
        let mut out = Vec::new();
        while finished < reads.len() {
            // Fill up to a random share of the depth.
            let target = 1 + rng.below(depth as u64) as usize;
            while next < reads.len() && q.in_flight() < target {
                let r = reads[next];
                let spare = if rng.below(3) == 0 {
                    rng.below(5000) as usize
                } else {
                    0
                };
                let pushed = q.push(Read {
                    file: &file,
                    offset: r.offset,
                    len: r.len,
                    buf: Buf::new(r.len + spare),
                    user_data: next as u64,
                    ioprio: 0,
                    cache: None,
                });
                match pushed {
                    Ok(()) => {
                        flight.insert(next as u64, r);
                    }
                    Err(rej) => {
                        done[next] = true;
                        finished += 1;
                        case.check(
                            &file,
                            "push",
                            r,
                            queue_outcome(Err(rej.error), &rej.buf, false),
                        );
                    }
                }
                next += 1;
                if rng.below(4) == 0 {
                    q.submit().unwrap();
                }
            }
            p.step(|| describe(&flight));
            // A blocking read with the others in flight.
            if rng.below(6) == 0 && q.in_flight() < q.depth() {
                let r = plan(&mut rng, 1, case.direct, file.dio_align().offset as u64)[0];
                p.step(|| {
                    format!(
                        "blocking read of {}@{} with {}",
                        r.len,
                        r.offset,
                        describe(&flight)
                    )
                });
                if rng.below(2) == 0 {
                    let (res, buf) = q.read_at(&file, r.offset, Buf::new(r.len));
                    case.check(&file, "read_at", r, queue_outcome(res, &buf, false));
                } else {
                    let (res, buf) = q.read_exact_at(&file, r.offset, r.len, Buf::new(r.len));
                    case.check(
                        &file,
                        "read_exact_at",
                        r,
                        queue_outcome(res.map(|()| r.len), &buf, true),
                    );
                }
                p.step(|| describe(&flight));
            }
            if q.in_flight() == 0 {
                continue;
            }
            let min = 1 + rng.below(q.in_flight() as u64) as usize;
            let timeout = match rng.below(3) {
                0 => Some(Duration::from_millis(rng.below(20))),
                _ => None,
            };
            out.clear();
            q.reap(min, timeout, &mut out).unwrap();
            if timeout.is_none() {
                assert!(
                    out.len() >= min,
                    "{}: reap({min}) returned {}",
                    case.name,
                    out.len()
                );
            }
            for c in out.drain(..) {
                finished += 1;
                let i = c.user_data as usize;
                let r = flight.remove(&c.user_data).unwrap_or_else(|| {
                    panic!(
                        "{}: completion for read {i} that is not in flight",
                        case.name
                    )
                });
                assert!(
                    !std::mem::replace(&mut done[i], true),
                    "{}: read {i} twice",
                    case.name
                );
                case.check(
                    &file,
                    "push/reap",
                    r,
                    queue_outcome(c.result, &c.buf, false),
                );
            }
        }
        assert!(
            flight.is_empty() && q.in_flight() == 0,
            "{}: {}",
            case.name,
            describe(&flight)
        );
        // drain with nothing in flight returns at once.
        assert_eq!(q.drain(&mut out).unwrap(), 0);
        // drain, then drop, with reads in flight: both return.
        for round in 0..2 {
            let extra = plan(
                &mut rng,
                depth.min(8),
                case.direct,
                file.dio_align().offset as u64,
            );
            let mut pushed = Vec::new();
            for (i, r) in extra.iter().enumerate() {
                let req = Read {
                    file: &file,
                    offset: r.offset,
                    len: r.len,
                    buf: Buf::new(r.len),
                    user_data: i as u64,
                    ioprio: 0,
                    cache: None,
                };
                match q.push(req) {
                    Ok(()) => {
                        flight.insert(i as u64, *r);
                        pushed.push(i);
                    }
                    Err(rej) => case.check(
                        &file,
                        "push",
                        *r,
                        queue_outcome(Err(rej.error), &rej.buf, false),
                    ),
                }
            }
            q.submit().unwrap();
            p.step(|| format!("{} with {}", ["drain", "drop"][round], describe(&flight)));
            if round == 1 {
                drop(q);
                break;
            }
            out.clear();
            assert_eq!(
                q.drain(&mut out).unwrap(),
                pushed.len(),
                "{}: drain",
                case.name
            );
            for c in out.drain(..) {
                let r = flight
                    .remove(&c.user_data)
                    .expect("drained read was in flight");
                case.check(&file, "drain", r, queue_outcome(c.result, &c.buf, false));
            }
            assert!(
                flight.is_empty(),
                "{}: drain left {}",
                case.name,
                describe(&flight)
            );
        }
    });
}

/// An engine on `case`'s backend with a random depth (1-128), or None
/// after a loud skip if the backend is unavailable here.
fn engine_for(case: &Case, rng: &mut Rng) -> Option<Engine> {
    let depth = 1 + rng.below(128) as usize;
    // The first poll's page-cache read (RWF_NOWAIT) on or off: with it,
    // cached reads never reach the ring.
    let mode = NowaitMode::ALL[rng.below(3) as usize];
    match Engine::builder()
        .queue(|q| {
            q.backend(BackendChoice::Exactly(case.kind))
                .depth(depth)
                .nowait(mode)
        })
        .build()
    {
        Ok(e) => Some(e),
        Err(e) => {
            common::skip(&format!("backend {}", case.kind), &e.to_string());
            None
        }
    }
}

/// Run `reads` through the engine's futures on `rt`: half as spawned tasks
/// (`read_at` / `read_exact_at`), half through one `read_many`; then drop
/// a batch and the engine with reads in flight.
fn engine_reads(case: Case, p: &Arc<Progress>, rt: tokio::runtime::Runtime, api: &'static str) {
    let mut rng = Rng::from_seed(case.seed);
    let Some(engine) = engine_for(&case, &mut rng) else {
        return;
    };
    let file = match engine.open(&case.path, case.direct) {
        Ok(f) => f,
        Err(e) => return common::skip(&case.name, &format!("cannot open: {e}")),
    };
    let align = file.file().dio_align().offset as u64;
    let reads = plan(&mut rng, 256, case.direct, align);
    let flight = Arc::new(Mutex::new(BTreeMap::new()));
    let say = {
        let (p, flight) = (p.clone(), flight.clone());
        move || p.step(|| describe(&flight.lock().unwrap()))
    };
    let case = Arc::new(case);
    rt.block_on(async {
        let (tasks, many) = reads.split_at(reads.len() / 2);
        let mut handles = Vec::new();
        for (i, &r) in tasks.iter().enumerate() {
            let (file, case, flight, say) =
                (file.clone(), case.clone(), flight.clone(), say.clone());
            let exact = i % 3 == 0;
            flight.lock().unwrap().insert(i as u64, r);
            handles.push(tokio::spawn(async move {
                if exact {
                    let (res, buf) = file.read_exact_at(Buf::new(r.len), r.offset).await;
                    case.check(
                        file.file(),
                        &format!("{api} read_exact_at"),
                        r,
                        io_outcome(res.map(|()| r.len), &buf, true),
                    );
                } else {
                    let (res, buf) = file.read_at(Buf::new(r.len), r.offset).await;
                    case.check(
                        file.file(),
                        &format!("{api} read_at"),
                        r,
                        io_outcome(res, &buf, false),
                    );
                }
                flight.lock().unwrap().remove(&(i as u64));
                say();
            }));
        }
        let base = tasks.len() as u64;
        for (i, r) in many.iter().enumerate() {
            flight.lock().unwrap().insert(base + i as u64, *r);
        }
        let mut batch = file.read_many(many.iter().map(|r| (r.offset, Buf::new(r.len))));
        let mut seen = vec![false; many.len()];
        while let Some(item) = batch.next().await {
            assert!(
                !std::mem::replace(&mut seen[item.index], true),
                "{}: read_many item twice",
                case.name
            );
            let r = many[item.index];
            assert_eq!(item.offset, r.offset);
            case.check(
                file.file(),
                &format!("{api} read_many"),
                r,
                io_outcome(item.result, &item.buf, false),
            );
            flight.lock().unwrap().remove(&(base + item.index as u64));
            say();
        }
        assert!(
            seen.iter().all(|&s| s),
            "{}: read_many lost reads",
            case.name
        );
        for h in handles {
            h.await.unwrap();
        }
        // Abandon a batch with reads in flight, then drop the engine: both
        // must return (the watchdog says if not).
        let mut batch = file.read_many(reads.iter().take(8).map(|r| (r.offset, Buf::new(r.len))));
        let first = batch.next().await;
        assert!(first.is_some(), "{}: read_many gave nothing", case.name);
        drop(batch);
    });
    say();
    drop(file);
    drop(engine);
    drop(rt);
    say();
}

/// The async engine on tokio's current-thread runtime.
#[test]
fn differential_engine_current_thread() {
    each_case("differential_engine_current_thread", |case, p| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        engine_reads(case, p, rt, "current-thread");
    });
}

/// The async engine on tokio's multi-thread runtime.
#[test]
fn differential_engine_multi_thread() {
    each_case("differential_engine_multi_thread", |case, p| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(3)
            .enable_all()
            .build()
            .unwrap();
        engine_reads(case, p, rt, "multi-thread");
    });
}

/// `BlockingFile` from several plain threads at once (`read_at`,
/// `read_exact_at`, `read_many`), and `block_on` on a future directly.
#[test]
fn differential_blocking() {
    each_case("differential_blocking", |case, p| {
        let mut rng = Rng::from_seed(case.seed);
        let Some(engine) = engine_for(&case, &mut rng) else {
            return;
        };
        let file = match engine.open_blocking(&case.path, case.direct) {
            Ok(f) => f,
            Err(e) => return common::skip(&case.name, &format!("cannot open: {e}")),
        };
        let align = file.file().dio_align().offset as u64;
        let plans: Vec<Vec<Req>> = (0..4)
            .map(|_| plan(&mut rng, 48, case.direct, align))
            .collect();
        let flight = Mutex::new(BTreeMap::new());
        std::thread::scope(|s| {
            for (t, reads) in plans.iter().enumerate() {
                let (file, case, flight) = (&file, &case, &flight);
                s.spawn(move || {
                    for (i, &r) in reads.iter().enumerate() {
                        let id = (t * 1000 + i) as u64;
                        flight.lock().unwrap().insert(id, r);
                        p.step(|| describe(&flight.lock().unwrap()));
                        match i % 3 {
                            0 => {
                                let (res, buf) = file.read_exact_at(Buf::new(r.len), r.offset);
                                case.check(
                                    file.file(),
                                    "BlockingFile::read_exact_at",
                                    r,
                                    io_outcome(res.map(|()| r.len), &buf, true),
                                );
                            }
                            1 => {
                                let (res, buf) = nowait::block_on(
                                    file.as_async().read_at(Buf::new(r.len), r.offset),
                                );
                                case.check(
                                    file.file(),
                                    "block_on(read_at)",
                                    r,
                                    io_outcome(res, &buf, false),
                                );
                            }
                            _ => {
                                let (res, buf) = file.read_at(Buf::new(r.len), r.offset);
                                case.check(
                                    file.file(),
                                    "BlockingFile::read_at",
                                    r,
                                    io_outcome(res, &buf, false),
                                );
                            }
                        }
                        flight.lock().unwrap().remove(&id);
                    }
                });
            }
            // And a batch iterated from this thread meanwhile.
            let many = plan(&mut rng, 64, case.direct, align);
            let mut seen = 0;
            for item in file.read_many(many.iter().map(|r| (r.offset, Buf::new(r.len)))) {
                seen += 1;
                case.check(
                    file.file(),
                    "BlockingMany",
                    many[item.index],
                    io_outcome(item.result, &item.buf, false),
                );
                p.tick();
            }
            assert_eq!(seen, many.len(), "{}: BlockingMany lost reads", case.name);
        });
        drop(file);
        drop(engine);
    });
}

/// Sizes the resizing writer moves a file between: odd (a multiple of no
/// block), 1 MiB to about 2 MiB.
fn resize_sizes() -> Vec<u64> {
    (0..12).map(|i| (1 << 20) + 1 + i * 87_382).collect()
}

/// A thread that keeps truncating a file to one of `sizes` and extending
/// it to another, always with the pattern's bytes: any byte the file holds
/// at an offset is the pattern's byte there.
struct Resizer {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Resizer {
    fn start(path: &std::path::Path, sizes: Vec<u64>, seed: u64) -> Resizer {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut rng = Rng::from_seed(seed);
            let mut cur = f.metadata().unwrap().len();
            let mut bytes = vec![0u8; 1 << 20];
            let mut moves = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let next = sizes[rng.below(sizes.len() as u64) as usize];
                if next < cur {
                    f.set_len(next).unwrap();
                } else if next > cur {
                    let part = &mut bytes[..(next - cur) as usize];
                    pattern::fill(cur, part);
                    f.write_all_at(part, cur).unwrap();
                }
                cur = next;
                moves += 1;
            }
            moves
        });
        Resizer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Resizer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Check one read of a file the resizer moves between `sizes`: a result
/// shorter than asked ends at a size the file had (or is empty, at or past
/// one), every byte is the pattern's, and no valid request fails.
fn check_resizing(
    what: &str,
    file: &File,
    direct: Direct,
    sizes: &[u64],
    r: Req,
    out: Outcome<'_>,
) {
    let what = format!(
        "{what}: read of {} at {} (replay with NOWAIT_DIFF_SEED)",
        r.len, r.offset
    );
    let min = sizes.iter().copied().min().unwrap();
    let strict_misaligned =
        file.is_direct() && direct == Direct::On && !file.dio_align().fits(r.offset, r.len, 0);
    let buf = match out {
        Outcome::Misaligned if strict_misaligned => return,
        _ if strict_misaligned => panic!("{what}: a misaligned Direct::On read was not refused"),
        Outcome::Read(n, buf) => {
            assert!(n <= r.len, "{what}: {n} bytes");
            let end = r.offset + n as u64;
            // A write that extends the file raises its size a page at a
            // time: page boundaries are sizes it had too.
            assert!(
                n == r.len
                    || sizes.contains(&end)
                    || end % 4096 == 0
                    || (n == 0 && r.offset >= min),
                "{what}: {n} bytes end at {end}, a size the file never had ({sizes:?} and the \
                 page boundaries between them)"
            );
            assert_eq!(buf.len(), n, "{what}: buffer length");
            buf
        }
        Outcome::Exact(buf) => {
            assert_eq!(buf.len(), r.len, "{what}: buffer length");
            buf
        }
        Outcome::UnexpectedEof => {
            assert!(
                r.offset + r.len as u64 > min,
                "{what}: UnexpectedEof though the file always held the range"
            );
            return;
        }
        Outcome::Misaligned => panic!("{what}: refused as misaligned"),
        Outcome::Failed(e) => panic!("{what}: a valid read failed: {e}"),
    };
    // The kernel's own race, which `pread(2)` has too: a buffered read
    // takes the pages first and the size after, so pages of a range that
    // was truncated away (zero-filled, or read back as a hole) are copied
    // out when the file has been extended over them again meanwhile
    // (`filemap_read`: "unless another truncate extends the file - this is
    // desired though"). Zeros past the smallest size are no bytes of ours
    // there. Direct reads of a block filesystem exclude truncation; tmpfs
    // copies from its page cache either way.
    let buffered_copy = !file.is_direct() || file.memory_backing().is_some();
    let truncated_tail = |at: u64| at >= min;
    for (i, &b) in buf.as_slice().iter().enumerate() {
        let at = r.offset + i as u64;
        let want = pattern::byte_at(at);
        if b != want && !(b == 0 && buffered_copy && truncated_tail(at)) {
            panic!("{what}: byte at file offset {at} is {b:#04x}, the file held {want:#04x} there");
        }
    }
}

/// `n` reads around the moving end of file: offsets from 256 KiB before
/// the smallest size to 64 KiB past the largest, lengths log-uniform in
/// 1 B ..= 256 KiB (for `Direct::On`, most aligned).
fn resize_plan(rng: &mut Rng, n: usize, sizes: &[u64], direct: Direct, align: u64) -> Vec<Req> {
    let lo = sizes.iter().min().unwrap() - (256 << 10);
    let hi = sizes.iter().max().unwrap() + (64 << 10);
    (0..n)
        .map(|_| {
            let shift = rng.below(19);
            let mut len = 1 + rng.below(1 << shift);
            let mut offset = lo + rng.below(hi - lo);
            if direct == Direct::On && align > 1 && rng.below(5) != 0 {
                offset -= offset % align;
                len = len.next_multiple_of(align);
            }
            Req {
                offset,
                len: len as usize,
            }
        })
        .collect()
}

/// Every API on every backend and direct mode while another thread
/// truncates the file to odd sizes and extends it again: a `Direct::Auto`
/// read that stopped inside a block (the file was shorter then) and found
/// the file longer afterwards used to read on from that unaligned position
/// and fail with EINVAL. Now no valid read fails, each result ends at a size
/// the file had, and every byte is the file's at its offset. On the temp
/// directory's filesystem and on tmpfs.
#[test]
fn differential_resizing() {
    let test = "differential_resizing";
    let seed = run_seed(test);
    let sizes = resize_sizes();
    let mut dirs = vec![tempfile::tempdir().unwrap()];
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => dirs.push(d),
        Err(e) => common::skip(
            &format!("{test} on tmpfs"),
            &format!("cannot make a directory: {e}"),
        ),
    }
    let start = std::time::Instant::now();
    let mut n = 0u64;
    for dir in &dirs {
        let fs = common::fs_of(dir.path());
        let path = dir.path().join("resizing");
        pattern::write_file(&path, sizes[0], |_| {}).unwrap();
        let resizer = Resizer::start(&path, sizes.clone(), seed);
        for kind in common::backend_kinds() {
            for direct in DIRECTS {
                n += 1;
                let case_seed = seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let name = format!("{test} [{fs} {kind} {direct:?}] seed {seed}");
                let (path, sizes) = (path.clone(), sizes.clone());
                watchdog(&name.clone(), STALL, move |p| {
                    resizing_case(&name, &path, kind, direct, &sizes, case_seed, p)
                });
            }
        }
        drop(resizer);
    }
    eprintln!("{test}: {n} combinations in {:.1?}", start.elapsed());
}

fn resizing_case(
    name: &str,
    path: &std::path::Path,
    kind: BackendKind,
    direct: Direct,
    sizes: &[u64],
    seed: u64,
    p: &Arc<Progress>,
) {
    let mut rng = Rng::from_seed(seed);
    let file = match File::open(path, direct) {
        Ok(f) => f,
        Err(e) => return common::skip(name, &format!("cannot open: {e}")),
    };
    let align = file.dio_align().offset as u64;
    let Some(mut q) = common::queue_of(kind, 16) else {
        return;
    };
    // The queue: push/reap, with read_at and read_exact_at between.
    let reads = resize_plan(&mut rng, 48, sizes, direct, align);
    let mut flight = BTreeMap::new();
    let mut out = Vec::new();
    for (i, &r) in reads.iter().enumerate() {
        match q.push(Read {
            file: &file,
            offset: r.offset,
            len: r.len,
            buf: Buf::new(r.len),
            user_data: i as u64,
            ioprio: 0,
            cache: None,
        }) {
            Ok(()) => {
                flight.insert(i as u64, r);
            }
            Err(rej) => check_resizing(
                &format!("{name} push"),
                &file,
                direct,
                sizes,
                r,
                queue_outcome(Err(rej.error), &rej.buf, false),
            ),
        }
        if i % 6 == 5 {
            let b = resize_plan(&mut rng, 1, sizes, direct, align)[0];
            let (res, buf) = q.read_at(&file, b.offset, Buf::new(b.len));
            check_resizing(
                &format!("{name} read_at"),
                &file,
                direct,
                sizes,
                b,
                queue_outcome(res, &buf, false),
            );
            let (res, buf) = q.read_exact_at(&file, b.offset, b.len, Buf::new(b.len));
            let out = queue_outcome(res.map(|()| b.len), &buf, true);
            check_resizing(
                &format!("{name} read_exact_at"),
                &file,
                direct,
                sizes,
                b,
                out,
            );
        }
        if q.in_flight() >= 8 || i + 1 == reads.len() {
            p.step(|| describe(&flight));
            let min = if i + 1 == reads.len() {
                q.in_flight()
            } else {
                1
            };
            q.reap(min, None, &mut out).unwrap();
            for c in out.drain(..) {
                let r = flight.remove(&c.user_data).expect("in flight");
                let o = queue_outcome(c.result, &c.buf, false);
                check_resizing(&format!("{name} push/reap"), &file, direct, sizes, r, o);
            }
        }
    }
    drop(q);
    // The async engine (current-thread tokio) and its blocking calls.
    let engine = match Engine::builder()
        .queue(|q| q.backend(BackendChoice::Exactly(kind)).depth(16))
        .build()
    {
        Ok(e) => e,
        Err(e) => return common::skip(&format!("backend {kind}"), &e.to_string()),
    };
    let ef = engine.file(file.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for r in resize_plan(&mut rng, 16, sizes, direct, align) {
            let (res, buf) = ef.read_at(Buf::new(r.len), r.offset).await;
            check_resizing(
                &format!("{name} engine read_at"),
                &file,
                direct,
                sizes,
                r,
                io_outcome(res, &buf, false),
            );
            let (res, buf) = ef.read_exact_at(Buf::new(r.len), r.offset).await;
            let o = io_outcome(res.map(|()| r.len), &buf, true);
            check_resizing(
                &format!("{name} engine read_exact_at"),
                &file,
                direct,
                sizes,
                r,
                o,
            );
            p.tick();
        }
        let many = resize_plan(&mut rng, 24, sizes, direct, align);
        let mut batch = ef.read_many(many.iter().map(|r| (r.offset, Buf::new(r.len))));
        while let Some(item) = batch.next().await {
            let o = io_outcome(item.result, &item.buf, false);
            check_resizing(
                &format!("{name} engine read_many"),
                &file,
                direct,
                sizes,
                many[item.index],
                o,
            );
            p.tick();
        }
    });
    drop(rt);
    let bf = match engine.open_blocking(path, direct) {
        Ok(f) => f,
        Err(e) => return common::skip(name, &format!("cannot open: {e}")),
    };
    for r in resize_plan(&mut rng, 16, sizes, direct, align) {
        let (res, buf) = bf.read_at(Buf::new(r.len), r.offset);
        check_resizing(
            &format!("{name} BlockingFile::read_at"),
            &file,
            direct,
            sizes,
            r,
            io_outcome(res, &buf, false),
        );
        let (res, buf) = bf.read_exact_at(Buf::new(r.len), r.offset);
        let o = io_outcome(res.map(|()| r.len), &buf, true);
        check_resizing(
            &format!("{name} BlockingFile::read_exact_at"),
            &file,
            direct,
            sizes,
            r,
            o,
        );
        p.tick();
    }
    let many = resize_plan(&mut rng, 24, sizes, direct, align);
    for item in bf.read_many(many.iter().map(|r| (r.offset, Buf::new(r.len)))) {
        let o = io_outcome(item.result, &item.buf, false);
        check_resizing(
            &format!("{name} BlockingMany"),
            &file,
            direct,
            sizes,
            many[item.index],
            o,
        );
        p.tick();
    }
}

/// `nowait::fs`: `read_ranges` with random ranges (inside the file,
/// straddling its end, past it; merged, split and budgeted three ways),
/// and the `AsyncRead`/`AsyncSeek` file read whole and read after random
/// seeks, on tokio's multi-thread runtime; every byte against `pread`.
#[cfg(feature = "tokio")]
#[test]
fn differential_fs() {
    use nowait::fs::RangeOptions;
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    each_case("differential_fs", |case, p| {
        let mut rng = Rng::from_seed(case.seed);
        let Some(engine) = engine_for(&case, &mut rng) else {
            return;
        };
        let mut f = match nowait::fs::File::options()
            .engine(&engine)
            .direct(case.direct)
            .readahead(1 << (17 + rng.below(6)))
            .open_now(&case.path)
        {
            Ok(f) => f,
            Err(e) => return common::skip(&case.name, &format!("cannot open: {e}")),
        };
        let want = |r: &std::ops::Range<u64>| -> &[u8] {
            let len = case.reference.len() as u64;
            &case.reference[r.start.min(len) as usize..r.end.min(len) as usize]
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let opts = [
                RangeOptions::default(),
                RangeOptions::default().gap(0).piece(4096).budget(1 << 16),
                RangeOptions::default()
                    .gap(1 + rng.below(1 << 20))
                    .piece(1 + rng.below(1 << 21) as usize),
            ];
            for o in &opts {
                let n = 1 + rng.below(48) as usize;
                let ranges: Vec<_> = plan(&mut rng, n, Direct::Off, 1)
                    .into_iter()
                    .map(|r| r.offset..r.offset + r.len as u64)
                    .collect();
                p.step(|| format!("read_ranges {o:?}: {} ranges", ranges.len()));
                let got = nowait::fs::read_ranges_with(&f, &ranges, o).await.unwrap();
                for (r, b) in ranges.iter().zip(&got) {
                    assert!(&b[..] == want(r), "{}: read_ranges {r:?} {o:?}", case.name);
                }
            }
            p.step(|| "read_to_end".into());
            let mut all = Vec::new();
            f.read_to_end(&mut all).await.unwrap();
            assert!(all == *case.reference, "{}: read_to_end", case.name);
            for i in 0..24 {
                let at = rng.below(SIZE + 1000);
                let shift = rng.below(21);
                let len = 1 + rng.below(1 << shift) as usize;
                p.step(|| format!("seek {i} to {at}, read {len}"));
                assert_eq!(f.seek(std::io::SeekFrom::Start(at)).await.unwrap(), at);
                let mut b = vec![0u8; len];
                let mut n = 0;
                while n < len {
                    let k = f.read(&mut b[n..]).await.unwrap();
                    if k == 0 {
                        break;
                    }
                    n += k;
                }
                let r = at..at + len as u64;
                assert!(
                    &b[..n] == want(&r),
                    "{}: read {len} after seek to {at}",
                    case.name
                );
            }
        });
    });
}
