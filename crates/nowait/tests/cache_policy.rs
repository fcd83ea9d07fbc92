//! The cache policy (`RWF_DONTCACHE`): uncached reads drop what they bring
//! into the page cache on every backend and path (io_uring, the pool's
//! workers and its `RWF_NOWAIT` try, the async engine's first-poll try,
//! aio, sync) on ext4 and xfs; a filesystem without uncached reads (tmpfs)
//! reads on cached and is remembered; and under a memory cgroup a scan read
//! uncached (drop, or adaptive with no setting) leaves a hot set resident
//! where a cached one (keep) evicts it. Residency is checked with
//! `mincore(2)`; every byte read is checked against the pattern.

// The memory cgroup and mincore(2): the command's, one copy for both crates.
#[path = "../../nowait-cli/src/driver/cgroup.rs"]
mod cgroup;
mod common;
#[allow(dead_code)] // only `resident` is used here
#[path = "../../nowait-cli/src/base/sys.rs"]
mod sys;

use std::path::{Path, PathBuf};

use common::skip;
use common::{pattern_file, run_child};
use nowait::{
    BackendChoice, BackendKind, Buf, CachePolicy, Direct, DontcacheSupport, Engine, File,
    NowaitMode, Queue, Read, ReadFlag, Refusal,
};

const FILE: u64 = 8 << 20;
const BS: usize = 128 << 10;

/// Share of `path` resident in the page cache.
fn resident_share(path: &Path) -> f64 {
    let (r, t) = sys::resident(path).expect("mincore");
    r as f64 / t.max(1) as f64
}

/// Read all of `file` through `q` in `BS` reads, 8 in flight, each pushed
/// with `per_read` (or the queue's and file's policy), checking every byte.
fn read_all(q: &mut Queue, file: &File, per_read: Option<CachePolicy>) -> u64 {
    let reads = FILE / BS as u64;
    let mut next = 0u64;
    let mut done = 0u64;
    let mut out = Vec::new();
    while done < reads {
        while next < reads && q.in_flight() < 8 {
            let req = Read {
                file,
                offset: next * BS as u64,
                len: BS,
                buf: Buf::new(BS),
                user_data: next,
                ioprio: 0,
                cache: per_read,
            };
            q.push(req).unwrap();
            next += 1;
        }
        q.reap(1, None, &mut out).unwrap();
        for c in out.drain(..) {
            let n = c.result.unwrap();
            assert_eq!(n, BS, "read {}", c.user_data);
            nowait::pattern::check(c.user_data * BS as u64, c.buf.as_slice()).unwrap();
            done += 1;
        }
    }
    reads
}

/// The same through an engine's futures, one at a time (each read's first
/// poll tries the page cache with `RWF_NOWAIT`, as `NowaitMode::Always`
/// makes it).
fn engine_read_all(file: &nowait::EngineFile, per_read: Option<CachePolicy>) -> u64 {
    let reads = FILE / BS as u64;
    nowait::block_on(async {
        for i in 0..reads {
            let f = file.read_at(Buf::new(BS), i * BS as u64);
            let (n, buf) = match per_read {
                Some(p) => f.cache(p).await,
                None => f.await,
            };
            assert_eq!(n.unwrap(), BS, "read {i}");
            nowait::pattern::check(i * BS as u64, buf.as_slice()).unwrap();
        }
    });
    reads
}

/// Where the flag goes: one way of reading a file.
#[derive(Debug, Clone, Copy)]
enum Way {
    Queue(BackendKind),
    Engine(BackendKind),
}

fn paths() -> Vec<Way> {
    let mut v: Vec<Way> = common::backend_kinds()
        .into_iter()
        .map(Way::Queue)
        .collect();
    // The engine's first-poll try is made on uring (and aio) rings; on a
    // pool ring the queue's own try is made at push.
    v.extend([
        Way::Engine(BackendKind::Uring),
        Way::Engine(BackendKind::Pool),
    ]);
    v
}

