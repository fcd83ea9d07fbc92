//! The host a report ran on: CPU model and count, kernel, the state of
//! the CPU vulnerabilities' mitigations, and the device behind a file
//! (`/proc/cpuinfo`, `uname`, `/sys/devices/system/cpu/vulnerabilities`,
//! `/sys/dev/block`).

use std::path::Path;

/// The host a report ran on, in one line: CPU model, kernel, a summary of
/// `/sys/devices/system/cpu/vulnerabilities`, and the device behind `file`.
pub fn host(file: Option<&Path>) -> String {
    let h = Host::of(file);
    format!(
        "{} x {}; kernel {}; mitigations: {}; device: {}",
        h.cpus, h.cpu, h.kernel, h.mitigations, h.device
    )
}

/// What [`host`] prints, field by field (also in the JSON reports).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Host {
    /// `model name` of `/proc/cpuinfo`.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: usize,
    /// `uname -r`.
    pub kernel: String,
    /// Counts of the vulnerabilities' states (`12 mitigated, 3 not affected`).
    pub mitigations: String,
    /// The block device holding the file (`vda (virtio disk)`), or what holds it.
    pub device: String,
}

impl Host {
    /// This machine, and the device behind `file`.
    pub fn of(file: Option<&Path>) -> Host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|x| x.1))
            .map_or("unknown CPU".into(), |m| m.trim().to_string());
        let uname = rustix::system::uname();
        Host {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: uname.release().to_string_lossy().into_owned(),
            mitigations: mitigations(),
            device: file.map_or("-".into(), device_of),
        }
    }
}

fn mitigations() -> String {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/vulnerabilities") else {
        return "unknown (no /sys/devices/system/cpu/vulnerabilities)".into();
    };
    let (mut mitigated, mut vulnerable, mut unaffected, mut other) = (0, Vec::new(), 0, 0);
    for e in dir.flatten() {
        let v = std::fs::read_to_string(e.path()).unwrap_or_default();
        if v.starts_with("Not affected") {
            unaffected += 1;
        } else if v.starts_with("Mitigation") {
            mitigated += 1;
        } else if v.starts_with("Vulnerable") {
            vulnerable.push(e.file_name().to_string_lossy().into_owned());
        } else {
            other += 1;
        }
    }
    vulnerable.sort();
    let mut s = format!("{mitigated} mitigated, {unaffected} not affected");
    if !vulnerable.is_empty() {
        s += &format!(", vulnerable: {}", vulnerable.join(" "));
    }
    if other > 0 {
        s += &format!(", {other} other");
    }
    s
}

/// The block device holding `path` (its disk and model from sysfs), or
/// the filesystem when there is none (tmpfs, FUSE).
pub fn device_of(path: &Path) -> String {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(md) = std::fs::metadata(path) else {
        return "unknown (cannot stat the file)".into();
    };
    let dev = if md.file_type().is_block_device() {
        md.rdev()
    } else {
        md.dev()
    };
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let sys = format!("/sys/dev/block/{major}:{minor}");
    let Ok(real) = std::fs::canonicalize(&sys) else {
        // No disk behind it: name the filesystem as the engine sees it.
        let fs = nowait::File::open(path, nowait::Direct::Off).map(|f| f.fs().to_string());
        return format!(
            "no block device ({}, device {major}:{minor})",
            fs.unwrap_or("?".into())
        );
    };
    let name = real
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    // A partition's disk is its parent directory.
    let disk = if real.join("partition").exists() {
        real.parent().unwrap_or(&real).to_path_buf()
    } else {
        real
    };
    let disk_name = disk
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let read = |f: &str| {
        std::fs::read_to_string(disk.join(f))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let model = read("device/model").filter(|m| !m.is_empty());
    let kind = if disk_name.starts_with("vd") {
        "virtio disk".to_string()
    } else if disk_name.starts_with("zram") {
        "zram".into()
    } else if disk_name.starts_with("loop") {
        format!(
            "loop over {}",
            read("loop/backing_file").unwrap_or("?".into())
        )
    } else if disk_name.starts_with("nvme") {
        "NVMe".into()
    } else {
        match read("queue/rotational").as_deref() {
            Some("1") => "rotational".into(),
            _ => "block device".into(),
        }
    };
    let mut s = if name == disk_name {
        name
    } else {
        format!("{name} on {disk_name}")
    };
    s += &format!(" ({kind}");
    if let Some(m) = model {
        s += &format!(", {m}");
    }
    s + ")"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_kernel_and_device() {
        let h = Host::of(Some(Path::new("/proc/self/stat")));
        assert!(!h.kernel.is_empty() && h.cpus >= 1);
        assert!(h.device.contains("no block device (proc"), "{}", h.device);
        assert!(host(None).contains("kernel"));
    }
}
