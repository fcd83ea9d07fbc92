//! The benchmark's own data: check where the file goes, lay it out with the
//! verifiable pattern when it does not exist (with a progress bar), and open
//! it the way the job asks, checking `bs` against the O_DIRECT alignment.

use std::path::Path;

use nowait::{Direct, File};

use crate::base::failure::{interrupted, Failure};
use crate::base::flags::say;
use crate::base::progress::Progress;
use crate::base::sys::free_space;
use crate::base::units::human_bytes;
use crate::model::job::Job;

/// The opened file and the region the job reads.
#[derive(Debug)]
pub struct Data {
    /// The open file.
    pub file: File,
    /// Bytes read per pass (a multiple of `bs`).
    pub region: u64,
    /// True if this run laid the file out.
    pub laid_out: bool,
}

/// Lay out `path` with the pattern at `size` bytes (checking directory and
/// free space first). Errors name `filename` or `size`.
pub fn lay_out(path: &Path, size: u64) -> Result<(), Failure> {
    lay_out_until(path, size, &interrupted)
}

/// A file of exactly `size` bytes at `path`: one already there is kept,
/// anything else there is removed and the file laid out anew.
pub fn lay_out_exactly(path: &Path, size: u64) -> Result<(), Failure> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == size) {
        return Ok(());
    }
    let _ = std::fs::remove_file(path);
    lay_out(path, size)
}

/// [`lay_out`], giving up (and removing the partial file) once `stop()`.
fn lay_out_until(path: &Path, size: u64, stop: &dyn Fn() -> bool) -> Result<(), Failure> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "--filename={}: directory {} does not exist; create it or point filename at an existing directory",
            path.display(),
            dir.display()
        )));
    }
    if let Some(free) = free_space(dir) {
        if size > free {
            return Err(Failure::Usage(format!(
                "--size={}: {} is more than the {} free on the filesystem of {}; \
                 lower size or pick a filename on a larger filesystem",
                size,
                human_bytes(size),
                human_bytes(free),
                dir.display()
            )));
        }
    }
    let mut bar = Progress::new(format!(
        "laying out {} ({})",
        path.display(),
        human_bytes(size)
    ));
    let r = write_then_rename(path, dir, size, &mut bar, stop);
    bar.finish();
    r
}

/// Write the pattern to a temporary file in `dir` and rename it to `path`
/// once complete and synced, so that an interrupted or failed layout never
/// leaves a short file under the final name (which a later run without
/// `--size` would read as the whole file). The temporary file is removed on
/// failure and on Ctrl-C.
fn write_then_rename(
    path: &Path,
    dir: &Path,
    size: u64,
    bar: &mut Progress,
    stop: &dyn Fn() -> bool,
) -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let failed = |e: &dyn std::fmt::Display| {
        Failure::Runtime(format!(
            "--filename={}: laying out {} failed: {e}",
            path.display(),
            human_bytes(size)
        ))
    };
    let name = path
        .file_name()
        .map_or("nowait".into(), |n| n.to_string_lossy());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".nowait-layout")
        // As File::create: 0666 less the umask.
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| failed(&e))?;
    let t = std::time::Instant::now();
    let mut chunk = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < size {
        if stop() {
            // `tmp` is removed when dropped.
            return Err(Failure::Interrupted(format!(
                "interrupted (SIGINT) while laying out {} ({} of {} written): the job was \
                 not run, and the partial file was removed",
                path.display(),
                human_bytes(off),
                human_bytes(size)
            )));
        }
        let n = ((size - off) as usize).min(chunk.len());
        nowait::pattern::fill(off, &mut chunk[..n]);
        tmp.write_all(&chunk[..n]).map_err(|e| failed(&e))?;
        off += n as u64;
        let mbs = off as f64 / t.elapsed().as_secs_f64().max(1e-3) / (1 << 20) as f64;
        bar.update(Some(off as f64 / size as f64), &format!("{mbs:.0} MiB/s"));
    }
    tmp.as_file().sync_all().map_err(|e| failed(&e))?;
    tmp.persist(path).map_err(|e| failed(&e.error))?;
    Ok(())
}

