//! Inline reads of memory-backed files (`QueueBuilder::memory_inline`):
//! which files qualify, that the window decides how many reads stay with
//! the backend, and that inline results are byte-for-byte those of the
//! backend, short reads and end of file included. tmpfs (`/dev/shm`) is the
//! memory-backed filesystem; a zram device added for the test (root only)
//! is the RAM block device; the test's own directory is the disk-backed
//! control.

mod common;

use std::path::{Path, PathBuf};

use common::{fs_of, is_root, pattern_file, Rng};
use nowait::{BackendChoice, BackendKind, Buf, Completion, Direct, File, Queue, Read};

/// A directory on tmpfs, or why there is none.
fn tmpfs_dir() -> Result<tempfile::TempDir, String> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || fs_of(shm) != "tmpfs" {
        return Err("/dev/shm is not a tmpfs here".into());
    }
    tempfile::tempdir_in(shm).map_err(|e| format!("cannot make a directory in /dev/shm: {e}"))
}

/// Push every `(offset, len)` read (buffers of `len`, or of `cap` where a
/// read runs past the end), then reap them all; check one completion per
/// read, its length against `size`, and every byte against the pattern.
fn read_and_check(q: &mut Queue, file: &File, size: u64, reads: &[(u64, usize)]) {
    let kind = q.backend().kind;
    for (i, &(off, len)) in reads.iter().enumerate() {
        q.push(Read {
            file,
            offset: off,
            len,
            buf: Buf::new(len.max(1)),
            user_data: i as u64,
            ioprio: 0,
            cache: None,
        })
        .unwrap_or_else(|r| panic!("{kind}: push {i} (offset {off}, {len} bytes): {}", r.error));
    }
    let mut done: Vec<Completion> = Vec::new();
    while done.len() < reads.len() {
        q.reap(1, None, &mut done).unwrap();
    }
    assert_eq!(done.len(), reads.len(), "{kind}: one completion per read");
    let mut seen = vec![false; reads.len()];
    for c in done {
        let i = c.user_data as usize;
        assert!(
            !std::mem::replace(&mut seen[i], true),
            "{kind}: read {i} twice"
        );
        let (off, len) = reads[i];
        let want = (size.saturating_sub(off)).min(len as u64) as usize;
        let ctx = format!("{kind} read {i}: offset {off}, {len} bytes of a {size}-byte file");
        assert_eq!(
            c.result.unwrap_or_else(|e| panic!("{ctx}: {e}")),
            want,
            "{ctx}"
        );
        assert_eq!(c.buf.len(), want, "{ctx}");
        nowait::pattern::check(off, c.buf.as_slice()).unwrap_or_else(|m| panic!("{ctx}: {m}"));
    }
    assert_eq!(q.in_flight(), 0);
}

/// Random reads inside a file of `size` bytes, plus reads that cross the
/// end, start at it and start past it. Block-aligned when `aligned`.
fn reads(rng: &mut Rng, size: u64, n: usize, aligned: bool) -> Vec<(u64, usize)> {
    let mut v: Vec<(u64, usize)> = (0..n)
        .map(|_| {
            if aligned {
                let len = 4096 * (1 + rng.below(8)) as usize;
                (rng.below(size / 4096 - 8) * 4096, len)
            } else {
                let len = 1 + rng.below(20000) as usize;
                (rng.below(size - len as u64), len)
            }
        })
        .collect();
    let end_block = size / 4096 * 4096;
    v.extend([(end_block, 8192), (size, 4096), (end_block + 8192, 4096)]);
    v
}

fn queue(kind: BackendKind, depth: usize) -> nowait::QueueBuilder {
    Queue::builder()
        .depth(depth)
        .backend(BackendChoice::Exactly(kind))
}

#[test]
fn files_in_memory_are_recognised_and_others_are_not() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => return common::skip_line(&format!("files_in_memory_are_recognised: {why}")),
    };
    let p = pattern_file(dir.path(), "f", 1 << 20);
    for direct in [Direct::Off, Direct::Auto] {
        let f = File::open(&p, direct).unwrap();
        assert_eq!(
            f.inline_reason(),
            Some("tmpfs"),
            "tmpfs refuses RWF_NOWAIT, so its files qualify (direct={})",
            f.is_direct()
        );
    }
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fs = fs_of(disk.path());
    if fs == "tmpfs" {
        return common::skip_line("the disk-backed half: the target directory is on tmpfs");
    }
    let q = pattern_file(disk.path(), "g", 1 << 20);
    let f = File::open(&q, Direct::Off).unwrap();
    assert_eq!(f.inline_reason(), None, "a file on {fs} does not qualify");
}

