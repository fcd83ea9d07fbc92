//! How much memory this process's page cache can have: the smallest limit
//! of its memory cgroup and the cgroups above it (v2 `memory.max`, v1
//! `memory.limit_in_bytes`), and the machine's memory (`MemTotal`).
//!
//! Read from `/proc/self/cgroup`, `/proc/self/mountinfo` and the cgroup
//! files at each call (a few small reads): a process moved to another
//! cgroup is seen at the next call.

use std::fs;
use std::path::{Path, PathBuf};

/// The bytes this process's page cache can hold at most: the smallest
/// memory limit on the way from its cgroup to the root (v1 and v2), or the
/// machine's memory if that is smaller or no limit is set. `None` only if
/// not even `/proc/meminfo` can be read.
pub(crate) fn page_cache_budget() -> Option<u64> {
    let total = mem_total();
    let limit = cgroup_limit();
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn mem_total() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The smallest memory limit of this process's cgroups (v2, and v1's
/// `memory` hierarchy) and their ancestors; `None` if none is set.
fn cgroup_limit() -> Option<u64> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<u64> = None;
    for line in own.lines() {
        // `hierarchy-id:controllers:path`; v2 is `0::path`.
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (fstype, want, file) = if id == "0" && ctrls.is_empty() {
            ("cgroup2", None, "memory.max")
        } else if ctrls.split(',').any(|c| c == "memory") {
            ("cgroup", Some("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let Some((root, mount)) = find_mount(&mounts, fstype, want) else {
            continue;
        };
        // The cgroup's path relative to the mounted root of its hierarchy.
        let rel = path.strip_prefix(root.as_str()).unwrap_or(path);
        let mut dir = mount.join(rel.trim_start_matches('/'));
        loop {
            if let Some(l) = read_limit(&dir.join(file)) {
                best = Some(best.map_or(l, |b| b.min(l)));
            }
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
    }
    best
}

/// The root within its filesystem and the mount point of the first mount
/// of `fstype` (with `option` among its super options, for v1).
fn find_mount(mountinfo: &str, fstype: &str, option: Option<&str>) -> Option<(String, PathBuf)> {
    for line in mountinfo.lines() {
        // `id parent maj:min root mountpoint opts [optional...] - fstype source superopts`
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let mut post = post.split_whitespace();
        if post.next() != Some(fstype) {
            continue;
        }
        let superopts = post.nth(1).unwrap_or("");
        if let Some(o) = option {
            if !superopts.split(',').any(|x| x == o) {
                continue;
            }
        }
        let mut pre = pre.split_whitespace();
        let root = pre.nth(3)?;
        let mount = pre.next()?;
        return Some((root.to_string(), PathBuf::from(mount)));
    }
    None
}

/// A limit file's value in bytes; `None` for `max`, a value so large it
/// means no limit (v1 writes `PAGE_COUNTER_MAX` pages), or no file.
fn read_limit(path: &Path) -> Option<u64> {
    let s = fs::read_to_string(path).ok()?;
    let v: u64 = s.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_found_by_type_and_option() {
        let info = "\
25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 25 0:28 /sub /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw";
        assert_eq!(
            find_mount(info, "cgroup", Some("memory")),
            Some(("/".into(), PathBuf::from("/sys/fs/cgroup/memory")))
        );
        assert_eq!(
            find_mount(info, "cgroup2", None),
            Some(("/sub".into(), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        assert_eq!(find_mount(info, "cgroup", Some("pids")), None);
    }

    #[test]
    fn the_budget_is_at_most_the_machines_memory() {
        let total = mem_total().expect("/proc/meminfo");
        let b = page_cache_budget().expect("a budget");
        assert!(b > 0 && b <= total, "{b} of {total}");
    }
}