/// Make sure the job's file exists (laying it out if not), open it and work
/// out the region. Every error names the option at fault.
pub fn prepare(job: &Job) -> Result<Data, Failure> {
    let path = job.filename.as_deref().ok_or_else(|| {
        Failure::Usage("--filename is required: the file or block device to read (a missing file is laid out at --size)".into())
    })?;
    let mut laid_out = false;
    if !path.exists() {
        let size = match job.size {
            Some(b) => b,
            None => {
                return Err(Failure::Usage(format!(
                    "--filename={}: the file does not exist; give --size to lay it out (e.g. --size=1g)",
                    path.display()
                )))
            }
        };
        lay_out(path, size)?;
        laid_out = true;
    }
    let direct = if job.direct { Direct::On } else { Direct::Off };
    let file = File::open(path, direct).map_err(|e| match e {
        nowait::Error::DirectUnsupported { .. } => {
            Failure::Usage(format!("--direct=1: {}", say(&e)))
        }
        _ => Failure::Runtime(format!("--filename={}: {}", path.display(), say(&e))),
    })?;
    let len = file
        .len()
        .map_err(|e| Failure::Runtime(format!("--filename={}: {}", path.display(), say(&e))))?;
    let size = match job.size {
        Some(s) if s > len => {
            return Err(Failure::Usage(format!(
                "--size={s}: {} is larger than {} ({}); lower size{}",
                human_bytes(s),
                path.display(),
                human_bytes(len),
                relayable(path, &file)
            )))
        }
        Some(s) => s,
        None => len,
    };
    if job.bs > size {
        return Err(Failure::Usage(format!(
            "--bs={}: larger than the region of {} bytes; lower bs or raise size",
            job.bs, size
        )));
    }
    if file.is_direct() {
        let a = file.dio_align().offset as u64;
        if job.bs % a != 0 {
            return Err(Failure::Usage(format!(
                "--bs={}: with --direct=1 the block size must be a multiple of {a} (O_DIRECT alignment of {}, from {}); \
                 try --bs={}",
                job.bs,
                path.display(),
                file.dio_align().source,
                job.bs.div_ceil(a) * a
            )));
        }
    }
    let region = size / job.bs * job.bs;
    Ok(Data {
        file,
        region,
        laid_out,
    })
}

/// The advice to remove a file so that it is laid out anew: only for a
/// regular file of a real filesystem, never a block device or a file of
/// /proc or /sys (whose sizes are no invitation to delete them).
fn relayable(path: &Path, file: &File) -> String {
    const PSEUDO: &[&str] = &[
        "proc",
        "sysfs",
        "debugfs",
        "tracefs",
        "configfs",
        "securityfs",
        "devtmpfs",
    ];
    let regular = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_file());
    if regular && !PSEUDO.contains(&file.fs()) {
        ", or remove the file so it is laid out anew".into()
    } else if regular {
        format!(" (a file of {}, not one nowait laid out)", file.fs())
    } else {
        " (it is not a regular file, so it cannot be laid out anew)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directory_names_filename() {
        let job = Job {
            filename: Some("/nonexistent-dir-nowait/x".into()),
            size: Some(1 << 20),
            ..Job::default()
        };
        match prepare(&job) {
            Err(Failure::Usage(m)) => assert!(m.contains("--filename"), "{m}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn size_beyond_free_space_names_size() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            filename: Some(dir.path().join("big")),
            size: Some(1 << 60),
            ..Job::default()
        };
        match prepare(&job) {
            Err(Failure::Usage(m)) => assert!(m.contains("--size"), "{m}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    /// The layout is written under another name and renamed when complete:
    /// Ctrl-C during it leaves nothing under the final name (and no
    /// temporary file either).
    #[test]
    fn interrupted_layout_leaves_no_file_under_the_final_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let r = lay_out_until(&path, 4 << 20, &|| true);
        match r {
            Err(Failure::Interrupted(m)) => assert!(m.contains("partial file was removed"), "{m}"),
            other => panic!("expected an interruption, got {other:?}"),
        }
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn no_advice_to_remove_a_proc_file() {
        let job = Job {
            filename: Some("/proc/self/status".into()),
            size: Some(1 << 30),
            ..Job::default()
        };
        match prepare(&job) {
            Err(Failure::Usage(m)) => {
                assert!(
                    m.contains("--size") && !m.contains("remove the file"),
                    "{m}"
                )
            }
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn lays_out_a_verifiable_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let job = Job {
            filename: Some(path.clone()),
            size: Some(100_000),
            ..Job::default()
        };
        let d = prepare(&job).unwrap();
        assert!(d.laid_out);
        assert_eq!(d.region, 100_000 / 4096 * 4096);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 100_000);
        nowait::pattern::check(0, &data).unwrap();
    }
}
