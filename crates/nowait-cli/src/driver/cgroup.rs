//! A memory cgroup of a scenario's own, with a limit, so that a run sees
//! less memory than the machine has: cgroup v2 (`memory.max`) where the
//! memory controller is enabled for the children of a cgroup the process
//! may nest under, else v1 (`memory.limit_in_bytes`). Made beneath the
//! process's own memory cgroup where it can be (so the limits above it
//! still hold), else at the hierarchy's root; named after the process and
//! removed on drop. Needs root.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A memory-limited cgroup, removed on drop (its processes must have exited).
#[derive(Debug)]
pub struct MemCgroup {
    dir: PathBuf,
    v2: bool,
    limit: u64,
}

/// The mount point of the first mount of `fstype` whose super options
/// include `option` (any, for `None`), from `/proc/self/mountinfo`.
fn mount_of(fstype: &str, option: Option<&str>) -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split_whitespace();
        if post.next()? != fstype {
            return None;
        }
        let superopts = post.nth(1).unwrap_or("");
        if option.is_some_and(|o| !superopts.split(',').any(|x| x == o)) {
            return None;
        }
        pre.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The process's own cgroup in a hierarchy, from `/proc/self/cgroup`:
/// v2's `0::/path` (`controller` `None`), or the v1 line whose controllers
/// include `controller`.
fn own_cgroup(proc_self_cgroup: &str, controller: Option<&str>) -> Option<PathBuf> {
    proc_self_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctls, path) = (f.next()?, f.next()?, f.next()?);
        let ours = match controller {
            None => id == "0" && ctls.is_empty(),
            Some(c) => ctls.split(',').any(|x| x == c),
        };
        ours.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

impl MemCgroup {
    /// Make a cgroup named `name-PID-N` limited to `limit` bytes of memory.
    /// `Err` says why this machine cannot, hierarchy by hierarchy (not root,
    /// no memory controller in either version).
    pub fn new(name: &str, limit: u64) -> Result<MemCgroup, String> {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let unique = format!("{name}-{}-{n}", std::process::id());
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut why = Vec::new();
        // v2: the memory controller must be enabled for the parent's children.
        match mount_of("cgroup2", None) {
            Some(root) => {
                let mut parents = vec![root.clone()];
                if let Some(p) = own_cgroup(&own, None).filter(|p| !p.as_os_str().is_empty()) {
                    parents.insert(0, root.join(p));
                }
                let with_memory = parents.into_iter().find(|p| {
                    fs::read_to_string(p.join("cgroup.subtree_control"))
                        .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
                });
                match with_memory {
                    Some(parent) => match make(&parent.join(&unique), "memory.max", limit) {
                        Ok(dir) => {
                            return Ok(MemCgroup {
                                dir,
                                v2: true,
                                limit,
                            })
                        }
                        Err(e) => why.push(format!("cgroup v2 at {}: {e}", parent.display())),
                    },
                    None => why.push(format!(
                        "cgroup v2 at {} enables no memory controller for its children",
                        root.display()
                    )),
                }
            }
            None => why.push("no cgroup v2 mount".into()),
        }
        match mount_of("cgroup", Some("memory")) {
            Some(root) => {
                let parent = own_cgroup(&own, Some("memory"))
                    .map(|p| root.join(p))
                    .filter(|p| p.is_dir())
                    .unwrap_or(root);
                match make(&parent.join(&unique), "memory.limit_in_bytes", limit) {
                    Ok(dir) => {
                        return Ok(MemCgroup {
                            dir,
                            v2: false,
                            limit,
                        })
                    }
                    Err(e) => why.push(format!("cgroup v1 memory at {}: {e}", parent.display())),
                }
            }
            None => why.push("no cgroup v1 memory hierarchy".into()),
        }
        Err(format!(
            "cannot make a memory-limited cgroup ({}); run as root on a machine with the \
             memory controller (cgroup v2 memory.max or v1 memory.limit_in_bytes)",
            why.join("; ")
        ))
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `cgroup.procs`: writing a process id there moves that process in.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// `v2 memory.max` or `v1 memory.limit_in_bytes`: the file that limits it.
    pub fn kind(&self) -> &'static str {
        if self.v2 {
            "v2 memory.max"
        } else {
            "v1 memory.limit_in_bytes"
        }
    }

    /// Its limit, bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

fn make(dir: &Path, limit_file: &str, limit: u64) -> Result<PathBuf, String> {
    fs::create_dir(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    if let Err(e) = fs::write(dir.join(limit_file), limit.to_string()) {
        let _ = fs::remove_dir(dir);
        return Err(format!("write {limit_file}: {e}"));
    }
    Ok(dir.to_path_buf())
}

/// Move the calling process into the cgroup whose `cgroup.procs` is `procs`.
pub fn enter(procs: &Path) -> Result<(), String> {
    fs::write(procs, std::process::id().to_string())
        .map_err(|e| format!("cannot enter {}: {e}", procs.display()))
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // Its processes have exited; their page cache moves to the parent.
        // A moment may pass before the kernel lets the directory go.
        for _ in 0..100 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!(
            "note: could not remove the cgroup {}; remove it with rmdir",
            self.dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroup_of_each_version() {
        let s = "4:memory:/a/b\n3:cpu,cpuacct:/\n0::/user.slice/x\n";
        assert_eq!(own_cgroup(s, Some("memory")), Some(PathBuf::from("a/b")));
        assert_eq!(own_cgroup(s, Some("cpuacct")), Some(PathBuf::from("")));
        assert_eq!(own_cgroup(s, None), Some(PathBuf::from("user.slice/x")));
        assert_eq!(own_cgroup("1:cpu:/\n", Some("memory")), None);
    }
}
