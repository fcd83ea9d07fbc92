//! The block device under a file, and what sysfs says about it: the one
//! place that picks `st_dev` or `st_rdev` and reads `/sys/dev/block`.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;

/// The block device a file's reads reach: the node itself (`st_rdev`) for a
/// block device, the device holding the filesystem (`st_dev`) otherwise.
pub(crate) fn device_of(meta: &fs::Metadata) -> u64 {
    if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    }
}

/// `/sys/dev/block/MAJ:MIN`.
fn dev_dir(dev: u64) -> String {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    format!("/sys/dev/block/{maj}:{min}")
}

/// `/sys/dev/block/MAJ:MIN/queue/ATTR`, or the parent disk's for a partition.
pub(crate) fn queue_attr(dev: u64, attr: &str) -> Option<String> {
    let d = dev_dir(dev);
    [format!("{d}/queue/{attr}"), format!("{d}/../queue/{attr}")]
        .iter()
        .find_map(|p| fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
}

/// The device's logical block size (`queue/logical_block_size`).
pub(crate) fn logical_block_size(dev: u64) -> Option<u32> {
    queue_attr(dev, "logical_block_size")?.parse().ok()
}

/// True if the device's queue polls (`queue/io_poll` is 1).
pub(crate) fn io_poll(dev: u64) -> Option<bool> {
    queue_attr(dev, "io_poll").map(|s| s == "1")
}

/// The name of the RAM block device `dev` is (`zram0`, `ram0`, `pmem0`), if
/// it is one whose every read is a memory copy. A zram device with a
/// backing device is left out: a read of a page written back to it waits
/// on that device.
pub(crate) fn ram_device(dev: u64) -> Option<String> {
    let sys: PathBuf = fs::canonicalize(dev_dir(dev)).ok()?;
    let name = sys.file_name()?.to_str()?.to_string();
    let ram = ["zram", "ram", "pmem"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    });
    if !ram {
        return None;
    }
    if name.starts_with("zram") {
        // A partition's attributes are on its parent device.
        let backing = fs::read_to_string(sys.join("backing_dev"))
            .or_else(|_| fs::read_to_string(sys.join("../backing_dev")))
            .unwrap_or_default();
        let backing = backing.trim();
        if !backing.is_empty() && backing != "none" {
            return None;
        }
    }
    Some(name)
}
