//! Fault injection through a FUSE filesystem (`common/fusefs.rs`): short
//! reads, EIO in a byte range, slow reads and transient EINTR/EAGAIN, which
//! ext4, xfs and tmpfs never produce. Every scenario runs on every backend,
//! buffered and `O_DIRECT`, and every byte read is checked against the
//! pattern. Each test's work runs under a watchdog, so a hang fails the test
//! (and aborts the FUSE connection) instead of stalling the suite; mounts are
//! removed even when a test fails. Without root or /dev/fuse the tests skip
//! loudly.

mod common;
#[path = "common/fusefs.rs"]
mod fusefs;

use std::time::Duration;

use common::{backends, Rng};
use fusefs::{FileSpec, FuseFs, Negotiate, Served, Short};
use nowait::{pattern, BackendChoice, BackendKind, Buf, Direct, Engine, Error, File, Queue, Read};

/// Served files end inside a block, like real ones.
const SIZE: u64 = (8 << 20) + 123;
/// Far longer than any scenario takes: reaching it means a hang.
const LIMIT: Duration = Duration::from_secs(30);

/// Mount `files`, or say loudly why this machine cannot.
fn mount(test: &str, files: Vec<FileSpec>) -> Option<(FuseFs, Rng)> {
    let mut rng = Rng::from_env(test);
    match FuseFs::mount(files, rng.next_u64()) {
        Ok(fs) => Some((fs, rng)),
        Err(why) => {
            common::skip_line(&format!("{test}: {why}"));
            None
        }
    }
}

/// Buffered always; `O_DIRECT` too when the kernel takes it on FUSE.
fn modes(fs: &Served, name: &str) -> Vec<Direct> {
    match File::open(fs.path(name), Direct::On) {
        Ok(f) if f.is_direct() => vec![Direct::Off, Direct::On],
        Ok(_) => {
            common::skip_line("Direct::On on FUSE: the file opened buffered");
            vec![Direct::Off]
        }
        Err(e) => {
            common::skip_line(&format!("Direct::On on FUSE: {e}"));
            vec![Direct::Off]
        }
    }
}

/// A read of 4 KiB to 1 MiB (log-uniform) somewhere in a file of `size`
/// bytes, possibly crossing end of file; block-aligned for `O_DIRECT`.
fn random_read(rng: &mut Rng, size: u64, direct: Direct) -> (u64, usize) {
    let shift = 12 + rng.below(9);
    let mut len = ((1u64 << shift) + rng.below(1u64 << shift)).min(1 << 20) as usize;
    let mut off = rng.below(size);
    if direct == Direct::On {
        len = len.next_multiple_of(4096).min(1 << 20);
        off -= off % 4096;
    }
    (off, len)
}

/// Bytes a read of `len` at `off` must return from a file of `size`.
fn expected(size: u64, off: u64, len: usize) -> usize {
    size.saturating_sub(off).min(len as u64) as usize
}

/// A completed read returned exactly what the file holds there.
fn check<E: std::fmt::Display>(
    what: &str,
    (off, len): (u64, usize),
    result: &Result<usize, E>,
    buf: &Buf,
) {
    let n = match result {
        Ok(n) => *n,
        Err(e) => panic!("{what}: read of {len} at {off} failed: {e}"),
    };
    assert_eq!(
        n,
        expected(SIZE, off, len),
        "{what}: read of {len} at {off}"
    );
    assert_eq!(buf.len(), n, "{what}: buffer length of read at {off}");
    if let Err(m) = pattern::check(off, buf.as_slice()) {
        panic!("{what}: read of {len} at {off}: {m}");
    }
}

