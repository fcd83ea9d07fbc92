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