/// Read `path` cold with `policy` (set on the queue or engine, the file,
/// or each read: `how` 0, 1, 2) and return the share left resident and the
/// cache counters' `uncached` (queue paths only).
fn run(way: Way, path: &Path, policy: CachePolicy, how: usize) -> (f64, Option<u64>) {
    let file = File::open(path, Direct::Off).unwrap();
    file.drop_cache().unwrap();
    assert!(resident_share(path) < 0.01, "{path:?} not dropped");
    let on_builder = if how == 0 { policy } else { CachePolicy::Keep };
    if how == 1 {
        file.set_cache_policy(policy);
    }
    let per_read = (how == 2).then_some(policy);
    match way {
        Way::Queue(kind) => {
            let mut q = Queue::builder()
                .depth(16)
                .backend(BackendChoice::Exactly(kind))
                .nowait(NowaitMode::Always)
                .cache(on_builder)
                .build()
                .unwrap();
            let reads = read_all(&mut q, &file, per_read);
            let st = q.stats().dontcache;
            assert_eq!(st.kept + st.refused, 0, "{way:?}: {st}");
            let uncached = st.uncached;
            if policy == CachePolicy::Drop {
                assert_eq!(uncached, reads, "{way:?}: {st}");
            } else {
                assert_eq!(uncached, 0, "{way:?}: {st}");
            }
            drop(q);
            (resident_share(path), Some(uncached))
        }
        Way::Engine(kind) => {
            let engine = Engine::builder()
                .queue(|q| {
                    q.backend(BackendChoice::Exactly(kind))
                        .nowait(NowaitMode::Always)
                        .cache(on_builder)
                })
                .build()
                .unwrap();
            let ef = engine.file(file);
            engine_read_all(&ef, per_read);
            let tries = engine.stats().nowait.tries + engine.stats().queue.backend.nowait.tries;
            assert!(tries > 0, "{way:?}: no page-cache try was made");
            drop(ef);
            drop(engine);
            (resident_share(path), None)
        }
    }
}

fn flag_on_every_path(dir: &Path, fs: &str) {
    let path = pattern_file(dir, "scan.bin", FILE);
    for way in paths() {
        for how in 0..3 {
            let (kept, _) = run(way, &path, CachePolicy::Keep, how);
            assert!(
                kept > 0.9,
                "{fs} {way:?}: a cached read left only {kept:.2} resident"
            );
            let (dropped, _) = run(way, &path, CachePolicy::Drop, how);
            eprintln!("{fs} {way:?} how {how}: keep {kept:.3}, drop {dropped:.3}");
            // A few pages may stay, marked to be dropped at their next use:
            // the kernel drops a page after the copy only if it can lock
            // it then, and concurrent reads of a readahead window hold
            // locks. Without the flag the whole file stays.
            assert!(
                dropped < 0.25,
                "{fs} {way:?} (policy set {}): an uncached read left {dropped:.2} of the file resident",
                ["on the builder", "on the file", "per read"][how]
            );
        }
        // Pages cached before an uncached read stay.
        let file = File::open(&path, Direct::Off).unwrap();
        // A plain read drops a page an uncached read left behind marked to
        // be dropped (one the kernel could not lock to drop at once), so
        // read twice.
        std::fs::read(&path).unwrap();
        std::fs::read(&path).unwrap();
        let warm = resident_share(&path);
        assert!(
            warm > 0.99,
            "{fs} {way:?}: a plain read left {warm:.2} resident"
        );
        let mut q = Queue::builder()
            .backend(match way {
                Way::Queue(k) | Way::Engine(k) => BackendChoice::Exactly(k),
            })
            .cache(CachePolicy::Drop)
            .build()
            .unwrap();
        read_all(&mut q, &file, None);
        let left = resident_share(&path);
        assert!(
            left > 0.99,
            "{fs} {way:?}: an uncached read of a cached file evicted it ({left:.2})"
        );
        assert_eq!(file.cache_state().dontcache, DontcacheSupport::Accepted);
    }
}

#[test]
fn dontcache_reads_leave_nothing_cached_on_ext4_on_every_path() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let fs = common::fs_of(dir.path());
    if fs != "ext4" {
        skip(
            "dontcache_reads_leave_nothing_cached_on_ext4_on_every_path",
            &format!("/var/tmp is {fs}, not ext4"),
        );
        return;
    }
    flag_on_every_path(dir.path(), fs);
}

