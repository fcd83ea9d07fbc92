//! From what was given to what runs: the command line and the job files
//! (read by `fio_ini`, fio's syntax) resolved into [`Run`]s — the jobs
//! that run together, one [`Job`] per thread in fio's order — and each
//! job checked against its engine: options an engine does not take are
//! noted and dropped (a sweep does not run the same job twice), and
//! options that would make another workload are refused.
//!
//! The command line as fio reads it: options before the first `--name`
//! are every command-line job's, each `--name` starts a job. With job
//! files, the options before the first `--name` apply on top of every job
//! of the files (so a job file runs with another `--filename` or `--size`
//! unchanged otherwise), and `--name` jobs run after the files' jobs.
//! Comma lists of sweep options run everything once per combination.

use std::path::PathBuf;

use nowait::CachePolicy;

use crate::base::failure::Failure;
use crate::model::defs::priority;
use crate::model::fio_ini::expand::SystemFacts;
use crate::model::fio_ini::{parse_job_files, Context, FsLoader, RawOption, Selection};
use crate::model::group::{assign, GroupOptions};
use crate::model::job::{uses_pool, Job, OwnEngine, Rw, Settings};
use crate::model::parse::{find, unknown, Setting};
use crate::model::sweep::{apply, combinations, Combination};

/// One job as fio reads it (not per thread): for handing the same jobs to
/// fio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioJob {
    /// The section's name.
    pub name: String,
    /// Its options in the order fio reads them (globals first, then its
    /// own, then what the command line put on top); `None`: a bare flag.
    pub options: Vec<(String, Option<String>)>,
}

/// Jobs that run together, as fio runs the jobs of a job file.
#[derive(Debug, Clone)]
pub struct Run {
    /// One job per thread, in fio's thread order (each job, then its
    /// clones), each with its [`Job::member`].
    pub threads: Vec<Job>,
    /// The jobs as fio reads them, in order.
    pub fio_jobs: Vec<FioJob>,
    /// The job files, when fio can read them as they are (nothing on the
    /// command line changes the jobs, no section selected, no
    /// command-line job).
    pub unchanged: Option<Vec<PathBuf>>,
}