/// The window decides: never inline above the depth, always inline at 0,
/// and in between some reads go each way. Data checked every time.
#[test]
fn the_window_decides_how_many_reads_are_inline() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => return common::skip_line(&format!("the_window_decides: {why}")),
    };
    let size = (4 << 20) + 1234;
    let p = pattern_file(dir.path(), "f", size);
    let mut rng = Rng::from_env("inline-window");
    for kind in [BackendKind::Uring, BackendKind::Pool] {
        for direct in [Direct::Off, Direct::Auto] {
            let f = File::open(&p, direct).unwrap();
            let aligned = f.is_direct();
            let what = format!("{kind} direct={}", f.is_direct());
            let n = 61; // + 3 reads at the end: 64, the depth

            // Window above the depth: the backend gets every read.
            let mut q = match queue(kind, 64).inline_window(1000).build() {
                Ok(q) => q,
                Err(e) => {
                    common::skip_line(&format!("{what}: {e}"));
                    continue;
                }
            };
            read_and_check(&mut q, &f, size, &reads(&mut rng, size, n, aligned));
            assert_eq!(q.stats().inline, 0, "{what}, window 1000");

            // memory_inline(false) wins over any window.
            let mut q = queue(kind, 64)
                .memory_inline(false)
                .inline_window(0)
                .build()
                .unwrap();
            read_and_check(&mut q, &f, size, &reads(&mut rng, size, n, aligned));
            assert_eq!(q.stats().inline, 0, "{what}, memory_inline off");

            // Window 0: every read inline, the backend is never entered.
            let mut q = queue(kind, 64).inline_window(0).build().unwrap();
            let before = q.stats().backend.syscalls;
            read_and_check(&mut q, &f, size, &reads(&mut rng, size, n, aligned));
            let st = q.stats();
            assert!(
                st.inline >= 64,
                "{what}, window 0: {} inline of 64 reads",
                st.inline
            );
            assert_eq!(
                st.backend.syscalls, before,
                "{what}, window 0: no system call of the backend's"
            );

            // The default window at depth 64 (32): some reads each way.
            let mut q = queue(kind, 64).build().unwrap();
            read_and_check(&mut q, &f, size, &reads(&mut rng, size, n, aligned));
            let st = q.stats();
            assert!(
                st.inline > 0 && st.inline < 64,
                "{what}, default window: {} of 64 reads inline, expected some but not all",
                st.inline
            );
        }
    }
}

/// Round after round at full depth with reap(1), like a benchmark loop:
/// the backend's reads keep coming back (the harvest after a run of inline
/// reads), so both halves are used in every round, and nothing is lost.
#[test]
fn a_full_queue_keeps_both_halves_busy() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip_line(&format!("a_full_queue_keeps_both_halves_busy: {why}"))
        }
    };
    let size: u64 = 16 << 20;
    let p = pattern_file(dir.path(), "f", size);
    let f = File::open(&p, Direct::Auto).unwrap();
    let mut q = match queue(BackendKind::Uring, 64).build() {
        Ok(q) => q,
        Err(e) => return common::skip_line(&format!("a_full_queue_keeps_both_halves_busy: {e}")),
    };
    let mut rng = Rng::from_env("inline-full");
    let mut offsets = vec![0u64; 64];
    let mut free: Vec<u64> = (0..64).collect();
    let mut done = Vec::new();
    let total = 20_000u64;
    let (mut issued, mut checked) = (0u64, 0u64);
    while checked < total {
        while issued < total {
            let Some(id) = free.pop() else { break };
            let off = rng.below(size / 4096) * 4096;
            offsets[id as usize] = off;
            q.push(Read {
                file: &f,
                offset: off,
                len: 4096,
                buf: Buf::with_align(4096, 4096),
                user_data: id,
                ioprio: 0,
                cache: None,
            })
            .unwrap();
            issued += 1;
        }
        q.reap(1, None, &mut done).unwrap();
        for c in done.drain(..) {
            let off = offsets[c.user_data as usize];
            assert_eq!(c.result.unwrap(), 4096, "read at {off}");
            nowait::pattern::check(off, c.buf.as_slice()).unwrap_or_else(|m| panic!("{m}"));
            free.push(c.user_data);
            checked += 1;
        }
    }
    let st = q.stats();
    eprintln!(
        "{total} reads: {} inline, {} by io_uring, {} syscalls",
        st.inline,
        total - st.inline,
        st.backend.syscalls
    );
    assert!(
        st.inline > total / 10,
        "inline reads: {} of {total}",
        st.inline
    );
    assert!(
        total - st.inline > total / 100,
        "io_uring got {} of {total} reads: its worker was starved",
        total - st.inline
    );
}

