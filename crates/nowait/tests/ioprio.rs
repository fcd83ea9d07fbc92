//! Per-read I/O priority reaches the kernel on every backend: a read with a
//! priority the kernel refuses (an unknown class) fails with EINVAL —
//! io_uring's `sqe->ioprio`, native AIO's `aio_reqprio`, `ioprio_set(2)` on
//! the pool's worker and around the sync backend's `pread` — while a read
//! with a valid one returns the file's bytes, and the pool's worker runs
//! at the priority of the read it serves.

mod common;

use std::path::Path;

use common::{backend_kinds, direct_dir, pattern_file, queue_of};
use nowait::{
    ioprio, pattern, Buf, Direct, Error, File, Queue, Read, IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE,
};

const SIZE: u64 = 1 << 20;

/// An I/O priority class the kernel does not know (classes are 0 to 3).
const BAD_CLASS: u16 = 7;

/// Read 4 KiB at `offset` of `file` with priority `prio`; the result.
fn read_one(q: &mut Queue, file: &File, offset: u64, prio: u16) -> Result<Vec<u8>, Error> {
    let buf = Buf::new(4096);
    q.push(Read {
        file,
        offset,
        len: 4096,
        buf,
        user_data: offset,
        ioprio: prio,
        cache: None,
    })
    .map_err(|r| r.error)?;
    q.submit()?;
    let mut done = Vec::new();
    q.reap(1, None, &mut done)?;
    let c = done.pop().expect("one completion");
    assert_eq!(c.user_data, offset);
    c.result.map(|n| c.buf.as_slice()[..n].to_vec())
}

fn errno_of(e: &Error) -> Option<i32> {
    match e {
        Error::Read { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

fn every_backend(path: &Path, direct: Direct, label: &str) {
    for kind in backend_kinds() {
        let Some(mut q) = queue_of(kind, 4) else {
            continue;
        };
        let file = File::open(path, direct).unwrap();
        let what = format!("{kind} {label}");
        // The pool backend answers a buffered read the page cache holds on
        // the calling thread (its RWF_NOWAIT try), where no priority
        // applies: its buffered reads are not asked to reach the kernel.
        let reaches_device = file.is_direct()
            || !matches!(
                kind,
                nowait::BackendKind::Pool | nowait::BackendKind::AioPool
            );
        if reaches_device {
            let e = read_one(&mut q, &file, 8192, ioprio(BAD_CLASS, 0))
                .expect_err(&format!("{what}: a read with I/O priority class {BAD_CLASS} was not refused: the priority never reached the kernel"));
            assert_eq!(errno_of(&e), Some(libc::EINVAL), "{what}: {e}");
        }
        for (i, prio) in [ioprio(IOPRIO_CLASS_IDLE, 0), ioprio(IOPRIO_CLASS_BE, 7), 0]
            .into_iter()
            .enumerate()
        {
            let off = 4096 * (3 + i as u64 * 17);
            let data = read_one(&mut q, &file, off, prio)
                .unwrap_or_else(|e| panic!("{what}: priority {prio:#x}: {e}"));
            assert_eq!(data.len(), 4096, "{what}");
            pattern::check(off, &data).unwrap_or_else(|m| panic!("{what}: {m:?}"));
        }
    }
}

#[test]
fn invalid_priority_is_refused_by_the_kernel_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f", SIZE);
    every_backend(&path, Direct::Off, "buffered");
    match direct_dir() {
        Ok(d) => {
            let path = pattern_file(d.path(), "f", SIZE);
            every_backend(&path, Direct::On, "direct");
        }
        Err(why) => common::skip("ioprio direct reads", &why),
    }
}

/// `ioprio_get(2)` of thread `tid`.
fn ioprio_of(tid: i32) -> i64 {
    // SAFETY: ioprio_get takes integers and touches no memory.
    unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid) }
}

#[test]
fn pool_worker_runs_at_the_priority_of_its_read() {
    let d = match direct_dir() {
        Ok(d) => d,
        Err(why) => return common::skip("pool worker priority", &why),
    };
    let path = pattern_file(d.path(), "f", SIZE);
    let file = File::open(&path, Direct::On).unwrap();
    let Some(mut q) = queue_of(nowait::BackendKind::Pool, 1) else {
        return;
    };
    let want = ioprio(IOPRIO_CLASS_BE, 6);
    let data = read_one(&mut q, &file, 4096, want).unwrap();
    pattern::check(4096, &data).unwrap();
    let mut seen = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").unwrap() {
        let tid: i32 = e.unwrap().file_name().to_string_lossy().parse().unwrap();
        let comm =
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
        if comm.starts_with("nowait-pool") {
            seen.push(ioprio_of(tid));
        }
    }
    assert!(
        seen.contains(&i64::from(want)),
        "no pool worker runs at priority {want:#x} after serving a read with it: {seen:x?}"
    );
}

