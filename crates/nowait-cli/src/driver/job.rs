//! One job on its prepared data (`bench`, `--peak`, the scenarios): the
//! page cache as the job asks (`invalidate`, `fadvise_hint`), its `numjobs`
//! threads each reading the one file with its own offsets, and its
//! [`Outcome`], the threads together.

use crate::base::failure::Failure;
use crate::driver::cache::fadvise_access;
use crate::driver::layout::Data;
use crate::driver::run::{drive, Mode, Thread};
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
    if job.invalidate {
        file.drop_cache()
            .map_err(|e| Failure::Runtime(format!("--invalidate=1: {e}")))?;
    }
    if job.fadvise_hint && mode != Mode::Peak {
        fadvise_access(file, job.rw).map_err(|e| {
            Failure::Runtime(format!("--fadvise_hint=1: posix_fadvise failed: {e}"))
        })?;
    }
    let threads = (0..job.numjobs)
        .map(|t| {
            let reads = Offsets::new(job, data.region, t).ok_or_else(|| {
                Failure::Usage(format!(
                    "--bs={}: the region of {} bytes holds no whole block",
                    job.bs, data.region
                ))
            })?;
            Ok(Thread {
                job,
                files: vec![file],
                reads,
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let d = drive(threads, mode, say)?;
    Ok(Outcome {
        job: job.clone(),
        measured: d.measured,
        threads: d.threads.into_iter().map(|t| t.measured).collect(),
        backend: d.backend,
        path: path_words(file),
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

/// How reads reach the file, in words: `direct (O_DIRECT, 512-byte
/// alignment from statx) on ext4` or `buffered (page cache) on ext4`.
pub fn path_words(file: &nowait::File) -> String {
    if file.is_direct() {
        let a = file.dio_align();
        format!(
            "direct (O_DIRECT, {}-byte alignment from {}) on {}",
            a.offset,
            a.source,
            file.fs()
        )
    } else {
        format!("buffered (page cache) on {}", file.fs())
    }
}