/// Push `reads` keeping up to `qd` in flight, and hand each completion to
/// `each` with the index of its read.
fn drive(
    q: &mut Queue,
    file: &File,
    reads: &[(u64, usize)],
    qd: usize,
    mut each: impl FnMut(usize, nowait::Completion),
) {
    let (mut next, mut done) = (0, 0);
    let mut out = Vec::new();
    while done < reads.len() {
        while next < reads.len() && q.in_flight() < qd {
            let (offset, len) = reads[next];
            let req = Read {
                file,
                offset,
                len,
                buf: Buf::new(len),
                user_data: next as u64,
                ioprio: 0,
                cache: None,
            };
            if let Err(r) = q.push(req) {
                panic!("push of {len} at {offset} refused: {r}");
            }
            next += 1;
        }
        q.submit().expect("submit");
        out.clear();
        q.reap(1, None, &mut out).expect("reap");
        for c in out.drain(..) {
            done += 1;
            each(c.user_data as usize, c);
        }
    }
}

fn short_files() -> Vec<FileSpec> {
    vec![
        FileSpec::new("short1000", SIZE).short(Short::AtMost(1000)),
        FileSpec::new("shortrand", SIZE).short(Short::RandomPrefix),
    ]
}

#[test]
fn short_reads_are_finished_on_every_backend() {
    let Some((fs, mut rng)) = mount("short_reads_are_finished_on_every_backend", short_files())
    else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "short reads", move || {
        for direct in modes(&served, "short1000") {
            for (kind, mut q) in backends(64) {
                for name in ["short1000", "shortrand"] {
                    let what = format!("{kind} {direct:?} {name}");
                    let file = File::open(served.path(name), direct).unwrap();
                    let before = q.stats().short_retries;
                    for qd in [1, 16, 64] {
                        let reads: Vec<_> = (0..16)
                            .map(|_| random_read(&mut rng, SIZE, direct))
                            .collect();
                        drive(&mut q, &file, &reads, qd, |i, c| {
                            check(&format!("{what} qd {qd}"), reads[i], &c.result, &c.buf)
                        });
                    }
                    for _ in 0..4 {
                        let (off, len) = random_read(&mut rng, SIZE, direct);
                        let (r, buf) = q.read_at(&file, off, Buf::new(len));
                        check(&format!("{what} read_at"), (off, len), &r, &buf);
                        let off = off.min(SIZE - len as u64);
                        let off = if direct == Direct::On {
                            off / 4096 * 4096
                        } else {
                            off
                        };
                        let (r, buf) = q.read_exact_at(&file, off, len, Buf::new(len));
                        check(
                            &format!("{what} read_exact_at"),
                            (off, len),
                            &r.map(|()| len),
                            &buf,
                        );
                    }
                    let retries = q.stats().short_retries - before;
                    println!("{what}: {retries} short retries");
                    assert!(retries > 0, "{what}: no short read was re-issued");
                }
            }
        }
    });
    for name in ["short1000", "shortrand"] {
        assert!(
            fs.stats(name).short_replies > 0,
            "{name}: {:?}",
            fs.stats(name)
        );
    }
}

/// Regression: the queue took an `O_DIRECT` read that stopped inside a
/// block for end of file, so on FUSE (no alignment rules, short replies
/// anywhere) a read of 8 KiB at offset 0 came back with 1000 bytes.
#[test]
fn direct_short_read_inside_a_block_is_not_end_of_file() {
    let files = vec![FileSpec::new("short1000", SIZE).short(Short::AtMost(1000))];
    let Some((fs, _)) = mount("direct_short_read_inside_a_block_is_not_end_of_file", files) else {
        return;
    };
    let served = fs.served();
    if !modes(&served, "short1000").contains(&Direct::On) {
        return;
    }
    fs.within(LIMIT, "direct short read", move || {
        for (kind, mut q) in backends(4) {
            let file = File::open(served.path("short1000"), Direct::On).unwrap();
            let (r, buf) = q.read_at(&file, 0, Buf::new(8192));
            check(&format!("{kind}"), (0, 8192), &r, &buf);
        }
    });
}

