//! Where a scenario's data files go: a scratch directory (`--dir`, or a
//! temporary one removed afterwards), the filesystem it is on, and a
//! filesystem made on a loop device (`losetup --direct-io=on` over a sparse
//! image, `mkfs`, `mount`; root only), unmounted and detached afterwards,
//! also on failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::base::failure::Failure;

/// A scenario's scratch directory: `--dir` (which must be a directory), or
/// a new temporary one, removed when the returned guard is dropped.
pub fn scratch(
    dir: Option<&Path>,
    name: &str,
) -> Result<(Option<tempfile::TempDir>, PathBuf), Failure> {
    match dir {
        Some(d) if d.is_dir() => Ok((None, d.to_path_buf())),
        Some(d) => Err(Failure::Usage(format!(
            "--dir={}: not a directory",
            d.display()
        ))),
        None => {
            let t = tempfile::Builder::new()
                .prefix(&format!("nowait-{name}-"))
                .tempdir()
                .map_err(|e| Failure::Runtime(format!("cannot make a temporary directory: {e}")))?;
            let p = t.path().to_path_buf();
            Ok((Some(t), p))
        }
    }
}

/// A filesystem made on a loop device; unmounted and detached when
/// dropped.
pub struct LoopFs {
    /// Where it is mounted.
    pub mnt: PathBuf,
    /// The loop device (`/dev/loop3`).
    pub dev: String,
    mounted: bool,
    /// The command, for messages (`nowait scenario qd-sweep`).
    prog: &'static str,
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            if let Err(e) = unmount(&self.mnt) {
                eprintln!(
                    "{}: cleanup: {e}; unmount {} by hand",
                    self.prog,
                    self.mnt.display()
                );
            }
        }
        if let Err(e) = sh("losetup", &["-d", &self.dev]) {
            eprintln!("{}: cleanup: {e}; detach {} by hand", self.prog, self.dev);
        }
    }
}

/// Unmount `mnt`, retrying for a while: io_uring releases a closed ring's
/// registered files in a kernel worker after `close`, so the filesystem can
/// be busy for a moment after the last queue is gone. Falls back to a lazy
/// unmount (`umount -l`) so nothing stays mounted.
fn unmount(mnt: &Path) -> Result<String, String> {
    let m = mnt.to_str().unwrap_or_default();
    let mut last = String::new();
    for _ in 0..40 {
        match sh("umount", &[m]) {
            Ok(out) => return Ok(out),
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sh("umount", &["-l", m]).map_err(|e| format!("{last}; then {e}"))
}

/// Run a tool, returning its stdout or why it failed.
fn sh(cmd: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cmd}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "`{cmd} {}` failed ({}): {}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn tool_exists(name: &str) -> bool {
    [
        "/usr/sbin",
        "/sbin",
        "/usr/bin",
        "/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
    ]
    .iter()
    .any(|d| Path::new(d).join(name).exists())
}

/// The filesystem of a directory, by name.
pub fn fs_of(dir: &Path) -> String {
    let probe = dir.join(".nowait-fs-probe");
    let r = std::fs::write(&probe, b"x")
        .ok()
        .and_then(|_| nowait::File::open(&probe, nowait::Direct::Off).ok())
        .map(|f| f.fs().to_string());
    let _ = std::fs::remove_file(&probe);
    r.unwrap_or_else(|| "unknown".into())
}

/// Make `fs` on a loop device over a sparse image in `scratch`, mounted
/// under it, with room for a file of `size` bytes; `prog` names the
/// command in messages.
pub fn make_loop_fs(
    fs: &str,
    scratch: &Path,
    size: u64,
    prog: &'static str,
) -> Result<LoopFs, String> {
    if !rustix::process::getuid().is_root() {
        return Err(format!(
            "needs root to make {fs} on a loop device (mkfs.{fs} + mount -o loop); run as root \
             or give --dir on a {fs} filesystem"
        ));
    }
    let mkfs = format!("mkfs.{fs}");
    if !tool_exists(&mkfs) {
        return Err(format!(
            "{mkfs} is not installed (apt-get install {})",
            if fs == "xfs" { "xfsprogs" } else { "e2fsprogs" }
        ));
    }
    let img = scratch.join(format!("{fs}.img"));
    // Room for the file, the log and metadata; xfs wants at least 300 MiB.
    let img_size = (size + size / 8 + (512 << 20)).div_ceil(1 << 20) << 20;
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(img_size))
        .map_err(|e| format!("cannot make the image {}: {e}", img.display()))?;
    let img_s = img.to_string_lossy().to_string();
    // Direct I/O on the loop device, so reads reach the disk below as the
    // job's O_DIRECT reads would (plain losetup if it cannot).
    let dev = sh("losetup", &["--find", "--show", "--direct-io=on", &img_s])
        .or_else(|_| sh("losetup", &["--find", "--show", &img_s]))?;
    let mut guard = LoopFs {
        mnt: scratch.join(format!("{fs}-mnt")),
        dev: dev.clone(),
        mounted: false,
        prog,
    };
    let force = if fs == "xfs" { "-f" } else { "-F" };
    sh(&mkfs, &["-q", force, &dev])?;
    std::fs::create_dir_all(&guard.mnt)
        .map_err(|e| format!("mkdir {}: {e}", guard.mnt.display()))?;
    sh("mount", &[&dev, guard.mnt.to_str().unwrap_or_default()])?;
    guard.mounted = true;
    Ok(guard)
}
