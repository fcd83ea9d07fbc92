//! The statistics of the block devices a job's files are on, as fio's
//! `diskutil.c` reads them: the device of each file (`stat(2)`'s device,
//! or the device itself for a block special file), the whole disk for a
//! partition, the devices under a device-mapper or md device (`slaves/`),
//! and `/sys/block/DEV/stat` read before and after the run. Files on
//! filesystems without a block device (tmpfs) have none, as in fio.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One device's counters over a run (fio's `disk_util_stat`): index 0
/// reads, 1 writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskStat {
    /// The device's name (`sda`, `nvme0n1`, `dm-0`).
    pub name: String,
    /// I/Os completed.
    pub ios: [u64; 2],
    /// I/Os merged.
    pub merges: [u64; 2],
    /// 512-byte sectors transferred.
    pub sectors: [u64; 2],
    /// Milliseconds spent on I/O.
    pub ticks: [u64; 2],
    /// Milliseconds the device was busy.
    pub io_ticks: u64,
    /// Weighted milliseconds in queue.
    pub time_in_queue: u64,
    /// Milliseconds the counters span.
    pub msec: u64,
    /// The devices under it, by name (device-mapper, md).
    pub slaves: Vec<String>,
}

impl DiskStat {
    /// Busy share of the time, percent (fio's `util`, at most 100).
    pub fn util(&self) -> f64 {
        if self.msec == 0 {
            return 0.0;
        }
        (100.0 * self.io_ticks as f64 / self.msec as f64).min(100.0)
    }

    /// Add another run's counters of the same device.
    pub fn add(&mut self, o: &DiskStat) {
        for i in 0..2 {
            self.ios[i] += o.ios[i];
            self.merges[i] += o.merges[i];
            self.sectors[i] += o.sectors[i];
            self.ticks[i] += o.ticks[i];
        }
        self.io_ticks += o.io_ticks;
        self.time_in_queue += o.time_in_queue;
        self.msec += o.msec;
    }
}

/// The counters of `/sys/block/DEV/stat` (fio reads the first 11 fields).
fn read_stat(path: &Path) -> Option<[u64; 10]> {
    let text = std::fs::read_to_string(path).ok()?;
    let f: Vec<u64> = text
        .split_whitespace()
        .take(11)
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    if f.len() < 11 {
        return None;
    }
    // reads: ios merges sectors ticks; writes: the same; in flight (skipped);
    // io_ticks; time_in_queue.
    Some([f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[9], f[10]])
}

/// fio's `safe_32bit_diff`: the kernel prints some counters as 32-bit
/// values that may wrap once between reads.
fn diff32(new: u64, old: u64) -> u64 {
    if old <= new || old >= 1 << 32 {
        new.wrapping_sub(old)
    } else {
        (1 << 32) + new - old
    }
}

/// The sysfs directory of the device a file is on, the whole disk for a
/// partition; `None` without a block device.
fn device_dir(file: &Path) -> Option<PathBuf> {
    let md = std::fs::metadata(file).ok()?;
    let dev = if md.file_type().is_block_device() {
        md.rdev()
    } else {
        md.dev()
    };
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if dir.join("partition").exists() {
        return dir.parent().map(Path::to_path_buf);
    }
    Some(dir)
}

struct Watched {
    name: String,
    stat: PathBuf,
    start: [u64; 10],
    slaves: Vec<String>,
}

/// The devices of a run's files, read at the start.
pub struct DiskWatch {
    disks: Vec<Watched>,
    t0: Instant,
}

impl DiskWatch {
    /// Read the devices of `files` (each once; with the devices under
    /// them) now.
    pub fn start<'a>(files: impl IntoIterator<Item = &'a Path>) -> DiskWatch {
        let mut disks: Vec<Watched> = Vec::new();
        let add = |dir: &Path, disks: &mut Vec<Watched>| -> Option<String> {
            let name = dir.file_name()?.to_string_lossy().into_owned();
            if !disks.iter().any(|d| d.name == name) {
                let stat = dir.join("stat");
                let start = read_stat(&stat)?;
                disks.push(Watched {
                    name: name.clone(),
                    stat,
                    start,
                    slaves: Vec::new(),
                });
            }
            Some(name)
        };
        for f in files {
            let Some(dir) = device_dir(f) else { continue };
            let Some(name) = add(&dir, &mut disks) else {
                continue;
            };
            let mut slaves = Vec::new();
            if let Ok(rd) = std::fs::read_dir(dir.join("slaves")) {
                for e in rd.flatten() {
                    if let Ok(sdir) = std::fs::canonicalize(e.path()) {
                        let sdir = match sdir.join("partition").exists() {
                            true => sdir.parent().map(Path::to_path_buf).unwrap_or(sdir),
                            false => sdir,
                        };
                        slaves.extend(add(&sdir, &mut disks));
                    }
                }
            }
            if let Some(d) = disks.iter_mut().find(|d| d.name == name) {
                d.slaves = slaves;
            }
        }
        DiskWatch {
            disks,
            t0: Instant::now(),
        }
    }

    /// The counters since the start.
    pub fn finish(self) -> Vec<DiskStat> {
        let msec = self.t0.elapsed().as_millis() as u64;
        self.disks
            .into_iter()
            .filter_map(|d| {
                let now = read_stat(&d.stat)?;
                let s = &d.start;
                Some(DiskStat {
                    name: d.name,
                    ios: [now[0].wrapping_sub(s[0]), now[4].wrapping_sub(s[4])],
                    merges: [now[1].wrapping_sub(s[1]), now[5].wrapping_sub(s[5])],
                    sectors: [now[2].wrapping_sub(s[2]), now[6].wrapping_sub(s[6])],
                    ticks: [diff32(now[3], s[3]), diff32(now[7], s[7])],
                    io_ticks: diff32(now[8], s[8]),
                    time_in_queue: diff32(now[9], s[9]),
                    msec,
                    slaves: d.slaves,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_and_wraps() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("stat");
        std::fs::write(&p, "  10 1 80 5 20 2 160 7 0 12 13 0 0 0 0\n").unwrap();
        assert_eq!(read_stat(&p), Some([10, 1, 80, 5, 20, 2, 160, 7, 12, 13]));
        std::fs::write(&p, "1 2 3\n").unwrap();
        assert_eq!(read_stat(&p), None);
        assert_eq!(diff32(5, (1 << 32) - 5), 10);
        assert_eq!(diff32(20, 5), 15);
    }

    /// tmpfs has no block device: no statistics, as in fio.
    #[test]
    fn a_file_without_a_device_has_none() {
        let w = DiskWatch::start([Path::new("/proc/self/stat")]);
        assert!(w.finish().is_empty());
    }

    #[test]
    fn util_is_capped() {
        let s = DiskStat {
            io_ticks: 150,
            msec: 100,
            ..DiskStat::default()
        };
        assert_eq!(s.util(), 100.0);
    }
}
