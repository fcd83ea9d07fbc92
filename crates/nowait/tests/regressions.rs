//! Regression tests for what issues #11 and #21 found from outside, each
//! named after what broke and each failing without its fix: a blocking read
//! with other reads in flight that never returned, a probe that leaked a
//! ring per call, registered buffer memory the queue let go of, and a
//! dropped queue that ran the reads it was never asked to submit.

mod common;

use std::time::Duration;

use common::{pattern_file, watchdog};
use nowait::{pattern, Buf, Direct, File, Queue, Read};

const STALL: Duration = Duration::from_secs(10);

/// `Queue::read_at` / `read_exact_at` with ten other reads in flight, on
/// every backend: each returns its own bytes, and the ten come back from the
/// next reaps, once each. Without the fix, a completion `read_at` stashed for
/// later satisfied its own `reap(1)` forever: 100% CPU, no return.
#[test]
fn read_at_with_reads_in_flight_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f", 4 << 20);
    for kind in common::backend_kinds() {
        let path = path.clone();
        watchdog(&format!("read_at on {kind}"), STALL, move |p| {
            let Some(mut q) = common::queue_of(kind, 64) else {
                return;
            };
            let file = File::open(&path, Direct::Off).unwrap();
            for round in 0..20u64 {
                for i in 0..10u64 {
                    q.push(Read {
                        file: &file,
                        offset: (round * 10 + i) * 8192,
                        len: 8192,
                        buf: Buf::new(8192),
                        user_data: i,
                        ioprio: 0,
                        cache: None,
                    })
                    .map_err(|r| r.error)
                    .unwrap();
                }
                q.submit().unwrap();
                p.step(|| format!("round {round}: read_at(3 MiB) with 10 reads in flight"));
                let (r, buf) = q.read_at(&file, 3 << 20, Buf::new(4096));
                assert_eq!(r.unwrap(), 4096, "{kind}");
                pattern::check(3 << 20, buf.as_slice()).unwrap();
                p.step(|| format!("round {round}: read_exact_at with reads in flight"));
                let (r, buf) = q.read_exact_at(&file, (1 << 20) + 5, 777, Buf::new(1024));
                r.unwrap();
                pattern::check((1 << 20) + 5, buf.as_slice()).unwrap();
                p.step(|| format!("round {round}: reaping the 10"));
                let mut out = Vec::new();
                while out.len() < 10 {
                    q.reap(10 - out.len(), Some(STALL), &mut out).unwrap();
                    p.tick();
                }
                assert_eq!(out.len(), 10, "{kind}: one completion per read");
                let mut seen = [false; 10];
                for c in out {
                    let i = c.user_data as usize;
                    assert!(!std::mem::replace(&mut seen[i], true), "{kind}: {i} twice");
                    assert_eq!(c.result.unwrap(), 8192);
                    pattern::check((round * 10 + i as u64) * 8192, c.buf.as_slice()).unwrap();
                }
                assert_eq!(q.in_flight(), 0, "{kind}");
            }
        });
    }
}

/// `probe::machine()` many times on one thread, then a queue on that
/// thread: every probe can register a ring fd and the queue still gets one.
/// Without the fix, each probe left its ring registered in the thread's
/// io_uring context (kept alive until the thread exits); after 16 the table
/// was full, later probes reported the registration refused and every queue
/// built on the thread silently lost its registered ring fd.
#[test]
fn probe_machine_does_not_leak_rings() {
    let test = "probe_machine_does_not_leak_rings";
    std::thread::spawn(move || {
        for i in 0..40 {
            let m = nowait::probe::machine();
            let flags = match m.uring {
                nowait::probe::UringStatus::Available { flags, .. } => flags,
                nowait::probe::UringStatus::Unavailable { reason, .. } => {
                    return common::skip(test, &format!("io_uring unavailable: {reason}"));
                }
            };
            let fd = flags
                .iter()
                .find(|f| f.flag == "registered ring fd")
                .expect("the probe reports the registered ring fd");
            if i == 0 && fd.result.is_err() {
                return common::skip(
                    test,
                    &format!("the kernel refuses registered ring fds: {:?}", fd.result),
                );
            }
            assert_eq!(fd.result, Ok(()), "probe {i}: registered ring fd refused");
        }
        let q = Queue::builder()
            .backend(nowait::BackendChoice::Exactly(nowait::BackendKind::Uring))
            .build()
            .unwrap();
        assert!(
            q.backend().detail.contains("registered ring fd"),
            "a queue after 40 probes has no registered ring fd: {}",
            q.backend().detail
        );
    })
    .join()
    .unwrap();
}