/// The small direct-read path (aligned 4 KiB `READ_FIXED` into a
/// registered buffer) falls back to the general rules on a short result.
#[test]
fn small_direct_path_finishes_short_reads() {
    let Some((fs, mut rng)) = mount("small_direct_path_finishes_short_reads", short_files()) else {
        return;
    };
    let served = fs.served();
    if !modes(&served, "short1000").contains(&Direct::On) {
        return;
    }
    fs.within(LIMIT, "small direct reads", move || {
        for kind in BackendKind::ALL {
            let mut q = match Queue::builder()
                .depth(32)
                .backend(BackendChoice::Exactly(kind))
                .fixed_buffers(32, 4096)
                .build()
            {
                Ok(q) => q,
                Err(e) => {
                    common::skip_line(&format!("backend {kind}: {e}"));
                    continue;
                }
            };
            for name in ["short1000", "shortrand"] {
                let what = format!("{kind} {name} small direct");
                let file = File::open(served.path(name), Direct::On).unwrap();
                let mut out = Vec::new();
                let mut offsets = Vec::new();
                for i in 0..32u64 {
                    let off = rng.below(SIZE / 4096) * 4096;
                    let buf = q.take_buf().expect("a pool buffer");
                    offsets.push(off);
                    let req = Read {
                        file: &file,
                        offset: off,
                        len: 4096,
                        buf,
                        user_data: i,
                        ioprio: 0,
                        cache: None,
                    };
                    q.push(req).unwrap_or_else(|r| panic!("{what}: {r}"));
                }
                q.submit().unwrap();
                while out.len() < 32 {
                    q.reap(32 - out.len(), None, &mut out).unwrap();
                }
                for c in out.drain(..) {
                    let off = offsets[c.user_data as usize];
                    check(&what, (off, 4096), &c.result, &c.buf);
                    q.give_buf(c.buf);
                }
                let s = q.stats();
                println!(
                    "{what}: {} fast, {} short retries",
                    s.small_direct, s.short_retries
                );
            }
        }
    });
}

#[test]
fn eio_fails_only_the_reads_touching_the_bad_range() {
    // Short replies too, so some reads reach the bad range only when the
    // queue re-issues their remainder.
    let bad = (3 << 20) + 100..(3 << 20) + 5000;
    let files = vec![FileSpec::new("eio", SIZE)
        .short(Short::RandomPrefix)
        .eio(bad.clone())];
    let Some((fs, mut rng)) = mount("eio_fails_only_the_reads_touching_the_bad_range", files)
    else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "EIO range", move || {
        let path = served.path("eio");
        for direct in modes(&served, "eio") {
            for (kind, mut q) in backends(64) {
                let what = format!("{kind} {direct:?}");
                let file = File::open(&path, direct).unwrap();
                // Half the reads aimed at the bad range, half anywhere.
                let reads: Vec<_> = (0..64)
                    .map(|i| {
                        let (off, len) = random_read(&mut rng, SIZE, direct);
                        if i % 2 == 1 {
                            return (off, len);
                        }
                        // Start at most `len - 1` bytes before a bad byte.
                        let target = bad.start + rng.below(bad.end - bad.start);
                        let off = match direct {
                            Direct::On => (target / 4096 - rng.below(len as u64 / 4096)) * 4096,
                            _ => target - rng.below(len as u64),
                        };
                        (off, len)
                    })
                    .collect();
                let touches = |(off, len): (u64, usize)| off < bad.end && bad.start < off + len as u64;
                let (mut failed, mut ok) = (0, 0);
                drive(&mut q, &file, &reads, 64, |i, c| {
                    let (off, len) = reads[i];
                    if !touches((off, len)) {
                        ok += 1;
                        return check(&what, (off, len), &c.result, &c.buf);
                    }
                    failed += 1;
                    let e = match c.result {
                        Ok(n) => panic!("{what}: read of {len} at {off} crosses the EIO range {bad:?} but returned {n} bytes"),
                        Err(e) => e,
                    };
                    let msg = e.to_string();
                    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{what}: {msg}");
                    assert!(matches!(e, Error::Read { offset, len: l, .. } if offset == off && l == len), "{what}: {e:?}");
                    for part in [
                        path.display().to_string(),
                        format!("offset {off}"),
                        "Input/output error".into(),
                    ] {
                        assert!(msg.contains(&part), "{what}: {msg:?} does not name {part:?}");
                    }
                    assert!(c.buf.is_empty(), "{what}: failed read hands back data");
                });
                println!("{what}: {failed} reads failed with EIO, {ok} succeeded");
                assert!(failed >= 32 && ok > 0, "{what}: {failed} failed, {ok} ok");
                assert_eq!(q.stats().errors, failed as u64, "{what}");
                // Still usable: a full batch away from the bad range.
                assert_eq!(q.in_flight(), 0);
                let reads: Vec<_> = (0..64)
                    .map(|_| {
                        let (off, len) = random_read(&mut rng, 3 << 20, direct);
                        (off, len.min(((3 << 20) - off) as usize))
                    })
                    .collect();
                drive(&mut q, &file, &reads, 64, |i, c| check(&what, reads[i], &c.result, &c.buf));
                let (r, buf) = q.read_exact_at(&file, 4 << 20, 65536, Buf::new(65536));
                check(&what, (4 << 20, 65536), &r.map(|()| 65536), &buf);
            }
        }
    });
    assert!(fs.stats("eio").eio_replies > 0);
}