/// A zram device added for the test (and removed after): recognised as a
/// RAM block device, read inline with the right bytes. Root only.
#[test]
fn a_zram_device_is_read_inline() {
    if !is_root() {
        return common::skip_line("a_zram_device_is_read_inline: needs root to add a zram device");
    }
    let zram = match Zram::add(32 << 20) {
        Ok(z) => z,
        Err(why) => return common::skip_line(&format!("a_zram_device_is_read_inline: {why}")),
    };
    let size = 32u64 << 20;
    nowait::pattern::write_file(&zram.path, size, |_| {}).expect("write the pattern to zram");
    let f = File::open(&zram.path, Direct::On).unwrap();
    let name = format!("zram{}", zram.id);
    assert_eq!(
        f.inline_reason(),
        Some(name.as_str()),
        "{}",
        zram.path.display()
    );
    // Registered files: the device must be closed once the queue is gone
    // (a ring kept alive by a registered ring fd kept it busy until the
    // thread exited; `Zram`'s drop says so if it stays busy).
    let mut q = match queue(BackendKind::Uring, 32).build() {
        Ok(q) => q,
        Err(e) => return common::skip_line(&format!("a_zram_device_is_read_inline: {e}")),
    };
    let mut rng = Rng::from_env("inline-zram");
    let rs: Vec<(u64, usize)> = reads(&mut rng, size, 32, true)
        .into_iter()
        .take(32)
        .collect();
    read_and_check(&mut q, &f, size, &rs);
    let inline = q.stats().inline;
    assert!(
        inline > 0 && inline < 32,
        "window 16 of depth 32: {inline} of 32 inline"
    );
}

/// A zram device from `/sys/class/zram-control/hot_add`, removed on drop.
struct Zram {
    id: u32,
    path: PathBuf,
}