#[test]
fn dontcache_reads_leave_nothing_cached_on_xfs_on_every_path() {
    let m = match common::LoopMount::new("mkfs.xfs", 300) {
        Ok(m) => m,
        Err(why) => {
            skip(
                "dontcache_reads_leave_nothing_cached_on_xfs_on_every_path",
                &why,
            );
            return;
        }
    };
    flag_on_every_path(m.dir.path(), "xfs");
}

/// Runs in a child process: the filesystem memory is process-wide.
#[test]
fn dontcache_on_tmpfs_reads_cached_and_is_remembered() {
    run_child("tmpfs_child", &[]);
}

#[test]
#[ignore = "run by dontcache_on_tmpfs_reads_cached_and_is_remembered in a child process"]
fn tmpfs_child() {
    common::assert_in_child("tmpfs_child");
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    assert_eq!(common::fs_of(dir.path()), "tmpfs");
    let first = pattern_file(dir.path(), "a.bin", FILE);
    let second = pattern_file(dir.path(), "b.bin", FILE);
    let tmpfs_off = |f: &File| f.cache_state().dontcache;
    let mut ways = paths();
    ways.retain(|w| matches!(w, Way::Queue(_)));
    for (i, way) in ways.into_iter().enumerate() {
        let Way::Queue(kind) = way else {
            unreachable!()
        };
        let path = if i == 0 { &first } else { &second };
        let file = File::open(path, Direct::Off).unwrap();
        let mut q = Queue::builder()
            .depth(16)
            .backend(BackendChoice::Exactly(kind))
            .cache(CachePolicy::Drop)
            .build()
            .unwrap();
        let reads = read_all(&mut q, &file, None);
        let st = q.stats().dontcache;
        assert_eq!(
            (st.uncached, st.kept, st.refused),
            (0, reads, 0),
            "{kind}: {st}"
        );
        let want = if i == 0 {
            Refusal::Refused {
                flag: ReadFlag::Dontcache,
                fs: "tmpfs",
                errno: libc::EOPNOTSUPP,
            }
        } else {
            Refusal::Filesystem {
                flag: ReadFlag::Dontcache,
                fs: "tmpfs",
                errno: libc::EOPNOTSUPP,
            }
        };
        assert_eq!(tmpfs_off(&file), DontcacheSupport::Off(want), "{kind}");
    }
    assert!(nowait::page_cache::refused_filesystems()
        .iter()
        .any(|r| r.fs == "tmpfs" && r.flag == ReadFlag::Dontcache));
    // The engine decides in a read's first poll; its queue counts it.
    let engine = Engine::builder()
        .queue(|q| q.cache(CachePolicy::Drop))
        .build()
        .unwrap();
    let ef = engine.open(&second, Direct::Off).unwrap();
    let reads = engine_read_all(&ef, None);
    let st = engine.stats().queue.dontcache;
    assert_eq!(
        (st.uncached, st.kept, st.refused),
        (0, reads, 0),
        "engine: {st}"
    );
}

// --- A scan under a memory cgroup ---

/// The cgroup's limit, the hot set and the scan: the scan is four times
/// the limit, the hot set half of it (the kernel keeps its active list no
/// larger than the inactive one at this size, so a cached scan pushes hot
/// pages out; a hot set a quarter of the limit survives a scan whatever
/// its policy).
const LIMIT: u64 = 96 << 20;
const HOT: u64 = 48 << 20;
const SCAN: u64 = 384 << 20;

fn scan_files(dir: &Path) -> (PathBuf, PathBuf) {
    let hot = pattern_file(dir, "hot.bin", HOT);
    let scan = pattern_file(dir, "scan.bin", SCAN);
    // Written from this process, the pages are charged to its cgroup: drop
    // them so the child's reads bring them in under its own limit.
    for p in [&hot, &scan] {
        let f = File::open(p, Direct::Off).unwrap();
        f.drop_cache().unwrap();
    }
    (hot, scan)
}