#[test]
fn short_read_at_eof_and_read_straddling_eof() {
    let Some((fs, _)) = mount("short_read_at_eof_and_read_straddling_eof", short_files()) else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "end of file", move || {
        for direct in modes(&served, "short1000") {
            for (kind, mut q) in backends(8) {
                for name in ["short1000", "shortrand"] {
                    let what = format!("{kind} {direct:?} {name}");
                    let path = served.path(name);
                    let file = File::open(&path, direct).unwrap();
                    // 8 KiB + 123 bytes before end of file: many short
                    // replies, then end of file inside a block.
                    let off = SIZE / 4096 * 4096 - 8192;
                    let tail = (SIZE - off) as usize;
                    let (r, buf) = q.read_at(&file, off, Buf::new(65536));
                    check(&what, (off, 65536), &r, &buf);
                    let (r, buf) = q.read_exact_at(&file, off, 65536, Buf::new(65536));
                    let e = r.expect_err("read_exact_at across end of file");
                    let msg = e.to_string();
                    assert!(
                        matches!(e, Error::UnexpectedEof { offset, len: 65536, got, .. } if offset == off && got == tail),
                        "{what}: {e:?}"
                    );
                    for part in [path.display().to_string(), format!("offset {off}"), format!("after {tail} bytes")] {
                        assert!(msg.contains(&part), "{what}: {msg:?} does not name {part:?}");
                    }
                    assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::UnexpectedEof);
                    assert!(buf.capacity() >= 65536);
                    // Up to end of file exactly: no error.
                    if direct == Direct::Off {
                        let (r, buf) = q.read_exact_at(&file, off, tail, Buf::new(tail));
                        check(&what, (off, tail), &r.map(|()| tail), &buf);
                    }
                    // At and past end of file: nothing.
                    for at in [SIZE.next_multiple_of(4096), SIZE.next_multiple_of(4096) + 4096] {
                        let (r, buf) = q.read_at(&file, at, Buf::new(4096));
                        assert_eq!(r.unwrap(), 0, "{what}: read at {at}");
                        assert!(buf.is_empty());
                    }
                }
            }
        }
    });
}

/// Push a read of 4 to 64 KiB at a random offset of `file`.
fn push_slow(
    q: &mut Queue,
    file: &File,
    reads: &mut Vec<(u64, usize)>,
    rng: &mut Rng,
    direct: Direct,
) {
    let off = rng.below(SIZE);
    let len = 4096 + rng.below(60 << 10) as usize;
    let (off, len) = if direct == Direct::On {
        (off / 4096 * 4096, len.next_multiple_of(4096))
    } else {
        (off, len)
    };
    let req = Read {
        file,
        offset: off,
        len,
        buf: Buf::new(len),
        user_data: reads.len() as u64,
        ioprio: 0,
        cache: None,
    };
    reads.push((off, len));
    q.push(req)
        .unwrap_or_else(|r| panic!("push of {len} at {off}: {r}"));
}

