//! `Queue::completion_fd`: an event loop that only ever sleeps in poll(2)
//! on the fd, and reaps with `min == 0`, gets every read back — on every
//! backend, for reads the backend completes and for reads the queue
//! finishes itself (memory-backed files read inline, zero-length reads,
//! the `sync` backend). A lost wake-up shows up as a poll that times out.

mod common;

use std::io::Read as _;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

use common::{backends, pattern_file, Rng};
use nowait::{pattern, Buf, Completion, Direct, File, Queue, Read};

/// Wait until `fd` is readable; panics after `secs` seconds (a lost wake-up).
fn wait_readable(fd: BorrowedFd<'_>, secs: i32, what: &str) {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is a live, initialised pollfd and we pass a count of 1.
        let r = unsafe { libc::poll(&mut pfd, 1, secs * 1000) };
        if r > 0 {
            return;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        panic!("{what}: the completion fd did not become readable within {secs} s (r = {r})");
    }
}

/// Clear the eventfd's counter (non-blocking: EAGAIN means already clear).
fn clear(fd: BorrowedFd<'_>) {
    let mut f = std::fs::File::from(fd.try_clone_to_owned().expect("dup eventfd"));
    let mut b = [0u8; 8];
    match f.read(&mut b) {
        Ok(8) => {}
        Ok(n) => panic!("eventfd read returned {n} bytes"),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => panic!("eventfd read failed: {e}"),
    }
}

/// Push `n` random reads of `file` (some past EOF, some empty), submit, and
/// collect them through the fd alone. Checks every byte.
fn event_loop(q: &mut Queue, file: &File, size: u64, n: usize, rng: &mut Rng, label: &str) {
    let fd = q
        .completion_fd()
        .unwrap_or_else(|e| panic!("{label}: completion_fd: {e}"))
        .try_clone_to_owned()
        .expect("dup");
    let depth = q.depth();
    let mut want = Vec::new();
    let mut pushed = 0usize;
    let mut done = 0usize;
    let mut out: Vec<Completion> = Vec::new();
    while done < n {
        while pushed < n && q.in_flight() < depth {
            let len = match rng.below(8) {
                0 => 0,
                1 => 1 + rng.below(100) as usize,
                _ => 4096 * (1 + rng.below(4) as usize),
            };
            let offset = match rng.below(10) {
                0 => size + rng.below(8192),              // past EOF
                1 => size.saturating_sub(len as u64 / 2), // straddles EOF
                _ => rng.below(size / 4096) * 4096,
            };
            want.push((offset, len));
            q.push(Read {
                file,
                offset,
                len,
                buf: Buf::new(len.max(1)),
                user_data: pushed as u64,
                ioprio: 0,
                cache: None,
            })
            .unwrap_or_else(|r| panic!("{label}: push: {}", r.error));
            pushed += 1;
        }
        q.submit()
            .unwrap_or_else(|e| panic!("{label}: submit: {e}"));
        use std::os::fd::AsFd;
        wait_readable(
            fd.as_fd(),
            10,
            &format!("{label} ({done} of {n} done, {} in flight)", q.in_flight()),
        );
        clear(fd.as_fd());
        loop {
            out.clear();
            let got = q
                .reap(0, None, &mut out)
                .unwrap_or_else(|e| panic!("{label}: reap: {e}"));
            for c in out.drain(..) {
                let (offset, len) = want[c.user_data as usize];
                let n_read = c.result.unwrap_or_else(|e| panic!("{label}: read: {e}"));
                let expect = size.saturating_sub(offset).min(len as u64) as usize;
                assert_eq!(n_read, expect, "{label}: length of read at {offset}+{len}");
                pattern::check(offset, c.buf.as_slice())
                    .unwrap_or_else(|e| panic!("{label}: data at {offset}: {e}"));
                done += 1;
            }
            if got == 0 {
                break;
            }
        }
    }
    assert_eq!(q.in_flight(), 0, "{label}");
}

fn run_all(dir: &Path, fs: &str) {
    let size = (2 << 20) + 777;
    let path = pattern_file(dir, "cfd.dat", size);
    let mut rng = Rng::from_env("completion_fd");
    for (kind, mut q) in backends(32) {
        let file = File::open(&path, Direct::Off).expect("open");
        event_loop(
            &mut q,
            &file,
            size,
            600,
            &mut rng,
            &format!("{kind} {fs} buffered"),
        );
    }
    for (kind, mut q) in backends(32) {
        let file = match File::open(&path, Direct::Auto) {
            Ok(f) => f,
            Err(e) => panic!("open Direct::Auto: {e}"),
        };
        event_loop(
            &mut q,
            &file,
            size,
            600,
            &mut rng,
            &format!("{kind} {fs} auto"),
        );
    }
}

#[test]
fn completion_fd_wakes_an_event_loop_on_every_backend() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_all(dir.path(), "tempdir");
}

