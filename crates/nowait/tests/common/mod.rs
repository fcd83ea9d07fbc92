//! Shared test helpers: seeded randomness, pattern files, backend and
//! filesystem discovery that skips loudly.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;

use nowait::{BackendChoice, BackendKind, Queue};

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    /// Seed from `NOWAIT_TEST_SEED` or the clock; the seed is printed so a
    /// failure can be replayed.
    pub fn from_env(test: &str) -> Rng {
        let seed = std::env::var("NOWAIT_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: seed {seed} (replay with NOWAIT_TEST_SEED={seed})");
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

/// Every backend this machine offers, with a queue of `depth`; the others
/// are reported as skipped, with the reason.
pub fn backends(depth: usize) -> Vec<(BackendKind, Queue)> {
    let mut v = Vec::new();
    for k in BackendKind::ALL {
        match Queue::builder()
            .depth(depth)
            .backend(BackendChoice::Exactly(k))
            .build()
        {
            Ok(q) => v.push((k, q)),
            Err(e) => eprintln!("SKIP backend {k}: {e}"),
        }
    }
    assert!(!v.is_empty(), "no backend at all could be built");
    v
}

pub fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// Name of the filesystem holding `dir`.
pub fn fs_of(dir: &Path) -> &'static str {
    let probe = dir.join(".nowait-fs-probe");
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
