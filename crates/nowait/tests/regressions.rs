//! Regression tests for issue #11, each named after
//! what broke and each failing without its fix: a blocking read with other
//! reads in flight that never returned, a probe that leaked a ring per call,
//! and registered buffer memory the queue let go of.

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
