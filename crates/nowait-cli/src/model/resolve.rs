//! From what was given to what runs: the job files' sections and the
//! command line resolved into jobs (`--peak`'s defaults under both), and
//! the jobs checked against their engines: options an engine does not
//! take are noted and dropped (a sweep does not run the same job twice),
//! and fio's `nowait` on io_uring, which would be another workload, is
//! refused.

use std::path::PathBuf;

use crate::base::failure::Failure;
use crate::model::job::{uses_pool, Job, Rw, Settings};
use crate::model::jobfile;
use crate::model::parse::Setting;
use crate::model::sweep::expand;

/// Say which engine options a job's engine does not take (never silently),
/// and drop the duplicates a sweep makes of them (`--ioengine uring,pool
/// --nowait off,adaptive` runs uring once). `--nowait` turning RWF_NOWAIT
/// on (always, adaptive) on io_uring where no job uses the pool is an
/// error: it is fio's io_uring option (`uring_nowait` says why); `--nowait=0`
/// (off, fio's default) is what nowait's uring engine does. Returns the
/// jobs to run and the notes to print (each once).
pub fn applicable(jobs: Vec<Job>) -> Result<(Vec<Job>, Vec<String>), String> {
    for j in &jobs {
        j.measuring
            .check()
            .map_err(|e| format!("job {}: {e}", j.name))?;
    }
    if !jobs.iter().any(|j| uses_pool(j.ioengine)) {
        if let Some(m) = jobs
            .iter()
            .filter(|j| j.ioengine == nowait::BackendKind::Uring)
            .filter_map(|j| j.nowait)
            .find(|m| *m != nowait::NowaitMode::Off)
        {
            return Err(uring_nowait(m));
        }
    }
    let mut out: Vec<Job> = Vec::with_capacity(jobs.len());
    let mut notes = Vec::new();
    let mut noted: Vec<(&'static str, nowait::BackendKind)> = Vec::new();
    let mut noted_time_based = false;
    for mut j in jobs {
        if j.time_based && j.runtime.is_none() {
            // fio's init.c: "fio: time_based requires a runtime/timeout
            // setting", and it turns time_based off.
            if !noted_time_based {
                noted_time_based = true;
                notes.push(
                    "note: --time_based without --runtime is ignored, as fio ignores it \
                     (\"time_based requires a runtime\"): the job ends after reading the \
                     region once; give --runtime=TIME to run for a time"
                        .to_string(),
                );
            }
            j.time_based = false;
        }
        for flag in j.inapplicable() {
            if !noted.contains(&(flag, j.ioengine)) {
                noted.push((flag, j.ioengine));
                notes.push(format!(
                    "note: {flag} does not apply to ioengine={} (not used for those jobs)",
                    j.ioengine
                ));
            }
        }
        let n = j.normalized();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok((out, notes))
}

/// Why `--nowait` with `ioengine=uring` is refused: the same words mean
/// another workload in fio.
fn uring_nowait(m: nowait::NowaitMode) -> String {
    format!(
        "--nowait={m} with --ioengine=uring: in fio, nowait=1 is an io_uring option that \
         sets RWF_NOWAIT on every read (a read that would block fails with EAGAIN instead \
         of waiting); in nowait, --nowait is the pool engine's mode (off, always, \
         adaptive: try each buffered read inline with preadv2(RWF_NOWAIT) before handing \
         it to a worker thread), and nowait's uring engine has no per-read RWF_NOWAIT, \
         so the same command line would not be the same workload. Drop --nowait (or give \
         --nowait=0) to read through io_uring as fio does by default, or use --ioengine=pool \
         --nowait=always|adaptive for nowait's RWF_NOWAIT path"
    )
}

/// The defaults of `--peak` (fio's t/io_uring): what the command line or a
/// job file does not set.
pub fn peak_base(name: &str) -> Job {
    Job {
        name: name.into(),
        rw: Rw::RandRead,
        iodepth: 128,
        iodepth_batch_submit: 32,
        iodepth_batch_complete_min: 1,
        direct: true,
        fixedbufs: true,
        registerfiles: true,
        submit: nowait::SubmitPolicy::Batch,
        norandommap: true,
        time_based: true,
        runtime: Some(std::time::Duration::from_secs(10)),
        invalidate: false,
        ..Job::default()
    }
}

/// Expand job files and the command line into jobs.
pub fn jobs(cli: &[Setting], files: &[PathBuf]) -> Result<(Vec<Job>, Settings), Failure> {
    let (_, first) = expand(cli, &Job::default()).map_err(Failure::Usage)?;
    let base = |name: &str| {
        if first.peak {
            peak_base(name)
        } else {
            Job {
                name: name.into(),
                ..Job::default()
            }
        }
    };
    if files.is_empty() {
        return expand(cli, &base("nowait")).map_err(Failure::Usage);
    }
    let mut all = Vec::new();
    let mut settings = Settings::default();
    for f in files {
        for section in jobfile::load(f).map_err(Failure::Usage)? {
            let base = base(&section.name);
            let mut set = section.settings.clone();
            set.extend(cli.iter().cloned());
            let (jobs, s) = expand(&set, &base).map_err(Failure::Usage)?;
            settings = s;
            all.extend(jobs);
        }
    }
    Ok((all, settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::args::words;
    use crate::model::parse::parse_args;
    use crate::model::sweep::job_of;

    /// fio turns time_based off without a runtime (init.c), and so does
    /// nowait: the job ends after one pass instead of running for ever.
    #[test]
    fn time_based_without_runtime_is_off_as_in_fio() {
        let j = job_of("--time_based");
        assert!(j.time_based && j.runtime.is_none());
        let (out, notes) = applicable(vec![j]).unwrap();
        assert!(!out[0].time_based);
        assert!(notes[0].contains("--time_based without --runtime is ignored"));
        let j = job_of("--time_based --runtime=2");
        assert!(applicable(vec![j]).unwrap().0[0].time_based);
    }

    /// fio's `nowait=0` is its default (no RWF_NOWAIT): accepted with
    /// io_uring; only the values that turn RWF_NOWAIT on are refused, also
    /// when a sweep lists off first.
    #[test]
    fn nowait_off_with_io_uring_is_fios_default_not_an_error() {
        for off in ["--nowait=0", "--nowait=off"] {
            let j = job_of(&format!("--ioengine=io_uring {off}"));
            let (out, _) = applicable(vec![j]).unwrap();
            assert_eq!(out[0].ioengine, nowait::BackendKind::Uring);
        }
        for on in ["--nowait=1", "--nowait=always", "--nowait=adaptive"] {
            let j = job_of(&format!("--ioengine=io_uring {on}"));
            let e = applicable(vec![j]).unwrap_err();
            assert!(e.contains("RWF_NOWAIT on every read"), "{on}: {e}");
        }
        let (set, _, _) = parse_args(&words("--ioengine=uring --nowait=off,always")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 2);
        assert!(applicable(jobs).unwrap_err().contains("--nowait=always"));
    }
}