/// What share of the hot set a scan with each policy leaves resident, each
/// in a fresh cgroup: (keep, drop, adaptive).
fn hot_set_after_scans(test: &str) -> Option<[f64; 3]> {
    if !common::is_root() {
        skip(test, "needs root to make a memory cgroup");
        return None;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (hot, scan) = scan_files(dir.path());
    let mut out = [0.0; 3];
    for (i, policy) in ["keep", "drop", "adaptive"].into_iter().enumerate() {
        let cg = match cgroup::MemCgroup::new("nowait-test-scan", LIMIT) {
            Ok(c) => c,
            Err(why) => {
                skip(test, &why);
                return None;
            }
        };
        eprintln!(
            "{policy}: cgroup {} = {} bytes at {}",
            cg.kind(),
            cg.limit(),
            cg.dir().display()
        );
        run_child(
            "scan_child",
            &[
                ("NOWAIT_TEST_PROCS", cg.procs().to_str().unwrap()),
                ("NOWAIT_TEST_POLICY", policy),
                ("NOWAIT_TEST_HOT", hot.to_str().unwrap()),
                ("NOWAIT_TEST_SCAN", scan.to_str().unwrap()),
            ],
        );
        out[i] = resident_share(&hot);
        eprintln!("{policy}: hot set {:.2} resident after the scan", out[i]);
        for p in [&hot, &scan] {
            File::open(p, Direct::Off).unwrap().drop_cache().unwrap();
        }
    }
    Some(out)
}

#[test]
fn a_scan_uncached_leaves_the_hot_set_resident_under_a_memory_cgroup() {
    let test = "a_scan_uncached_leaves_the_hot_set_resident_under_a_memory_cgroup";
    let Some([keep, drop, adaptive]) = hot_set_after_scans(test) else {
        return;
    };
    assert!(
        keep < 0.5,
        "a cached scan left {keep:.2} of the hot set: the cgroup did not bind"
    );
    assert!(
        drop > 0.9,
        "an uncached scan left only {drop:.2} of the hot set"
    );
    assert!(
        adaptive > 0.9,
        "an adaptive scan left only {adaptive:.2} of the hot set"
    );
}

#[test]
#[ignore = "run by a_scan_uncached_leaves_the_hot_set_resident_under_a_memory_cgroup in a cgroup"]
fn scan_child() {
    common::assert_in_child("scan_child");
    let env = |k: &str| std::env::var(k).unwrap();
    cgroup::enter(Path::new(&env("NOWAIT_TEST_PROCS"))).unwrap();
    let policy: CachePolicy = env("NOWAIT_TEST_POLICY").parse().unwrap();
    let (hot, scan) = (
        PathBuf::from(env("NOWAIT_TEST_HOT")),
        PathBuf::from(env("NOWAIT_TEST_SCAN")),
    );
    // Warm the hot set.
    std::fs::read(&hot).unwrap();
    let warm = resident_share(&hot);
    assert!(
        warm > 0.95,
        "the hot set did not fit the cgroup ({warm:.2})"
    );
    // The scan, sequential 256 KiB reads 8 deep on the default backend; the
    // policy is set on the queue (adaptive: nothing else to set).
    let file = File::open(&scan, Direct::Off).unwrap();
    let mut q = Queue::builder().depth(8).cache(policy).build().unwrap();
    let bs = 256 << 10;
    let reads = SCAN / bs as u64;
    let (mut next, mut done, mut out) = (0u64, 0u64, Vec::new());
    while done < reads {
        while next < reads && q.in_flight() < 8 {
            let req = Read {
                file: &file,
                offset: next * bs as u64,
                len: bs,
                buf: Buf::new(bs),
                user_data: next,
                ioprio: 0,
                cache: None,
            };
            q.push(req).unwrap();
            next += 1;
        }
        q.reap(1, None, &mut out).unwrap();
        for c in out.drain(..) {
            assert_eq!(c.result.unwrap(), bs);
            nowait::pattern::check(c.user_data * bs as u64, c.buf.as_slice()).unwrap();
            done += 1;
        }
    }
    let st = q.stats().dontcache;
    let state = file.cache_state();
    eprintln!("{policy}: {st}; scan file: {state:?}");
    match policy {
        CachePolicy::Keep => assert_eq!(st.uncached, 0),
        CachePolicy::Drop => assert_eq!(st.uncached, reads),
        CachePolicy::Adaptive => {
            // The first SCAN_RUN reads make the run; every later one is a
            // scan read of a file four times the limit, none of it cached.
            assert!(state.scanning && state.switches == 1, "{state:?}");
            assert!(
                st.uncached >= reads - nowait::page_cache::policy::SCAN_RUN as u64,
                "{st}"
            );
        }
    }
}