/// tmpfs files are read inline past the queue's window: the queue itself
/// must signal the fd for them.
#[test]
fn completion_fd_signals_inline_reads_of_memory_backed_files() {
    let dir = match tempfile::tempdir_in("/dev/shm") {
        Ok(dir) => dir,
        Err(e) => {
            return common::skip(
                "completion_fd_signals_inline_reads_of_memory_backed_files",
                &format!("no tmpfs at /dev/shm: {e}"),
            )
        }
    };
    run_all(dir.path(), "tmpfs");
}

#[test]
fn completion_fd_is_refused_with_reads_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = pattern_file(dir.path(), "late.dat", 1 << 16);
    let file = File::open(&path, Direct::Off).expect("open");
    let mut q = Queue::builder().depth(4).build().expect("queue");
    q.push(Read {
        file: &file,
        offset: 0,
        len: 4096,
        buf: Buf::new(4096),
        user_data: 0,
        ioprio: 0,
        cache: None,
    })
    .map_err(|r| r.error)
    .expect("push");
    let e = q
        .completion_fd()
        .expect_err("must be refused with a read in flight");
    assert!(e.to_string().contains("before the first push"), "{e}");
    let mut out = Vec::new();
    q.drain(&mut out).expect("drain");
    assert_eq!(out.len(), 1);
    // Asking twice on a fresh queue gives the same fd.
    let mut q = Queue::builder().depth(4).build().expect("queue");
    let a = q.completion_fd().expect("fd").as_raw_fd();
    let b = q.completion_fd().expect("fd").as_raw_fd();
    assert_eq!(a, b);
}

/// The event loop of a server: keep `depth` reads in flight, and on every
/// wake-up clear the fd, reap with `min == 0` until nothing comes back,
/// push one new read per completion, submit. Direct reads complete from the
/// device's interrupt; on an io_uring ring with DEFER_TASKRUN their
/// completions wait as task work until the ring is entered. A completion
/// whose task work was queued while `reap` had masked the eventfd was never
/// signalled, and the loop slept with reads done (seen from C: one run in
/// ten stuck near the end).
#[test]
fn completion_fd_direct_reads_never_lose_a_wake_up() {
    let dir = match common::direct_dir() {
        Ok(d) => d,
        Err(why) => return common::skip("completion_fd_direct_reads_never_lose_a_wake_up", &why),
    };
    let size: u64 = 32 << 20;
    let path = pattern_file(dir.path(), "cfd-direct.dat", size);
    let file = File::open(&path, Direct::On).expect("open O_DIRECT");
    let mut rng = Rng::from_env("completion_fd_direct");
    let blocks = size / 4096;
    for run in 0..8 {
        let mut q = Queue::builder().depth(32).build().expect("queue");
        let fd = q
            .completion_fd()
            .expect("fd")
            .try_clone_to_owned()
            .expect("dup");
        let total = 3000usize;
        let mut offsets = std::collections::HashMap::new();
        let mut pushed = 0usize;
        let mut done = 0usize;
        let mut next = |q: &mut Queue,
                        pushed: &mut usize,
                        offsets: &mut std::collections::HashMap<u64, u64>| {
            let off = rng.below(blocks) * 4096;
            offsets.insert(*pushed as u64, off);
            q.push(Read {
                file: &file,
                offset: off,
                len: 4096,
                buf: Buf::new(4096),
                user_data: *pushed as u64,
                ioprio: 0,
                cache: None,
            })
            .unwrap_or_else(|r| panic!("push: {}", r.error));
            *pushed += 1;
        };
        for _ in 0..32 {
            next(&mut q, &mut pushed, &mut offsets);
        }
        q.submit().expect("submit");
        let mut out = Vec::new();
        use std::os::fd::AsFd;
        while done < total {
            wait_readable(
                fd.as_fd(),
                5,
                &format!(
                    "{} run {run}: {done} of {total} done, {} in flight",
                    q.backend().kind,
                    q.in_flight()
                ),
            );
            clear(fd.as_fd());
            loop {
                out.clear();
                let n = q.reap(0, None, &mut out).expect("reap");
                for c in out.drain(..) {
                    let off = offsets.remove(&c.user_data).expect("known read");
                    assert_eq!(c.result.expect("read"), 4096);
                    pattern::check(off, c.buf.as_slice()).expect("data");
                    done += 1;
                    if pushed < total {
                        next(&mut q, &mut pushed, &mut offsets);
                    }
                }
                if n == 0 {
                    break;
                }
            }
            q.submit().expect("submit");
        }
    }
}

/// Is `fd` readable right now?
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd, no timeout.
    unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
}

