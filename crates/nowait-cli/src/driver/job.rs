//! One job on its prepared data (`--peak`, the scenarios): the page cache
//! as the job asks (`invalidate`, `fadvise_hint`), its `numjobs` threads
//! (fio's clones: thread numbers, seeds) each reading the one file with
//! fio's offsets, the drive with the file's block device watched
//! (`disk_util`), and its [`Outcome`], the threads together.

use crate::base::failure::Failure;
use crate::driver::cache::fadvise_access;
use crate::driver::layout::Data;
use crate::driver::run::{drive, Mode, Thread};
use crate::driver::schedule::{entropy, path_words};
use crate::measure::disk::DiskWatch;
use crate::measure::outcome::Outcome;
use crate::model::group::{assign, GroupOptions};
use crate::model::job::{uses_pool, Job, OwnEngine};
use crate::workload::fio_job::{self, FioReads, JobFile};
use crate::workload::fio_offsets::FileGeometry;

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
    let len = file
        .len()
        .map_err(|e| Failure::Runtime(format!("--filename={}: {e}", file.path().display())))?;
    let jf = JobFile {
        name: file.path().to_path_buf(),
        geometry: FileGeometry {
            real_file_size: len,
            file_offset: 0,
            io_size: data.region,
        },
    };
    let disks =
        (job.measuring.disk_util && mode != Mode::Peak).then(|| DiskWatch::start([file.path()]));
    let clones = assign(&[GroupOptions {
        numjobs: job.numjobs as u32,
        ..GroupOptions::default()
    }]);
    let jobs: Vec<Job> = clones
        .into_iter()
        .map(|(_, member)| Job {
            member,
            ..job.clone()
        })
        .collect();
    // fio's sync engine moves the file position: each thread its own descriptor.
    let own: Vec<nowait::File> = if job.own_engine == Some(OwnEngine::Sync) {
        jobs.iter()
            .map(|j| crate::driver::engine::open_for(j, file.path()))
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::Runtime(format!("--filename: {e}")))?
    } else {
        Vec::new()
    };
    let mut threads = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let seeds = fio_job::seeds(j, entropy);
        let pacing = fio_job::pacing(j, &seeds).map_err(Failure::Usage)?;
        let reads =
            FioReads::new(j, std::slice::from_ref(&jf), seeds, pacing).map_err(Failure::Usage)?;
        let f = own.get(i).unwrap_or(file);
        threads.push(Thread {
            job: j,
            files: if j.own_engine == Some(OwnEngine::Null) {
                Vec::new()
            } else {
                vec![f]
            },
            reads,
            delay: std::time::Duration::ZERO,
            flow: None,
        });
    }
    let d = drive(threads, mode, say)?;
    let disks = disks.map_or_else(Vec::new, DiskWatch::finish);
    Ok(Outcome {
        job: job.clone(),
        measured: d.measured,
        threads: d.threads.into_iter().map(|t| t.measured).collect(),
        disks,
        backend: d.backend,
        path: path_words(job, Some(file)),
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