/// An engine reading on backend `kind`, with no first-poll page-cache try
/// (every read goes to the ring), or `None` when the machine lacks it.
fn engine_of(kind: nowait::BackendKind) -> Option<nowait::Engine> {
    match nowait::Engine::builder()
        .queue(|q| {
            q.backend(nowait::BackendChoice::Exactly(kind))
                .depth(8)
                .nowait(nowait::NowaitMode::Off)
        })
        .build()
    {
        Ok(e) => Some(e),
        Err(e) => {
            common::skip_line(&format!("engine on backend {kind}: {e}"));
            None
        }
    }
}

/// The errno of an engine read's error (the library's [`Error`] inside
/// the `io::Error`).
fn io_errno(e: &std::io::Error) -> Option<i32> {
    e.raw_os_error().or_else(|| {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<Error>())
            .and_then(errno_of)
    })
}

/// Engine reads of `path` (direct or not) on every backend: each way the
/// async engine takes a priority (`ReadAt`, `ReadExactAt`, `ReadMany`,
/// `fs::File::set_ioprio`, `RangeOptions::ioprio`) reaches the kernel,
/// which refuses an unknown class with EINVAL; a valid one reads the
/// file's bytes.
fn every_engine(path: &Path, direct: Direct, label: &str) {
    for kind in backend_kinds() {
        let Some(engine) = engine_of(kind) else {
            continue;
        };
        let what = format!("engine {kind} {label}");
        // As for the queue: the pool answers a buffered read the page
        // cache holds on the calling thread, with no priority.
        let reaches_device = direct == Direct::On
            || !matches!(
                kind,
                nowait::BackendKind::Pool | nowait::BackendKind::AioPool
            );
        let file = engine.open(path, direct).unwrap();
        let bad = ioprio(BAD_CLASS, 0);
        nowait::block_on(async {
            if reaches_device {
                let (r, _) = file.read_at(Buf::new(4096), 8192).ioprio(bad).await;
                let e = r.expect_err(&format!("{what}: read_at with class {BAD_CLASS} was not refused: the priority never reached the kernel"));
                assert_eq!(io_errno(&e), Some(libc::EINVAL), "{what}: read_at: {e}");
                let (r, _) = file.read_exact_at(Buf::new(4096), 8192).ioprio(bad).await;
                let e = r.expect_err(&format!("{what}: read_exact_at not refused"));
                assert_eq!(
                    io_errno(&e),
                    Some(libc::EINVAL),
                    "{what}: read_exact_at: {e}"
                );
                let mut many = file
                    .read_many([(0, Buf::new(4096)), (65536, Buf::new(4096))])
                    .ioprio(bad);
                while let Some(item) = many.next().await {
                    let e = item
                        .result
                        .expect_err(&format!("{what}: read_many not refused"));
                    assert_eq!(io_errno(&e), Some(libc::EINVAL), "{what}: read_many: {e}");
                }
                let opts = nowait::fs::RangeOptions::default().ioprio(bad);
                let e = nowait::fs::read_ranges_with(&file, &[0..100, 200_000..200_010], &opts)
                    .await
                    .expect_err(&format!("{what}: read_ranges not refused"));
                assert_eq!(io_errno(&e), Some(libc::EINVAL), "{what}: read_ranges: {e}");
                let mut f = nowait::fs::File::options()
                    .engine(&engine)
                    .direct(direct)
                    .open(path)
                    .await
                    .unwrap();
                f.set_ioprio(bad);
                let mut dst = vec![0u8; 4096];
                let e = f
                    .read_at(&mut dst, 4096 * 9)
                    .await
                    .expect_err(&format!("{what}: fs::File::read_at not refused"));
                assert_eq!(io_errno(&e), Some(libc::EINVAL), "{what}: fs::File: {e}");
            }
            let good = ioprio(IOPRIO_CLASS_IDLE, 0);
            let off = 4096 * 40;
            let (r, buf) = file.read_at(Buf::new(4096), off).ioprio(good).await;
            assert_eq!(r.unwrap_or_else(|e| panic!("{what}: {e}")), 4096, "{what}");
            pattern::check(off, buf.as_slice()).unwrap_or_else(|m| panic!("{what}: {m:?}"));
            let mut many = file
                .read_many([(8192, Buf::new(4096)), (1 << 19, Buf::new(8192))])
                .ioprio(ioprio(IOPRIO_CLASS_BE, 7));
            while let Some(item) = many.next().await {
                let n = item.result.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(n, item.buf.capacity(), "{what}");
                pattern::check(item.offset, item.buf.as_slice())
                    .unwrap_or_else(|m| panic!("{what}: {m:?}"));
            }
            let opts = nowait::fs::RangeOptions::default().ioprio(good);
            let parts = nowait::fs::read_ranges_with(&file, &[100..200, 300_000..300_050], &opts)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            pattern::check(100, &parts[0]).unwrap_or_else(|m| panic!("{what}: {m:?}"));
            pattern::check(300_000, &parts[1]).unwrap_or_else(|m| panic!("{what}: {m:?}"));
        });
    }
}

#[test]
fn engine_reads_carry_their_priority_to_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f", SIZE);
    every_engine(&path, Direct::Off, "buffered");
    match direct_dir() {
        Ok(d) => {
            let path = pattern_file(d.path(), "f", SIZE);
            every_engine(&path, Direct::On, "direct");
        }
        Err(why) => common::skip("ioprio direct engine reads", &why),
    }
}
