//! A memory cgroup of one's own, with a limit, for measuring what a scan
//! does to the page cache: cgroup v2 (`memory.max`) where the machine has
//! the memory controller there, else v1 (`memory.limit_in_bytes`).
//! Created under the hierarchy's root with a name unique to the process,
//! removed on drop. Shared by the `scan` example and the cache-policy tests
//! (`#[path]`). Needs root.

use std::fs;
use std::path::{Path, PathBuf};

/// A memory-limited cgroup, removed on drop (its processes must have exited).
pub struct MemCgroup {
    dir: PathBuf,
    v2: bool,
    limit: u64,
}

/// The mount point of the first mount of `fstype` whose super options
/// include `option` (any, for `None`).
fn mount_of(fstype: &str, option: Option<&str>) -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split_whitespace();
        if post.next()? != fstype {
            return None;
        }
        let superopts = post.nth(1).unwrap_or("");
        if let Some(o) = option {
            if !superopts.split(',').any(|x| x == o) {
                return None;
            }
        }
        pre.split_whitespace().nth(4).map(PathBuf::from)
    })
}

impl MemCgroup {
    /// Make a cgroup named `name` (made unique with the process id and a
    /// counter) limited to `limit` bytes of memory. `Err` says why this
    /// machine cannot (not root, no memory controller in either version).
    pub fn new(name: &str, limit: u64) -> Result<MemCgroup, String> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let unique = format!("{name}-{}-{n}", std::process::id());
        let mut why = Vec::new();
        // v2: the memory controller must be enabled for the root's children.
        match mount_of("cgroup2", None) {
            Some(root) => {
                let ctl =
                    fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
                if ctl.split_whitespace().any(|c| c == "memory") {
                    match Self::make(&root.join(&unique), "memory.max", limit) {
                        Ok(dir) => {
                            return Ok(MemCgroup {
                                dir,
                                v2: true,
                                limit,
                            })
                        }
                        Err(e) => why.push(format!("cgroup v2 at {}: {e}", root.display())),
                    }
                } else {
                    why.push(format!(
                        "cgroup v2 at {} has no memory controller for its children",
                        root.display()
                    ));
                }
            }
            None => why.push("no cgroup v2 mount".into()),
        }
        match mount_of("cgroup", Some("memory")) {
            Some(root) => match Self::make(&root.join(&unique), "memory.limit_in_bytes", limit) {
                Ok(dir) => {
                    return Ok(MemCgroup {
                        dir,
                        v2: false,
                        limit,
                    })
                }
                Err(e) => why.push(format!("cgroup v1 memory at {}: {e}", root.display())),
            },
            None => why.push("no cgroup v1 memory hierarchy".into()),
        }
        Err(format!(
            "cannot make a memory-limited cgroup ({}); run as root on a machine with the memory controller",
            why.join("; ")
        ))
    }

    fn make(dir: &Path, limit_file: &str, limit: u64) -> Result<PathBuf, String> {
        fs::create_dir(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        if let Err(e) = fs::write(dir.join(limit_file), limit.to_string()) {
            let _ = fs::remove_dir(dir);
            return Err(format!("write {limit_file}: {e}"));
        }
        Ok(dir.to_path_buf())
    }

    /// The `cgroup.procs` file: writing a process id moves that process in.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// "v2 memory.max" or "v1 memory.limit_in_bytes", and the limit.
    pub fn describe(&self) -> String {
        format!(
            "cgroup {} {} = {} MiB ({})",
            if self.v2 { "v2" } else { "v1" },
            if self.v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            },
            self.limit >> 20,
            self.dir.display()
        )
    }
}

/// Move the calling process into the cgroup whose `cgroup.procs` is `procs`.
pub fn enter(procs: &Path) -> Result<(), String> {
    fs::write(procs, std::process::id().to_string())
        .map_err(|e| format!("cannot enter {}: {e}", procs.display()))
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // The processes that were in it have exited; their page cache
        // moves to the parent. A moment may pass before the kernel lets go.
        for _ in 0..50 {
            if fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("note: could not remove {}", self.dir.display());
    }
}

/// Pages of `path` resident in the page cache, and its size in pages, by
/// `mincore(2)` over a read-only mapping (which faults nothing in).
pub fn resident(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok((0, 0));
    }
    let page = 4096usize;
    let pages = len.div_ceil(page);
    // SAFETY: a fresh shared read-only mapping of an open file; only its
    // residency is asked, no byte of it is read.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr..addr+len` is the mapping made above; `vec` has one
    // byte per page of it.
    let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: unmapping the mapping made above, which nothing refers to.
    unsafe { libc::munmap(addr, len) };
    if r != 0 {
        return Err(err);
    }
    Ok((
        vec.iter().filter(|&&b| b & 1 != 0).count() as u64,
        pages as u64,
    ))
}