#[test]
fn slow_reads_in_flight_when_the_queue_is_dropped() {
    // Replies held back 2-20 ms; some are short, so re-issues are in flight too.
    let files = vec![FileSpec::new("slow", SIZE)
        .delay_ms(2, 20)
        .short(Short::AtMost(48 << 10))];
    let Some((fs, mut rng)) = mount("slow_reads_in_flight_when_the_queue_is_dropped", files) else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "dropping a queue with slow reads in flight", move || {
        for direct in modes(&served, "slow") {
            for (kind, mut q) in backends(64) {
                let what = format!("{kind} {direct:?}");
                served.reset_max_reads_in_flight();
                let file = File::open(served.path("slow"), direct).unwrap();
                let mut reads = Vec::new();
                for _ in 0..64 {
                    push_slow(&mut q, &file, &mut reads, &mut rng, direct);
                }
                q.submit().unwrap();
                let mut out = Vec::new();
                while out.len() < 8 {
                    q.reap(8 - out.len(), None, &mut out).unwrap();
                }
                for c in out.drain(..) {
                    check(&what, reads[c.user_data as usize], &c.result, &c.buf);
                }
                for _ in 0..8 {
                    push_slow(&mut q, &file, &mut reads, &mut rng, direct);
                }
                q.submit().unwrap();
                let in_flight = q.in_flight();
                drop(q);
                let max = served.max_reads_in_flight();
                println!("{what}: dropped with {in_flight} reads in flight; server held {max} at once");
                // Reads overlap at the server wherever the backend has
                // threads of its own (io_uring's io-wq, the pool's workers);
                // aio overlaps them where the kernel runs FUSE direct reads
                // asynchronously; `sync` reads one at a time.
                if matches!(kind, BackendKind::Uring | BackendKind::Pool) {
                    assert!(max > 1, "{what}: reads never overlapped at the server");
                }
            }
        }
    });
    // The queue waited for every read before freeing its buffers, so
    // nothing is left at the server (its counter drops just after the reply).
    for _ in 0..100 {
        if fs.reads_in_flight() == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "{} reads still at the server after every queue was dropped",
        fs.reads_in_flight()
    );
}

/// The remainder of a short read re-issued while `reap` collects another
/// read must reach the kernel before `reap` returns: the caller may next
/// sleep on something that only that remainder's completion would wake.
#[test]
fn reap_submits_reissued_remainder_before_returning() {
    let files = vec![
        FileSpec::new("whole", SIZE),
        FileSpec::new("short1000", SIZE).short(Short::AtMost(1000)),
    ];
    let Some((fs, _)) = mount("reap_submits_reissued_remainder_before_returning", files) else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "re-issue before reap returns", move || {
        for (kind, mut q) in backends(8) {
            let whole = File::open(served.path("whole"), Direct::Off).unwrap();
            let short = File::open(served.path("short1000"), Direct::Off).unwrap();
            let before = served.stats("short1000").reads;
            let retries_before = q.stats().short_retries;
            for (file, user_data) in [(&whole, 0), (&short, 1)] {
                let req = Read {
                    file,
                    offset: 0,
                    len: 8192,
                    buf: Buf::new(8192),
                    user_data,
                    ioprio: 0,
                    cache: None,
                };
                q.push(req).unwrap();
            }
            q.submit().unwrap();
            // Let both finish in the kernel, so one reap sees both: the
            // whole read completes it, the short one is re-issued.
            std::thread::sleep(Duration::from_millis(50));
            let mut out = Vec::new();
            q.reap(1, None, &mut out).unwrap();
            assert!(out.iter().any(|c| c.user_data == 0), "{kind}: {out:?}");
            // Nothing calls the queue now; the re-issued read reaches the
            // server only if reap submitted it.
            std::thread::sleep(Duration::from_millis(100));
            let issued = 1 + q.stats().short_retries - retries_before;
            let seen = served.stats("short1000").reads - before;
            println!(
                "{kind}: the queue issued {issued} reads of the short file, the server saw {seen}"
            );
            assert!(
                issued >= 2,
                "{kind}: the short read was not re-issued in that reap"
            );
            assert_eq!(
                seen, issued,
                "{kind}: a re-issued remainder was left unsubmitted when reap returned"
            );
            while out.len() < 2 {
                q.reap(1, None, &mut out).unwrap();
            }
            for c in out {
                check(&format!("{kind}"), (0, 8192), &c.result, &c.buf);
            }
        }
    });
}