/// The completion fd's contract, as an event loop relies on it: the fd is
/// readable whenever a finished read is waiting to be reaped, so one
/// `reap(0)` per wake-up is enough. On a memory-backed file the queue
/// finishes reads itself (inline) while the backend finishes others: a
/// `reap` that inline results satisfied used to return without asking the
/// backend, whose finished reads then waited (seconds, on `pool`) behind a
/// signal the loop had already consumed.
///
/// The loop waits at most 100 ms for the fd; a wait that times out while a
/// `reap(0)` then finds finished reads, with the fd still unreadable, is a
/// lost wake-up. (Readable by then, after a reap that waited over a
/// millisecond for the backend's lock: the worker was descheduled between
/// posting and signalling, which a loaded machine does; counted, not a
/// failure.) Reads of 1 B to 64 KiB at any offset, `Direct::Auto`, depth
/// 32, every backend, on the temp directory's filesystem and on tmpfs.
#[test]
fn no_finished_read_waits_for_its_wake_up() {
    use std::os::fd::AsFd;
    use std::time::{Duration, Instant};
    let mut rng = Rng::from_env("no_finished_read_waits_for_its_wake_up");
    let size: u64 = (4 << 20) + 1234;
    let mut dirs = vec![("tempdir", tempfile::tempdir().expect("tempdir"))];
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => dirs.push(("tmpfs", d)),
        Err(e) => common::skip(
            "no_finished_read_waits_for_its_wake_up on tmpfs",
            &format!("cannot make a directory in /dev/shm: {e}"),
        ),
    }
    for (fs, dir) in &dirs {
        let path = pattern_file(dir.path(), "wake.dat", size);
        let file = File::open(&path, Direct::Auto).expect("open");
        for kind in common::backend_kinds() {
            // AIO contexts cost an RCU grace period to tear down: fewer runs.
            let runs = if matches!(
                kind,
                nowait::BackendKind::Aio | nowait::BackendKind::AioPool
            ) {
                12
            } else {
                40
            };
            let mut late = 0;
            for run in 0..runs {
                let Some(mut q) = common::queue_of(kind, 32) else {
                    break;
                };
                let fd = q
                    .completion_fd()
                    .expect("fd")
                    .try_clone_to_owned()
                    .expect("dup");
                let total = 300usize;
                let mut asked = std::collections::HashMap::new();
                let (mut pushed, mut done) = (0usize, 0usize);
                let push =
                    |q: &mut Queue,
                     pushed: &mut usize,
                     rng: &mut Rng,
                     asked: &mut std::collections::HashMap<u64, (u64, usize)>| {
                        let shift = rng.below(17);
                        let len = (1 + rng.below(1 << shift)).min(65536) as usize;
                        let offset = if rng.below(8) == 0 {
                            size - rng.below(131072).min(size) + rng.below(4096)
                        } else {
                            rng.below(size)
                        };
                        asked.insert(*pushed as u64, (offset, len));
                        q.push(Read {
                            file: &file,
                            offset,
                            len,
                            buf: Buf::new(len),
                            user_data: *pushed as u64,
                            ioprio: 0,
                            cache: None,
                        })
                        .unwrap_or_else(|r| panic!("push: {}", r.error));
                        *pushed += 1;
                    };
                for _ in 0..32 {
                    push(&mut q, &mut pushed, &mut rng, &mut asked);
                }
                q.submit().expect("submit");
                let mut out = Vec::new();
                while done < total {
                    let mut pfd = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one live pollfd.
                    let r = unsafe { libc::poll(&mut pfd, 1, 100) };
                    if r < 0 {
                        continue; // EINTR
                    }
                    out.clear();
                    if r == 0 {
                        let t0 = Instant::now();
                        q.reap(0, None, &mut out).expect("reap");
                        let took = t0.elapsed();
                        if !out.is_empty() {
                            if readable_now(fd.as_fd()) && took > Duration::from_millis(1) {
                                late += 1;
                            } else {
                                panic!(
                                    "{kind} on {fs}, run {run}: {} finished reads waited 100 ms \
                                     with the completion fd unreadable ({done} of {total} done, \
                                     {} in flight)",
                                    out.len(),
                                    q.in_flight() + out.len()
                                );
                            }
                        }
                    } else {
                        clear(fd.as_fd());
                        q.reap(0, None, &mut out).expect("reap");
                    }
                    for c in out.drain(..) {
                        let (offset, len) = asked.remove(&c.user_data).expect("known read");
                        let n = c.result.unwrap_or_else(|e| panic!("{kind} on {fs}: {e}"));
                        assert_eq!(n as u64, size.saturating_sub(offset).min(len as u64));
                        pattern::check(offset, c.buf.as_slice())
                            .unwrap_or_else(|e| panic!("{kind} on {fs}: {e}"));
                        done += 1;
                        if pushed < total {
                            push(&mut q, &mut pushed, &mut rng, &mut asked);
                        }
                    }
                    q.submit().expect("submit");
                }
            }
            if late > 0 {
                eprintln!("{kind} on {fs}: {late} late signals (a descheduled worker)");
            }
        }
    }
}