/// Buffers taken from a queue's registered pool and dropped by the caller
/// must not hand their memory back to the allocator while the queue (and
/// its ring, which has the memory pinned and registered) lives: no later
/// allocation may land on it. Without the fix each pool buffer owned its
/// own allocation, so `take_buf` + drop freed registered memory (and
/// `BufPool::put` dropped buffers of another size) while the backend's
/// SAFETY comment said the queue kept it allocated.
#[test]
fn registered_buffers_stay_allocated_while_the_queue_lives() {
    const SIZE: usize = 64 << 10;
    let mut q = match Queue::builder()
        .backend(nowait::BackendChoice::Exactly(nowait::BackendKind::Uring))
        .fixed_buffers(8, SIZE)
        .build()
    {
        Ok(q) => q,
        Err(e) => {
            return common::skip(
                "registered_buffers_stay_allocated_while_the_queue_lives",
                &format!("io_uring unavailable: {e}"),
            )
        }
    };
    let mut ranges = Vec::new();
    while let Some(b) = q.take_buf() {
        ranges.push(b.as_slice().as_ptr() as usize..b.as_slice().as_ptr() as usize + SIZE);
        drop(b);
    }
    assert_eq!(ranges.len(), 8, "the pool holds 8 buffers");
    // The same size and alignment as the pool's buffers: what the allocator
    // would hand out from memory they gave back.
    let later: Vec<Buf> = (0..64).map(|_| Buf::with_align(SIZE, 4096)).collect();
    for b in &later {
        let at = b.as_slice().as_ptr() as usize;
        for r in &ranges {
            assert!(
                !(r.contains(&at) || r.contains(&(at + SIZE - 1))),
                "a new buffer at {at:#x} lies in registered memory {r:x?} the queue still has registered"
            );
        }
    }
    // The queue still reads correctly into fresh buffers after all that.
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f", 1 << 20);
    let file = File::open(&path, Direct::Off).unwrap();
    let (r, buf) = q.read_at(&file, 12345, Buf::new(SIZE));
    assert_eq!(r.unwrap(), SIZE);
    pattern::check(12345, buf.as_slice()).unwrap();
}

/// Dropping a queue drops the reads pushed and never submitted: nothing
/// writes their memory once the drop starts (it used to submit and run
/// them). Reads submitted before are still waited for, and hold the file's
/// bytes when the drop returns. Every backend, buffered and `Direct::Auto`,
/// on the temp directory's filesystem and on tmpfs (with fewer reads than
/// the inline window: past it a push reads a memory-backed file itself and
/// hands the reads queued before it to the kernel).
#[test]
fn dropping_a_queue_leaves_unsubmitted_reads_unread() {
    const LEN: usize = 4096;
    const SUBMITTED: usize = 8;
    const CANARY: u8 = 0xa5;
    let size: u64 = 4 << 20;
    let mut dirs = vec![("tempdir", tempfile::tempdir().unwrap(), 56)];
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => dirs.push(("tmpfs", d, 16)),
        Err(e) => common::skip(
            "dropping_a_queue_leaves_unsubmitted_reads_unread on tmpfs",
            &format!("cannot make a directory in /dev/shm: {e}"),
        ),
    }
    let mut rng = common::Rng::from_env("dropping_a_queue_leaves_unsubmitted_reads_unread");
    for (fs, dir, unsubmitted) in &dirs {
        let path = pattern_file(dir.path(), "f", size);
        let total = SUBMITTED + unsubmitted;
        for kind in common::backend_kinds() {
            for direct in [Direct::Off, Direct::Auto] {
                let Some(mut q) = common::queue_of(kind, 64) else {
                    continue;
                };
                let file = File::open(&path, direct).unwrap();
                // The caller's memory, as C and Python hand it over.
                let mut mem = vec![CANARY; total * LEN + 4096];
                let base = mem.as_ptr().align_offset(4096);
                let mut offsets = Vec::new();
                for i in 0..total {
                    if i == SUBMITTED {
                        q.submit().unwrap();
                    }
                    let offset = rng.below(size / LEN as u64) * LEN as u64;
                    offsets.push(offset);
                    let at = base + i * LEN;
                    // SAFETY: `mem[at..at + LEN]` is valid and initialised,
                    // and nothing else touches it until the queue is dropped
                    // below (the drop ends every read's use of it).
                    let buf = unsafe { Buf::from_raw_parts(mem.as_mut_ptr().add(at), LEN) };
                    q.push(Read {
                        file: &file,
                        offset,
                        len: LEN,
                        buf,
                        user_data: i as u64,
                        ioprio: 0,
                        cache: None,
                    })
                    .map_err(|r| r.error)
                    .unwrap();
                }
                // What the memory holds as the drop starts (a read of a
                // memory-backed file may have been done inline at push).
                let before = mem.clone();
                drop(q);
                let what = format!("{kind} on {fs}, {direct:?}");
                for (i, &offset) in offsets.iter().enumerate() {
                    let at = base + i * LEN;
                    let now = &mem[at..at + LEN];
                    if i < SUBMITTED {
                        pattern::check(offset, now).unwrap_or_else(|e| {
                            panic!(
                                "{what}: submitted read {i} not done when the drop returned: {e}"
                            )
                        });
                    } else {
                        assert!(
                            now == &before[at..at + LEN],
                            "{what}: the drop wrote the memory of unsubmitted read {i}"
                        );
                    }
                }
            }
        }
    }
}