/// What the kernel does with a FUSE read answered EINTR or EAGAIN: `pread`,
/// aio and the pool's workers hand the errno to the queue, which retries.
/// (io_uring would retry EAGAIN itself from io-wq, without bound, so a
/// persistent EAGAIN spun in the kernel forever; FUSE files bypass the
/// ring, see `File::pooled_reason`, and the uring backend retries like the
/// others.)
#[test]
fn transient_eintr_and_eagain_are_retried() {
    let files = vec![
        FileSpec::new("eintr", SIZE)
            .transient(libc::EINTR, 3)
            .short(Short::RandomPrefix),
        FileSpec::new("eagain", SIZE)
            .transient(libc::EAGAIN, 3)
            .short(Short::RandomPrefix),
        FileSpec::new("always_eintr", SIZE).transient(libc::EINTR, 1),
        FileSpec::new("always_eagain", SIZE).transient(libc::EAGAIN, 1),
    ];
    let Some((fs, mut rng)) = mount("transient_eintr_and_eagain_are_retried", files) else {
        return;
    };
    let served = fs.served();
    fs.within(LIMIT, "transient errors", move || {
        for direct in modes(&served, "eintr") {
            for (kind, mut q) in backends(32) {
                for name in ["eintr", "eagain"] {
                    let what = format!("{kind} {direct:?} {name}");
                    let file = File::open(served.path(name), direct).unwrap();
                    let (before, seen) = (q.stats().interrupted_retries, served.stats(name));
                    let reads: Vec<_> = (0..16)
                        .map(|_| {
                            let (off, len) = random_read(&mut rng, SIZE, direct);
                            (off, len.min(64 << 10))
                        })
                        .collect();
                    drive(&mut q, &file, &reads, 16, |i, c| {
                        check(&what, reads[i], &c.result, &c.buf)
                    });
                    let retries = q.stats().interrupted_retries - before;
                    let sent = served.stats(name).transient_replies - seen.transient_replies;
                    println!("{what}: the server answered {sent} with {name}, the queue retried {retries}");
                    assert!(sent > 0, "{what}: no transient error was injected");
                    assert!(retries > 0, "{what}: no read was retried");
                }
                // An errno that never clears: retried a bounded number of
                // times, then reported with the file and offset.
                for (name, errno) in [("always_eintr", libc::EINTR), ("always_eagain", libc::EAGAIN)] {
                    let what = format!("{kind} {direct:?} {name}");
                    let path = served.path(name);
                    let file = File::open(&path, direct).unwrap();
                    let (seen, retries) = (served.stats(name).reads, q.stats().interrupted_retries);
                    let (r, _) = q.read_at(&file, 8192, Buf::new(4096));
                    let e = r.expect_err("a read that always fails transiently fails in the end");
                    let msg = e.to_string();
                    assert_eq!(e.raw_os_error(), Some(errno), "{what}: {msg}");
                    for part in [path.display().to_string(), "offset 8192".into()] {
                        assert!(msg.contains(&part), "{what}: {msg:?} does not name {part:?}");
                    }
                    let seen = served.stats(name).reads - seen;
                    let retries = q.stats().interrupted_retries - retries;
                    println!("{what}: gave up after {retries} retries: {msg}");
                    assert!(retries > 0, "{what}: not retried");
                    assert_eq!(seen, retries + 1, "{what}: every retry is one more read");
                }
            }
        }
    });
}