impl Zram {
    fn add(bytes: u64) -> Result<Zram, String> {
        let id: u32 = std::fs::read_to_string("/sys/class/zram-control/hot_add")
            .map_err(|e| format!("no zram hot_add here ({e}); modprobe zram"))?
            .trim()
            .parse()
            .map_err(|e| format!("hot_add answered something else: {e}"))?;
        let z = Zram {
            id,
            path: PathBuf::from(format!("/dev/zram{id}")),
        };
        std::fs::write(format!("/sys/block/zram{id}/disksize"), bytes.to_string())
            .map_err(|e| format!("cannot size zram{id}: {e}"))?;
        for _ in 0..100 {
            if z.path.exists() {
                return Ok(z);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(format!("{} did not appear", z.path.display()))
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        // io_uring drops a closed ring's registered files from a kernel
        // worker, so the device can stay open (EBUSY) for a moment.
        for _ in 0..200 {
            match std::fs::write("/sys/class/zram-control/hot_remove", self.id.to_string()) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(e) => return eprintln!("could not remove zram{}: {e}", self.id),
                Ok(()) => return,
            }
        }
        eprintln!("zram{} still busy after 2 s: left in place", self.id);
        if !std::thread::panicking() {
            panic!(
                "zram{} stayed open 2 s after its queue was dropped",
                self.id
            );
        }
    }
}

/// The async front end over a memory-backed file: tasks on a multi-thread
/// tokio runtime, more reads in flight than the engine's inline window, so
/// reads complete inside the futures' `push` as well as through the ring.
#[test]
fn the_async_engine_reads_memory_backed_files_inline_too() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip_line(&format!(
                "the_async_engine_reads_memory_backed_files: {why}"
            ))
        }
    };
    let size: u64 = (8 << 20) + 777;
    let p = pattern_file(dir.path(), "f", size);
    // Depth 8: an inline window of 4 reads.
    let engine = nowait::Engine::builder()
        .queue(|q| q.depth(8))
        .build()
        .unwrap();
    let file = engine.open(&p, Direct::Off).unwrap();
    assert_eq!(file.file().inline_reason(), Some("tmpfs"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for t in 0..16u64 {
            let file = file.clone();
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng::from_seed(0x5eed + t);
                for _ in 0..200 {
                    let len = 1 + rng.below(16384) as usize;
                    let off = rng.below(size + 4096);
                    let (n, buf) = file.read_at(Buf::new(len), off).await;
                    let want = size.saturating_sub(off).min(len as u64) as usize;
                    let ctx = format!("task {t}: offset {off}, {len} bytes");
                    assert_eq!(n.unwrap_or_else(|e| panic!("{ctx}: {e}")), want, "{ctx}");
                    nowait::pattern::check(off, buf.as_slice())
                        .unwrap_or_else(|m| panic!("{ctx}: {m}"));
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let st = engine.stats();
    eprintln!(
        "engine: {} reads inline of {} pushed",
        st.queue.inline, st.queue.pushed
    );
    assert!(st.queue.inline > 0, "no read was inline: {st:?}");
}

/// A read pushed to the backend after inline reads filled `ready` reaches
/// the kernel at the next reap, even when that reap is satisfied by the
/// inline results without waiting.
#[test]
fn a_reap_satisfied_by_inline_reads_still_submits_the_rest() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => return common::skip_line(&format!("a_reap_satisfied_by_inline_reads: {why}")),
    };
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    if fs_of(disk.path()) == "tmpfs" {
        return common::skip_line(
            "a_reap_satisfied_by_inline_reads: the target directory is on tmpfs",
        );
    }
    let size = 1u64 << 20;
    let mem = File::open(pattern_file(dir.path(), "m", size), Direct::Off).unwrap();
    let ondisk = File::open(pattern_file(disk.path(), "d", size), Direct::Off).unwrap();
    let mut q = match queue(BackendKind::Uring, 4).inline_window(2).build() {
        Ok(q) => q,
        Err(e) => return common::skip_line(&format!("a_reap_satisfied_by_inline_reads: {e}")),
    };
    for i in 0..3u64 {
        q.push(Read {
            file: &mem,
            offset: i * 4096,
            len: 4096,
            buf: Buf::new(4096),
            user_data: i,
            ioprio: 0,
            cache: None,
        })
        .unwrap();
    }
    assert_eq!(
        q.stats().inline,
        1,
        "the third tmpfs read is past the window of 2"
    );
    q.push(Read {
        file: &ondisk,
        offset: 0,
        len: 4096,
        buf: Buf::new(4096),
        user_data: 3,
        ioprio: 0,
        cache: None,
    })
    .unwrap();
    let before = q.stats().backend.syscalls;
    let mut done = Vec::new();
    q.reap(1, None, &mut done).unwrap();
    assert!(
        q.stats().backend.syscalls > before,
        "reap returned {} completion(s) without handing the queued reads to the kernel",
        done.len()
    );
    while done.len() < 4 {
        q.reap(1, None, &mut done).unwrap();
    }
    for c in done {
        assert_eq!(c.result.unwrap(), 4096);
        let off = if c.user_data == 3 {
            0
        } else {
            c.user_data * 4096
        };
        nowait::pattern::check(off, c.buf.as_slice()).unwrap();
    }
}

/// A lone read (nothing else in flight) of a memory-backed file is inline
/// at any depth with the default window — a kernel worker would only add
/// its wake-up — but not with a window set explicitly.
#[test]
fn a_lone_read_is_inline_at_any_depth() {
    let dir = match tmpfs_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip_line(&format!("a_lone_read_is_inline_at_any_depth: {why}"))
        }
    };
    let size = 1u64 << 20;
    let f = File::open(pattern_file(dir.path(), "f", size), Direct::Off).unwrap();
    for (window, want_inline) in [(None, true), (Some(32), false)] {
        let mut b = queue(BackendKind::Uring, 256);
        if let Some(w) = window {
            b = b.inline_window(w);
        }
        let mut q = match b.build() {
            Ok(q) => q,
            Err(e) => {
                return common::skip_line(&format!("a_lone_read_is_inline_at_any_depth: {e}"))
            }
        };
        let before = q.stats().backend.syscalls;
        let mut done = Vec::new();
        for i in 0..50u64 {
            let off = i * 4096 + i;
            q.push(Read {
                file: &f,
                offset: off,
                len: 1000,
                buf: Buf::new(1000),
                user_data: i,
                ioprio: 0,
                cache: None,
            })
            .unwrap();
            q.reap(1, None, &mut done).unwrap();
            let c = done.pop().expect("one completion");
            assert_eq!(c.result.unwrap(), 1000);
            nowait::pattern::check(off, c.buf.as_slice()).unwrap();
        }
        let st = q.stats();
        if want_inline {
            assert_eq!(
                st.inline, 50,
                "default window, depth 256, one read at a time: {st:?}"
            );
            assert_eq!(
                st.backend.syscalls, before,
                "no system call of the backend's: {st:?}"
            );
        } else {
            assert_eq!(st.inline, 0, "window 32 set explicitly: {st:?}");
        }
    }
}