/// The defaults of `--peak` (fio's t/io_uring): what the command line or a
/// job file does not set.
pub fn peak_base(name: &str) -> Job {
    Job {
        name: name.into(),
        section: name.into(),
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

/// A raw option of a job file applied to `job`, its errors naming the
/// file, line, option and value.
fn apply_raw(job: &mut Job, run: &mut Settings, o: &RawOption) -> Result<(), String> {
    let opt = find(&o.name).ok_or_else(|| format!("{}: {}", o.at, unknown(&o.name)))?;
    if opt.apply.is_run() {
        return Err(format!(
            "{}: {} is an option of the command line (--{}), not of a job",
            o.at, o.name, opt.name
        ));
    }
    // A bare key is fio's "set" (1) for a flag.
    let value = match (&o.value, opt.arg.is_empty()) {
        (Some(v), _) => v.clone(),
        (None, true) => "1".into(),
        (None, false) => String::new(),
    };
    opt.apply
        .to(job, run, value.as_ref())
        .map_err(|e| format!("{}: {}={}: {e}", o.at, o.name, value))
}

/// The command line's job options split as fio reads them: those before
/// the first `--name` (every job's), then one list per `--name`.
fn split_jobs(cli: &[Setting]) -> (Vec<Setting>, Vec<Vec<Setting>>) {
    let mut global = Vec::new();
    let mut jobs: Vec<Vec<Setting>> = Vec::new();
    for s in cli {
        let run = find(s.name).is_some_and(|o| o.apply.is_run());
        if run {
            continue;
        }
        if s.name == "name" {
            jobs.push(Vec::new());
        }
        match jobs.last_mut() {
            Some(j) => j.push(s.clone()),
            None => global.push(s.clone()),
        }
    }
    (global, jobs)
}

/// The raw settings of the command line as fio options (for fio's copy
/// of the jobs).
fn raw_of(settings: &[Setting], combo: &Combination<'_>) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = settings
        .iter()
        .filter(|s| !combo.iter().any(|(o, _, _)| o.name == s.name))
        .map(|s| {
            (
                s.name.to_string(),
                Some(s.value.to_string_lossy().into_owned()),
            )
        })
        .collect();
    out.extend(
        combo
            .iter()
            .map(|(o, v, _)| (o.name.to_string(), Some(v.to_string_lossy().into_owned()))),
    );
    out
}

/// Resolve the command line and job files into the runs to do, and the
/// invocation's settings.
pub fn runs(cli: &[Setting], files: &[PathBuf]) -> Result<(Vec<Run>, Settings), Failure> {
    let mut settings = Settings::default();
    for s in cli {
        let opt = find(s.name).expect("settings hold known names");
        if opt.apply.is_run() {
            opt.apply
                .to(&mut Job::default(), &mut settings, &s.value)
                .map_err(|e| Failure::Usage(s.err(opt, &s.value, e)))?;
        }
    }
    let (global, cli_jobs) = split_jobs(cli);
    for j in &cli_jobs {
        for s in j {
            let opt = find(s.name).expect("known");
            if opt.sweep && s.values(opt).len() > 1 {
                return Err(Failure::Usage(format!(
                    "{}: a comma list sweeps only before the first --name (it runs every \
                     job once per value); give one value in a job of its own",
                    s.origin
                )));
            }
        }
    }
    let file_jobs = if files.is_empty() {
        Vec::new()
    } else {
        let paths: Vec<&str> = files
            .iter()
            .map(|p| {
                p.to_str().ok_or_else(|| {
                    Failure::Usage(format!(
                        "job file {}: its name is not valid UTF-8; rename it",
                        p.display()
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let var = |n: &str| std::env::var(n).ok();
        let ctx = Context {
            loader: &FsLoader,
            var: &var,
            facts: SystemFacts::this_machine(),
        };
        let sel = Selection {
            sections: settings.sections.clone(),
            exclude: settings.exclude_sections.clone(),
        };
        let jobs =
            parse_job_files(&paths, &sel, &ctx).map_err(|e| Failure::Usage(e.to_string()))?;
        if jobs.is_empty() {
            return Err(Failure::Usage(format!(
                "{}: no job to run (every section was a global one, or none was selected); \
                 add a [job] section",
                files[0].display()
            )));
        }
        jobs
    };
    if !settings.sections.is_empty() && files.is_empty() {
        return Err(Failure::Usage(
            "--section selects jobs of a job file; name one".into(),
        ));
    }
    let base = |name: &str, from_file: bool| {
        if settings.peak {
            peak_base(name)
        } else {
            Job {
                name: name.into(),
                section: name.into(),
                // A job file's default engine is fio's (psync); the
                // command line's is nowait's (uring).
                ioengine: if from_file {
                    nowait::BackendKind::Sync
                } else {
                    Job::default().ioengine
                },
                ..Job::default()
            }
        }
    };
    let unchanged = (global.is_empty()
        && cli_jobs.is_empty()
        && settings.sections.is_empty()
        && settings.exclude_sections.is_empty())
    .then(|| files.to_vec());
    let mut out = Vec::new();
    for combo in combinations(&global) {
        let mut jobs: Vec<(Job, FioJob)> = Vec::new();
        let mut scratch = Settings::default();
        for fj in &file_jobs {
            let mut job = base(&fj.name, true);
            // Global options are read in their section, then the job's own;
            // each in fio's priority order.
            for global_part in [true, false] {
                let mut opts: Vec<&RawOption> = fj
                    .options
                    .iter()
                    .filter(|o| o.global == global_part)
                    .collect();
                opts.sort_by_key(|o| -priority(&o.name));
                for o in opts {
                    // Each `filename=` of a job file adds files to those the
                    // job has: a global section's and the job's own are both
                    // read, as fio reads them (the same name twice is two
                    // files, each given half the size).
                    let had = (find(&o.name).map(|opt| opt.name) == Some("filename"))
                        .then(|| job.filename.take())
                        .flatten();
                    apply_raw(&mut job, &mut scratch, o).map_err(Failure::Usage)?;
                    if let Some(had) = had {
                        job.filename = Some(match job.filename.take() {
                            Some(new) => {
                                let mut both = had.into_os_string();
                                both.push(":");
                                both.push(new);
                                both.into()
                            }
                            None => had,
                        });
                    }
                }
                if global_part {
                    // fio names a job after its section whatever a global
                    // `name` says (get_new_job); its own `name` wins.
                    job.name = fj.name.clone();
                }
            }
            job.stonewall |= fj.file_stonewall;
            apply(&global, &combo, &mut job, &mut scratch).map_err(Failure::Usage)?;
            let mut options: Vec<(String, Option<String>)> = fj
                .options
                .iter()
                .map(|o| (o.name.clone(), o.value.clone()))
                .collect();
            if fj.file_stonewall {
                options.push(("stonewall".into(), None));
            }
            options.extend(raw_of(&global, &combo));
            jobs.push((
                job,
                FioJob {
                    name: fj.name.clone(),
                    options,
                },
            ));
        }
        let lone = file_jobs.is_empty() && cli_jobs.is_empty();
        let own: Vec<&[Setting]> = if lone {
            vec![&[]]
        } else {
            cli_jobs.iter().map(Vec::as_slice).collect()
        };
        for j in own {
            let name = j.first().map_or("nowait".to_string(), |s| {
                s.value.to_string_lossy().into_owned()
            });
            let mut job = base(&name, false);
            apply(&global, &combo, &mut job, &mut scratch).map_err(Failure::Usage)?;
            apply(j, &Vec::new(), &mut job, &mut scratch).map_err(Failure::Usage)?;
            let mut options = raw_of(&global, &combo);
            options.extend(raw_of(j, &Vec::new()));
            options.retain(|(n, _)| n != "name");
            jobs.push((job, FioJob { name, options }));
        }
        let groups: Vec<GroupOptions> = jobs
            .iter()
            .map(|(j, _)| GroupOptions {
                stonewall: j.stonewall,
                new_group: j.new_group,
                group_reporting: j.group_reporting,
                numjobs: j.numjobs as u32,
            })
            .collect();
        let threads = assign(&groups)
            .into_iter()
            .map(|(i, member)| Job {
                member,
                ..jobs[i].0.clone()
            })
            .collect();
        out.push(Run {
            threads,
            fio_jobs: jobs.into_iter().map(|(_, f)| f).collect(),
            unchanged: unchanged.clone(),
        });
    }
    Ok((out, settings))
}

/// Check every run's jobs against their engines: say which engine options
/// a job's engine does not take (never silently) and drop them, so a sweep
/// (`--ioengine uring,pool --nowait off,adaptive`) runs uring once; refuse
/// what would be another workload. Returns the runs to do and the notes to
/// print (each once).
pub fn applicable(runs: Vec<Run>) -> Result<(Vec<Run>, Vec<String>), String> {
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    let mut notes = Vec::new();
    let mut noted: Vec<(&'static str, &'static str)> = Vec::new();
    let mut noted_time_based = false;
    // With a pool job among the runs (a sweep over engines), nowait is the
    // pool's option, noted as not applying to the others.
    let any_pool = runs
        .iter()
        .flat_map(|r| &r.threads)
        .any(|j| uses_pool(j.ioengine) && j.own_engine.is_none());
    for mut run in runs {
        for j in &mut run.threads {
            j.measuring
                .check()
                .map_err(|e| format!("job {}: {e}", j.name))?;
            if !any_pool {
                fio_nowait(j)?;
            }
            own_engine_cache(j)?;
            if j.time_based && j.runtime.is_none() {
                // fio's init.c: "fio: time_based requires a runtime/timeout
                // setting", and it turns time_based off.
                if !noted_time_based {
                    noted_time_based = true;
                    notes.push(
                        "note: time_based without runtime is ignored, as fio ignores it \
                         (\"time_based requires a runtime\"): the job ends after reading \
                         its size; give runtime=TIME to run for a time"
                            .to_string(),
                    );
                }
                j.time_based = false;
            }
            for flag in j.inapplicable() {
                let engine = j.engine_name();
                if !noted.contains(&(flag, engine)) {
                    noted.push((flag, engine));
                    notes.push(format!(
                        "note: {flag} does not apply to ioengine={engine} (not used for \
                         those jobs)"
                    ));
                }
            }
            *j = j.normalized();
        }
        steady_alike(&run.threads)?;
        if !out.iter().any(|r| r.threads == run.threads) {
            out.push(run);
        }
    }
    Ok((out, notes))
}

/// fio requires every job of a reporting group to have the same steady
/// state (`td_steadystate_init`: "steadystate options must be consistent
/// within reporting groups"), with or without it, since a group's steady
/// state is watched and ended as one.
fn steady_alike(threads: &[Job]) -> Result<(), String> {
    let of = |j: &Job| {
        let m = &j.measuring;
        (m.ss_dur > 0).then_some((m.ss, m.ss_dur, m.ss_ramp, m.ss_interval))
    };
    let words = |j: &Job| match of(j) {
        None => "no steady state (ss_dur=0)".to_string(),
        Some((ss, dur, ramp, every)) => format!(
            "ss={}:{}{} ss_dur={dur} ss_ramp={ramp} ss_interval={every}",
            ss.name(),
            ss.limit,
            if ss.pct { "%" } else { "" }
        ),
    };
    for (i, b) in threads.iter().enumerate() {
        let other = threads[..i]
            .iter()
            .find(|a| a.member.group == b.member.group && of(a) != of(b));
        if let Some(a) = other {
            return Err(format!(
                "job {}: steady state differs from job {}'s in the same reporting group \
                 (job {} has {}, job {} has {}); fio rejects the job (\"steadystate options \
                 must be consistent within reporting groups\"): give both the same ss, \
                 ss_dur, ss_ramp and ss_interval, or start a new group with new_group or \
                 stonewall",
                b.name,
                a.name,
                a.name,
                words(a),
                b.name,
                words(b)
            ));
        }
    }
    Ok(())
}

/// fio's `nowait` as the job's engine reads it: RWF_NOWAIT on every read
/// for pvsync2, the pool's mode for the pool, refused with io_uring (where
/// it would be another workload), and only 0 elsewhere.
fn fio_nowait(j: &mut Job) -> Result<(), String> {
    use nowait::NowaitMode::{Adaptive, Always, Off};
    let Some(m) = j.nowait else {
        return Ok(());
    };
    if uses_pool(j.ioengine) && j.own_engine.is_none() {
        return Ok(());
    }
    match (j.own_engine, m) {
        (_, Off) => {
            j.nowait = None;
            Ok(())
        }
        (Some(OwnEngine::Pvsync2), Always) => {
            (j.rwf_nowait, j.nowait) = (true, None);
            Ok(())
        }
        (Some(OwnEngine::Pvsync2), Adaptive) => Err(format!(
            "job {}: nowait=adaptive is the pool engine's mode; with ioengine=pvsync2 \
             nowait=1 sets RWF_NOWAIT on every read (give 1 or 0)",
            j.name
        )),
        (None, _) if j.ioengine == nowait::BackendKind::Uring => Err(uring_nowait(m)),
        _ => Err(format!(
            "job {}: nowait={m} with ioengine={}: RWF_NOWAIT per read is fio's option of \
             pvsync2 and io_uring, and nowait's pool mode of ioengine=pool; this engine \
             has neither (give 0 or drop it)",
            j.name,
            j.engine_name()
        )),
    }
}

/// Why `nowait` with `ioengine=io_uring` is refused: the same words mean
/// another workload in fio.
fn uring_nowait(m: nowait::NowaitMode) -> String {
    format!(
        "nowait={m} with ioengine=io_uring: in fio, nowait=1 is an io_uring option that \
         sets RWF_NOWAIT on every read (a read that would block fails with EAGAIN instead \
         of waiting), and nowait's uring engine sets no per-read flags, so the same job \
         would not be the same workload. Drop nowait (or give 0) to read through io_uring \
         as fio does by default; use ioengine=pvsync2 nowait=1 for RWF_NOWAIT on every \
         read, or ioengine=pool nowait=always|adaptive for nowait's RWF_NOWAIT path"
    )
}

/// fio's engines other than `pvsync2` have no `uncached` option, and none
/// has nowait's adaptive policy: a job through one of them that asks for a
/// cache policy is refused rather than read with the page cache kept.
fn own_engine_cache(j: &Job) -> Result<(), String> {
    let Some(own) = j.own_engine else {
        return Ok(());
    };
    match j.normalized().cache {
        CachePolicy::Keep => Ok(()),
        CachePolicy::Drop if own == OwnEngine::Pvsync2 => Ok(()),
        policy => Err(format!(
            "job {}: cache={policy} with ioengine={}: fio's {} engine has no uncached              reads{}; use ioengine=pvsync2 (preadv2 with RWF_DONTCACHE) or one of nowait's              engines (io_uring, libaio, psync, pool), which take every cache policy",
            j.name,
            j.engine_name(),
            j.engine_name(),
            if policy == CachePolicy::Adaptive { " and no adaptive policy" } else { "" },
        )),
    }
}

#[cfg(test)]
mod tests;