/// The async front end over short reads: every remainder the queue
/// re-issues must be submitted, or a future would wait forever (the
/// watchdog turns that into a failure).
#[test]
fn async_front_end_finishes_short_reads() {
    let Some((fs, mut rng)) = mount("async_front_end_finishes_short_reads", short_files()) else {
        return;
    };
    let served = fs.served();
    let seeds: Vec<u64> = (0..8).map(|_| rng.next_u64()).collect();
    fs.within(LIMIT, "async reads over short reads", move || {
        for kind in BackendKind::ALL {
            let engine = match Engine::builder()
                .queue(|q| q.backend(BackendChoice::Exactly(kind)).depth(32))
                .build()
            {
                Ok(e) => e,
                Err(e) => {
                    common::skip_line(&format!("backend {kind}: {e}"));
                    continue;
                }
            };
            for name in ["short1000", "shortrand"] {
                let what = format!("{kind} {name}");
                let file = engine.open(served.path(name), Direct::Off).unwrap();
                std::thread::scope(|s| {
                    for (t, seed) in seeds.iter().enumerate() {
                        let (file, what) = (&file, &what);
                        s.spawn(move || {
                            let mut x = *seed | 1;
                            for _ in 0..8 {
                                x ^= x << 13;
                                x ^= x >> 7;
                                x ^= x << 17;
                                let off = x % SIZE;
                                let len = 4096 + (x >> 40) as usize % (256 << 10);
                                let (r, buf) = nowait::block_on(file.read_at(Buf::new(len), off));
                                check(&format!("{what} task {t}"), (off, len), &r, &buf);
                            }
                        });
                    }
                });
                // Across end of file: the bytes up to it, then UnexpectedEof.
                let off = SIZE - 5000;
                let (r, buf) = nowait::block_on(file.read_at(Buf::new(65536), off));
                check(&what, (off, 65536), &r, &buf);
                let (r, _) = nowait::block_on(file.read_exact_at(Buf::new(65536), off));
                let e = r.expect_err("read_exact_at across end of file");
                assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{what}: {e}");
                assert!(
                    e.to_string().contains(&format!("offset {off}")),
                    "{what}: {e}"
                );
            }
            let s = engine.stats();
            println!("{kind}: {s:?}");
            assert!(
                s.queue.short_retries > 0,
                "{kind}: no short read was re-issued"
            );
        }
    });
}

