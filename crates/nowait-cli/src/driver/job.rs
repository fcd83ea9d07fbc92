//! One job on its prepared data: the page cache as the job asks
//! (`invalidate`, `fadvise_hint`), a seeded offset generator per thread,
//! the drive with the file's block device watched (`disk_util`), and its
//! [`Outcome`].

use crate::base::failure::Failure;
use crate::driver::cache::fadvise_access;
use crate::driver::layout::Data;
use crate::driver::run::{drive, Mode};
use crate::measure::disk::DiskWatch;
use crate::measure::outcome::Outcome;
use crate::model::job::{uses_pool, Job};
use crate::workload::offsets::Offsets;

/// Run one job on prepared data (`--peak`'s loop with `say`).
pub fn run_job(
    job: &Job,
    data: &Data,
    mode: Mode,
    say: Option<&(dyn Fn(String) + Sync)>,
) -> Result<Outcome, Failure> {
    let file = &data.file;
    let blocks = data.region / job.bs;
    if job.invalidate {
        file.drop_cache()
            .map_err(|e| Failure::Runtime(format!("--invalidate=1: {e}")))?;
    }
    if job.fadvise_hint && mode != Mode::Peak {
        fadvise_access(file, job.rw).map_err(|e| {
            Failure::Runtime(format!("--fadvise_hint=1: posix_fadvise failed: {e}"))
        })?;
    }
    let offsets = |tid: usize| {
        let seed = job.randseed.wrapping_add(tid as u64);
        Offsets::new(job.rw, job.norandommap, blocks, job.bs, seed)
    };
    let disks =
        (job.measuring.disk_util && mode != Mode::Peak).then(|| DiskWatch::start([file.path()]));
    let d = drive(job, &[file], blocks, mode, offsets, say)?;
    let disks = disks.map_or_else(Vec::new, DiskWatch::finish);
    let path = if file.is_direct() {
        let a = file.dio_align();
        format!(
            "direct (O_DIRECT, {}-byte alignment from {}) on {}",
            a.offset,
            a.source,
            file.fs()
        )
    } else {
        format!("buffered (page cache) on {}", file.fs())
    };
    Ok(Outcome {
        job: job.clone(),
        measured: d.measured,
        threads: d.threads,
        disks,
        backend: d.backend,
        path,
        effective_iodepth: job.effective_iodepth(),
        region: data.region,
        laid_out: data.laid_out,
        verified_ios: d.verified,
        nowait_path: uses_pool(job.ioengine).then(|| file.nowait_state()),
        seconds: d.seconds,
        interrupted: d.interrupted,
    })
}

/// Run one job on prepared data, measuring every read.
pub fn run_prepared(job: &Job, data: &Data) -> Result<Outcome, Failure> {
    run_job(job, data, Mode::Measure, None)
}
