//! Shared test helpers: seeded randomness, pattern files, backend and
//! filesystem discovery that skips loudly.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;

use nowait::{BackendChoice, BackendKind, Queue};

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

/// A seed from the environment variable `var`, or the clock; printed with
/// the command that replays it.
pub fn printed_seed(var: &str, test: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{test}: seed {seed} (replay with {var}={seed})");
    seed
}

impl Rng {
    /// Seed from `NOWAIT_TEST_SEED` or the clock; the seed is printed so a
    /// failure can be replayed.
    pub fn from_env(test: &str) -> Rng {
        Rng(printed_seed("NOWAIT_TEST_SEED", test) | 1)
    }

    /// A generator for a seed derived from a printed one (per task, say).
    pub fn from_seed(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// Write a pattern file of `size` bytes at `dir/name`.
pub fn pattern_file(dir: &Path, name: &str, size: u64) -> PathBuf {
    let p = dir.join(name);
    nowait::pattern::write_file(&p, size, |_| {}).expect("write pattern file");
    p
}

/// Every backend this machine offers — the single ones and `aio+pool`
/// (direct files on aio, buffered on pool) — with a queue of `depth`; the
/// others are reported as skipped, with the reason.
pub fn backends(depth: usize) -> Vec<(BackendKind, Queue)> {
    let mut v = Vec::new();
    for k in BackendKind::ALL.into_iter().chain([BackendKind::AioPool]) {
        match Queue::builder()
            .depth(depth)
            .backend(BackendChoice::Exactly(k))
            .build()
        {
            Ok(q) => v.push((k, q)),
            Err(e) => skip(&format!("backend {k}"), &e.to_string()),
        }
    }
    assert!(!v.is_empty(), "no backend at all could be built");
    v
}

/// Every backend kind: the single ones and `aio+pool`.
pub fn backend_kinds() -> Vec<BackendKind> {
    BackendKind::ALL
        .into_iter()
        .chain([BackendKind::AioPool])
        .collect()
}

/// A queue of `kind` and `depth` built on this thread (io_uring rings are
/// SINGLE_ISSUER), or `None` after [`skip`] said why it cannot be.
pub fn queue_of(kind: BackendKind, depth: usize) -> Option<Queue> {
    match Queue::builder()
        .depth(depth)
        .backend(BackendChoice::Exactly(kind))
        .build()
    {
        Ok(q) => Some(q),
        Err(e) => {
            skip(&format!("backend {kind}"), &e.to_string());
            None
        }
    }
}

/// A fresh directory on a filesystem that takes `O_DIRECT`: the temp dir,
/// else `/var/tmp`, else `/dev/shm` (tmpfs has O_DIRECT on recent kernels).
/// `Err` says why none does.
pub fn direct_dir() -> Result<tempfile::TempDir, String> {
    let mut why = Vec::new();
    for base in [std::env::temp_dir(), "/var/tmp".into(), "/dev/shm".into()] {
        let Ok(dir) = tempfile::tempdir_in(&base) else {
            why.push(format!("{}: cannot make a directory", base.display()));
            continue;
        };
        let probe = pattern_file(dir.path(), ".direct-probe", 4096);
        match nowait::File::open(&probe, nowait::Direct::On) {
            Ok(_) => {
                let _ = std::fs::remove_file(&probe);
                return Ok(dir);
            }
            Err(e) => why.push(format!("{}: {e}", base.display())),
        }
    }
    Err(format!("no directory takes O_DIRECT ({})", why.join("; ")))
}

/// `rounds` rounds of `n_direct` reads of `direct` (block-aligned, 4 KiB
/// to 64 KiB) and `n_buffered` reads of `buffered` (any offset and length
/// up to 64 KiB), interleaved, all in flight at once (the queue's depth
/// must hold them), all inside the files (`size` bytes), reaped with
/// `reap(1)` and `reap(all)` alternately. Checks one completion per read
/// and every byte against the pattern.
pub fn mixed_reads(
    q: &mut Queue,
    direct: &nowait::File,
    buffered: &nowait::File,
    size: u64,
    (n_direct, n_buffered): (usize, usize),
    rounds: usize,
    rng: &mut Rng,
) {
    assert!(direct.is_direct() && !buffered.is_direct());
    let kind = q.backend().kind;
    let n = n_direct + n_buffered;
    for round in 0..rounds {
        let mut asked = Vec::with_capacity(n);
        let (mut d, mut b) = (0, 0);
        for i in 0..n {
            // Interleave in proportion, so both halves are busy throughout.
            let take_direct = b == n_buffered || (d < n_direct && d * n_buffered <= b * n_direct);
            let (file, off, len) = if take_direct {
                d += 1;
                let len = 4096 * (1 + rng.below(16)) as usize;
                let off = rng.below((size - len as u64) / 4096 + 1) * 4096;
                (direct, off, len)
            } else {
                b += 1;
                let len = 1 + rng.below(65536) as usize;
                (buffered, rng.below(size - len as u64 + 1), len)
            };
            asked.push((take_direct, off, len));
            q.push(nowait::Read {
                file,
                offset: off,
                len,
                buf: nowait::Buf::new(len),
                user_data: i as u64,
                ioprio: 0,
                cache: None,
            })
            .unwrap_or_else(|r| panic!("{kind} round {round}: push {i}: {}", r.error));
        }
        q.submit().unwrap();
        let mut done = Vec::with_capacity(n);
        let mut all = false;
        while done.len() < n {
            let min = if all { n - done.len() } else { 1 };
            q.reap(min, None, &mut done).unwrap();
            all = !all;
        }
        assert_eq!(
            done.len(),
            n,
            "{kind} round {round}: one completion per read"
        );
        let mut seen = vec![false; n];
        for c in done {
            let i = c.user_data as usize;
            assert!(
                !std::mem::replace(&mut seen[i], true),
                "{kind}: read {i} completed twice"
            );
            let (is_direct, off, len) = asked[i];
            let ctx =
                format!("{kind} round {round} read {i} direct={is_direct} off={off} len={len}");
            assert_eq!(
                c.result.unwrap_or_else(|e| panic!("{ctx}: {e}")),
                len,
                "{ctx}"
            );
            nowait::pattern::check(off, c.buf.as_slice()).unwrap_or_else(|m| panic!("{ctx}: {m}"));
        }
        assert_eq!(q.in_flight(), 0);
    }
}

pub fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// Name of the filesystem holding `dir`.
pub fn fs_of(dir: &Path) -> &'static str {
    // A name of its own per call: tests run in parallel, and one's
    // remove_file must not pull another's probe away.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".nowait-fs-probe-{}-{n}", std::process::id()));
    std::fs::write(&probe, b"x").expect("write probe file");
    let f = nowait::File::open(&probe, nowait::Direct::Off).expect("open probe file");
    let fs = f.fs();
    let _ = std::fs::remove_file(&probe);
    fs
}

/// A loop-mounted filesystem image, unmounted and removed on drop.
pub struct LoopMount {
    pub dir: tempfile::TempDir,
    image: PathBuf,
}

impl LoopMount {
    /// Make and mount a `size_mib` image with `mkfs_cmd` (e.g. `mkfs.xfs`).
    /// `Err` says why it cannot be done here (not root, tool missing, …).
    pub fn new(mkfs_cmd: &str, size_mib: u64) -> Result<LoopMount, String> {
        if !is_root() {
            return Err("needs root to mount a loop image".into());
        }
        let base = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = base.path().join("fs.img");
        let f = std::fs::File::create(&image).map_err(|e| e.to_string())?;
        f.set_len(size_mib << 20).map_err(|e| e.to_string())?;
        let out = Command::new(mkfs_cmd)
            .arg("-q")
            .arg(&image)
            .output()
            .map_err(|e| {
                format!("{mkfs_cmd} not runnable ({e}); install it (apt-get install xfsprogs)")
            })?;
        if !out.status.success() {
            return Err(format!(
                "{mkfs_cmd} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .arg("-o")
            .arg("loop")
            .arg(&image)
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Err(format!(
                    "mount -o loop failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                ))
            }
            Err(e) => return Err(format!("mount not runnable: {e}")),
        }
        // Keep the image directory alive as long as the mount.
        std::mem::forget(base);
        Ok(LoopMount { dir, image })
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        // io_uring drops a closed ring's registered files from a kernel
        // worker, so the mount can be busy for a moment: retry, then lazy.
        let mut ok = false;
        for _ in 0..40 {
            if Command::new("umount")
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success())
            {
                ok = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
        let _ = std::fs::remove_file(&self.image);
        if let Some(parent) = self.image.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

/// Re-run this test binary for one test in a fresh process with `envs`
/// (for tests that depend on process-wide state: environment variables,
/// seccomp filters, remembered per-filesystem decisions).
pub fn run_child(test: &str, envs: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    // Child tests are `#[ignore]`d so that the ordinary run lists them as
    // ignored instead of passing them as no-ops: include them here.
    cmd.args([
        test,
        "--exact",
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("NOWAIT_TEST_CHILD", test);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- child {test} ---\n{text}--- end child ---");
    assert!(out.status.success(), "child {test} failed");
    assert!(text.contains("1 passed"), "child {test} did not run");
}

/// Whether this process is the child [`run_child`] started for `test`.
pub fn in_child(test: &str) -> bool {
    std::env::var("NOWAIT_TEST_CHILD").is_ok_and(|v| v == test)
}

/// Start of a child test (mark it `#[ignore]`): fails unless this process
/// is the child [`run_child`] started for `test`, so that running it any
/// other way (`cargo test -- --ignored`) fails instead of passing as a
/// no-op.
pub fn assert_in_child(test: &str) {
    assert!(
        in_child(test),
        "{test} runs only in the child process its parent test starts (run_child); \
         run the parent test instead"
    );
}

/// What a watched piece of work is doing, and a counter it bumps whenever it
/// makes progress (see [`watchdog`]).
#[derive(Default)]
pub struct Progress {
    count: std::sync::atomic::AtomicU64,
    doing: std::sync::Mutex<String>,
}

impl Progress {
    /// One more step done; `doing` says what is in flight now.
    pub fn step(&self, doing: impl FnOnce() -> String) {
        *self.doing.lock().unwrap() = doing();
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Progress made without changing the description.
    pub fn tick(&self) {
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Run `work` on its own thread; fail the test, naming `what` and what the
/// work said was in flight, when it makes no progress (no `Progress::step`
/// or `tick`) for `stall`. A hung read then fails in seconds instead of
/// hanging CI (the stuck thread is left behind; the test process exits
/// when the harness is done).
pub fn watchdog<T: Send + 'static>(
    what: &str,
    stall: std::time::Duration,
    work: impl FnOnce(&std::sync::Arc<Progress>) -> T + Send + 'static,
) -> T {
    let progress = std::sync::Arc::new(Progress::default());
    let p = progress.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(format!("watched {what}"))
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&p)));
            let _ = tx.send(r);
        })
        .expect("spawn the watched thread");
    let mut last = u64::MAX;
    let mut since = std::time::Instant::now();
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(Ok(v)) => {
                let _ = handle.join();
                return v;
            }
            Ok(Err(panic)) => {
                let _ = handle.join();
                std::panic::resume_unwind(panic);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("{what}: the watched thread died without a result")
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let now = progress.count.load(std::sync::atomic::Ordering::Relaxed);
        if now != last {
            last = now;
            since = std::time::Instant::now();
        } else if since.elapsed() >= stall {
            let doing = progress.doing.lock().map(|d| d.clone()).unwrap_or_default();
            panic!(
                "{what}: no progress for {:?} (hung); in flight: {doing}",
                stall
            );
        }
    }
}

mod caller_memory;
#[allow(unused_imports)] // each test binary uses a different subset
pub use caller_memory::{CallerMemory, SENTINEL};

mod seccomp;
#[allow(unused_imports)] // each test binary uses a different subset
pub use seccomp::{deny_io_uring_setup_on_this_thread, deny_on_this_thread};

// `skip` and `skip_line`: see skip.rs (shared with the CLI's tests).
mod skip;
#[allow(unused_imports)] // each test binary uses a different subset
pub use skip::{skip, skip_line};