/// The scenario of issue #11: a `direct_io` FUSE file served the way
/// libfuse 2 negotiates (no `FUSE_ASYNC_DIO`), every reply at most 20,000
/// bytes, EIO over one range, answered by several reader threads. Each read
/// must return the file's bytes (length and content) or EIO when it touches
/// the bad range. Without the fix, io_uring completed a 64 KiB read with
/// `res = 65536` whose bytes from 20,000 on repeated the start of the read,
/// and reads over the bad range succeeded.
fn short_replies_like_libfuse2(test: &str, engine: bool) {
    let bad = (3 << 20) + 100..(3 << 20) + 5000;
    let files = vec![FileSpec::new("f", SIZE)
        .short(Short::AtMost(20_000))
        .eio(bad.clone())];
    let mut rng = Rng::from_env(test);
    let fs = match FuseFs::mount_with(files, rng.next_u64(), Negotiate::Libfuse2) {
        Ok(fs) => fs,
        Err(why) => return common::skip(test, &why),
    };
    let served = fs.served();
    let seed = rng.next_u64();
    let test = test.to_string();
    fs.within(LIMIT, &test.clone(), move || {
        let mut rng = Rng::from_seed(seed);
        let path = served.path("f");
        let touches = |off: u64, len: usize| off < bad.end && bad.start < off + len as u64;
        let verdict = |what: &str, off: u64, len: usize, r: Result<usize, String>, buf: &Buf| {
            if touches(off, len) && off < SIZE {
                match r {
                    Ok(n) => panic!("{what}: read of {len} at {off} crosses the EIO range but returned {n} bytes"),
                    Err(e) => assert!(e.contains("Input/output error"), "{what}: {e}"),
                }
            } else {
                check(what, (off, len), &r, buf);
            }
        };
        let reads: Vec<(u64, usize)> = (0..160)
            .map(|i| {
                let len = 1 + rng.below(if i % 4 == 0 { 1 << 20 } else { 96 << 10 }) as usize;
                let off = match i % 5 {
                    0 => bad.start.saturating_sub(rng.below(len as u64)),
                    1 => SIZE - rng.below(len as u64 + 10).min(SIZE),
                    _ => rng.below(SIZE),
                };
                (off, len)
            })
            .collect();
        if !engine {
            // `nowait probe` names the path and the reason.
            let machine = nowait::probe::machine();
            if machine.auto.as_ref().is_ok_and(|a| a.kind == BackendKind::Uring) {
                let report = nowait::probe::file(&path, &machine).unwrap();
                assert!(
                    report.buffered_path.contains("pread(2), not the ring")
                        && report.buffered_path.contains("FUSE_ASYNC_DIO"),
                    "{}",
                    report.buffered_path
                );
            }
            for kind in common::backend_kinds() {
                let Some(mut q) = common::queue_of(kind, 32) else {
                    continue;
                };
                let file = File::open(&path, Direct::Off).unwrap();
                assert!(file.pooled_reason().is_some(), "a FUSE file names why io_uring is bypassed");
                let what = format!("{kind}");
                drive(&mut q, &file, &reads, 32, |i, c| {
                    let (off, len) = reads[i];
                    verdict(&what, off, len, c.result.map_err(|e| e.to_string()), &c.buf);
                });
                for &(off, len) in reads.iter().take(20) {
                    let (r, buf) = q.read_at(&file, off, Buf::new(len));
                    verdict(&format!("{what} read_at"), off, len, r.map_err(|e| e.to_string()), &buf);
                }
            }
            return;
        }
        for kind in common::backend_kinds() {
            let engine = match Engine::builder()
                .queue(|q| q.backend(BackendChoice::Exactly(kind)).depth(32))
                .build()
            {
                Ok(e) => e,
                Err(e) => {
                    common::skip(&format!("backend {kind}"), &e.to_string());
                    continue;
                }
            };
            let file = engine.open(&path, Direct::Off).unwrap();
            let what = format!("engine on {kind}");
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let futs = reads.iter().map(|&(off, len)| {
                    let file = &file;
                    async move { (off, len, file.read_at(Buf::new(len), off).await) }
                });
                for (off, len, (r, buf)) in futures_join_all(futs).await {
                    verdict(&what, off, len, r.map_err(|e| e.to_string()), &buf);
                }
            });
        }
    });
    assert!(fs.stats("f").short_replies > 0 && fs.stats("f").eio_replies > 0);
}

/// Await every future of `futs` concurrently, results in order.
async fn futures_join_all<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut futs: Vec<_> = futs.map(|f| Some(Box::pin(f))).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in futs.iter_mut().enumerate() {
            if let Some(fut) = f {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out[i] = Some(v);
                        *f = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|v| v.expect("every future finished"))
        .collect()
}

#[test]
fn fuse_short_reads_without_async_dio_uring() {
    short_replies_like_libfuse2("fuse_short_reads_without_async_dio_uring", false);
}

#[test]
fn fuse_short_reads_without_async_dio_engine() {
    short_replies_like_libfuse2("fuse_short_reads_without_async_dio_engine", true);
}
