//! fio's command line for the job nowait runs.
//!
//! Every option that changes what is measured is passed explicitly (the
//! defaults of `nowait bench` are fio's, but a job may set nowait's own
//! modes, such as `iodepth_batch_submit=0`), with fio's `--thread` so both
//! sides use threads, and `--group_reporting` so several `numjobs` come
//! back as one entry. The log options are not passed: fio's logs would
//! have the same names as nowait's and overwrite them.

use nowait::CachePolicy;

use crate::model::job::Job;
use crate::model::parse::find;
use crate::model::resolve::Run;

/// fio's name for a job's engine, if fio has one (not nowait's `pool`
/// and `aio+pool`): nowait's `sync` is fio's `psync`, or `pvsync2` for
/// uncached reads (fio's `uncached` is an option of its `pvsync2` and
/// `io_uring` engines only; both read with one system call per read at
/// depth 1).
pub fn engine(job: &Job) -> Option<&'static str> {
    match job.engine_name() {
        "pool" | "aio+pool" => None,
        "psync" if job.own_engine.is_none() && job.normalized().cache == CachePolicy::Drop => {
            Some("pvsync2")
        }
        e => Some(e),
    }
}

/// The job's options under fio's names as nowait runs them (`None`: not
/// set): the JSON's `job options`, and fio's command line (those fio has).
pub fn job_options(j: &Job, region: u64) -> Vec<(&'static str, Option<String>)> {
    let n = j.normalized();
    let ms = |d: std::time::Duration| Some(format!("{}ms", d.as_millis()));
    let b = |x: bool| Some(u8::from(x).to_string());
    let s = |x: &dyn ToString| Some(x.to_string());
    vec![
        ("name", s(&j.name)),
        (
            "filename",
            // As given: fio's ':' between files, '\:' in a name.
            j.filename.as_ref().map(|p| p.display().to_string()),
        ),
        ("size", s(&region)),
        ("rw", s(&j.rw.as_str())),
        ("bs", s(&j.bs)),
        ("ioengine", s(&j.engine_name())),
        ("iodepth", s(&j.iodepth)),
        ("direct", b(j.direct)),
        ("runtime", j.runtime.and_then(ms)),
        ("time_based", b(j.time_based)),
        ("number_ios", j.number_ios.map(|n| n.to_string())),
        ("ramp_time", ms(j.ramp_time)),
        ("norandommap", b(j.norandommap)),
        ("randseed", j.randseed_set.then(|| j.randseed.to_string())),
        ("invalidate", b(j.invalidate)),
        ("numjobs", s(&j.numjobs)),
        ("iodepth_batch_submit", s(&j.iodepth_batch_submit)),
        (
            "iodepth_batch_complete_min",
            s(&j.iodepth_batch_complete_min),
        ),
        ("verify", b(j.verify)),
        ("fadvise_hint", b(j.fadvise_hint)),
        (
            "nowait",
            if n.rwf_nowait {
                Some("1".into())
            } else {
                n.nowait.map(|m| m.to_string())
            },
        ),
        ("pool_workers", n.pool_workers.map(|n| n.to_string())),
        ("sqthread_poll", b(n.sqthread_poll)),
        ("sqthread_poll_idle", ms(j.sqthread_poll_idle)),
        ("fixedbufs", b(j.fixedbufs)),
        ("registerfiles", b(j.registerfiles)),
        ("hipri", n.hipri.and_then(b)),
        ("spin_us", s(&n.spin_us)),
        ("cache", s(&n.cache)),
        // fio's RWF_DONTCACHE on every buffered read; given only when set,
        // since only two of fio's engines know the option.
        (
            "uncached",
            (n.cache == CachePolicy::Drop).then(|| "1".into()),
        ),
    ]
    .into_iter()
    .chain(measuring_options(j))
    .collect()
}

/// The measuring and reporting options that differ from fio's defaults
/// (only those: the others are fio's defaults on both sides).
fn measuring_options(j: &Job) -> Vec<(&'static str, Option<String>)> {
    let m = &j.measuring;
    let d = crate::model::measuring::Measuring::default();
    let on = |x: bool| x.then(|| "1".to_string());
    let set = |x: bool, v: String| x.then_some(v);
    vec![
        ("gtod_reduce", on(m.gtod_reduce)),
        ("disable_lat", on(m.disable_lat && !m.gtod_reduce)),
        ("disable_clat", on(m.disable_clat && !m.gtod_reduce)),
        ("disable_slat", on(m.disable_slat && !m.gtod_reduce)),
        ("disable_bw_measurement", on(m.disable_bw && !m.gtod_reduce)),
        (
            "clat_percentiles",
            set(m.clat_percentiles != d.clat_percentiles, "0".into()),
        ),
        ("lat_percentiles", on(m.lat_percentiles)),
        ("slat_percentiles", on(m.slat_percentiles)),
        (
            "percentile_list",
            set(
                m.percentiles != d.percentiles,
                m.percentiles
                    .list
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(":"),
            ),
        ),
        ("group_reporting", on(j.member.group_reporting)),
        ("write_lat_log", m.lat_log.clone()),
        ("write_bw_log", m.bw_log.clone()),
        ("write_iops_log", m.iops_log.clone()),
        ("write_hist_log", m.hist_log.clone()),
        (
            "log_hist_msec",
            set(m.log_hist_msec != 0, m.log_hist_msec.to_string()),
        ),
        (
            "log_avg_msec",
            set(m.log_avg_msec != 0, m.log_avg_msec.to_string()),
        ),
        ("log_offset", on(m.log_offset)),
        ("per_job_logs", set(!m.per_job_logs, "0".into())),
        (
            "steadystate",
            set(
                m.ss_dur > 0,
                format!(
                    "{}:{}{}",
                    m.ss.name(),
                    m.ss.limit,
                    if m.ss.pct { "%" } else { "" }
                ),
            ),
        ),
        (
            "steadystate_duration",
            set(m.ss_dur > 0, format!("{}s", m.ss_dur)),
        ),
        (
            "steadystate_ramp_time",
            set(m.ss_dur > 0 && m.ss_ramp > 0, format!("{}s", m.ss_ramp)),
        ),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_some())
    .collect()
}

/// fio's command line for `job` over `region` bytes of its file: its
/// [`job_options`] that fio has, at the depth and batches nowait really used.
pub fn args(job: &Job, region: u64) -> Result<Vec<String>, String> {
    let engine = engine(job).ok_or_else(|| {
        format!(
            "fio has no engine equivalent to nowait's {}; nothing to compare",
            job.ioengine
        )
    })?;
    job.filename.as_ref().ok_or("--filename is required")?;
    match job.normalized().cache {
        CachePolicy::Adaptive => {
            return Err(
                "fio has no adaptive cache policy (--cache=adaptive); compare \
                        --cache=keep or --cache=drop (fio's uncached=0 or 1)"
                    .into(),
            )
        }
        CachePolicy::Drop if engine == "libaio" => {
            return Err(
                "fio's libaio engine has no uncached option (only io_uring and \
                        pvsync2 have it); compare --cache=drop with --ioengine=uring or sync"
                    .into(),
            )
        }
        _ => {}
    }
    let depth = job.effective_iodepth();
    let mut a: Vec<String> = job_options(job, region)
        .into_iter()
        .filter_map(|(k, v)| {
            let v = match k {
                "ioengine" => engine.to_string(),
                "iodepth" => depth.to_string(),
                "iodepth_batch_submit" => match job.iodepth_batch_submit {
                    0 => depth,
                    n => n.min(depth),
                }
                .to_string(),
                "iodepth_batch_complete_min" => {
                    job.iodepth_batch_complete_min.min(depth).to_string()
                }
                // nowait's own (fio's verify takes a checksum type, not the pattern).
                "verify" | "pool_workers" | "sqthread_poll_idle" | "spin_us" | "cache" => {
                    return None
                }
                "nowait" if !job.rwf_nowait => return None,
                // fio's logs would overwrite nowait's, which have the same
                // names; `--group_reporting` is always given below.
                "write_lat_log" | "write_bw_log" | "write_iops_log" | "write_hist_log"
                | "log_hist_msec" | "log_avg_msec" | "log_offset" | "per_job_logs"
                | "group_reporting" => return None,
                "sqthread_poll" | "fixedbufs" | "registerfiles" | "hipri"
                    if engine != "io_uring" =>
                {
                    return None
                }
                _ => v?,
            };
            Some(format!("--{k}={v}"))
        })
        .collect();
    a.extend(["--thread", "--group_reporting"].map(String::from));
    // lat_percentiles: fio's lat (from before the submission) is what
    // nowait's clat matches at iodepth 1; statistics only. Only there: fio
    // older than 3.18 then turns clat's percentiles off (init.c), which
    // the comparison uses at any other depth.
    if job.clat_matches_fio_lat() {
        a.push("--lat_percentiles=1".into());
    }
    a.push("--output-format=json".into());
    Ok(a)
}

/// nowait's own options, which fio does not have: left out of fio's copy
/// of a job (`nowait` too, unless it is fio's `pvsync2` flag).
const NOWAIT_ONLY: [&str; 9] = [
    "pool_workers",
    "small_direct",
    "spin_us",
    "memory_inline",
    "inline_window",
    "submit",
    "sqthread_poll_idle",
    "verify",
    "exclude-section",
];

/// How fio runs the same jobs as a [`Run`]: its arguments (the job files
/// as given, or one written for it), and the job file written, if any
/// (removed when dropped).
#[derive(Debug)]
pub struct FioCommand {
    /// fio's arguments.
    pub args: Vec<String>,
    /// The job file written for fio, kept until fio has run.
    pub job_file: Option<tempfile::NamedTempFile>,
    /// Its text, to show what fio ran.
    pub text: Option<String>,
}

/// The job file that gives fio the jobs of `run`: each job's options as
/// fio reads them (globals, its own, the command line's on top), with
/// nowait's own options left out and the engine fio's name of the one
/// nowait runs. Errors say what fio cannot run the same way.
pub fn job_file_text(run: &Run) -> Result<String, String> {
    let mut text = String::from("; written by nowait bench --compare-fio: the same jobs for fio\n");
    let heads = run.threads.iter().filter(|t| t.member.clone == 0);
    for (fj, job) in run.fio_jobs.iter().zip(heads) {
        let engine = engine(job).ok_or_else(|| {
            format!(
                "job {}: fio has no engine like nowait's {}; nothing to compare",
                job.name,
                job.engine_name()
            )
        })?;
        text.push_str(&format!("[{}]\n", fj.name));
        for (name, value) in &fj.options {
            let canonical = find(name).map_or(name.as_str(), |o| o.name);
            if NOWAIT_ONLY.contains(&canonical) || canonical == "ioengine" {
                continue;
            }
            if canonical == "nowait" && !job.rwf_nowait {
                continue;
            }
            let value = match (canonical, value.as_deref()) {
                ("hipri", Some("auto")) => continue,
                ("nowait", Some(_)) => Some("1"),
                (_, v) => v,
            };
            match value {
                Some(v) => text.push_str(&format!("{name}={v}\n")),
                None => text.push_str(&format!("{name}\n")),
            }
        }
        text.push_str(&format!("ioengine={engine}\n"));
    }
    Ok(text)
}

/// fio's command for the jobs of `run`: the job files unchanged when
/// nothing changes them, else a job file written for fio; threads (as
/// nowait's jobs are), JSON output, and fio's lat percentiles where a
/// job's clat is compared with fio's lat.
pub fn run_command(run: &Run) -> Result<FioCommand, String> {
    let mut args = vec!["--thread".to_string(), "--output-format=json".to_string()];
    if run.threads.iter().any(Job::clat_matches_fio_lat) {
        args.push("--lat_percentiles=1".into());
    }
    // A job file is needed unless the files are as fio reads them (a job
    // file's default engine is fio's in nowait too).
    let nowait_only = run
        .fio_jobs
        .iter()
        .flat_map(|fj| &fj.options)
        .any(|(n, _)| find(n).is_some_and(|o| NOWAIT_ONLY.contains(&o.name)));
    if let (Some(files), false) = (&run.unchanged, nowait_only) {
        // Every engine must be one fio has.
        for t in &run.threads {
            engine(t).ok_or_else(|| {
                format!(
                    "job {}: fio has no engine like nowait's {}; nothing to compare",
                    t.name,
                    t.engine_name()
                )
            })?;
        }
        args.extend(files.iter().map(|f| f.display().to_string()));
        return Ok(FioCommand {
            args,
            job_file: None,
            text: None,
        });
    }
    let text = job_file_text(run)?;
    let mut f = tempfile::Builder::new()
        .prefix("nowait-fio-")
        .suffix(".fio")
        .tempfile()
        .map_err(|e| format!("cannot write fio's job file: {e}"))?;
    std::io::Write::write_all(&mut f, text.as_bytes())
        .map_err(|e| format!("cannot write fio's job file: {e}"))?;
    args.push(f.path().display().to_string());
    Ok(FioCommand {
        args,
        job_file: Some(f),
        text: Some(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sweep::job_of as job;

    #[test]
    fn passes_every_measuring_option() {
        let j = job(
            "--filename=/d/f --rw=randread --bs=4k --iodepth=32 --ioengine=uring --direct=1 \
             --runtime=2 --time_based --randseed=89 --norandommap --invalidate=0 --numjobs=2 \
             --iodepth_batch_submit=8 --iodepth_batch_complete_min=4 --number_ios=1000 --ramp_time=1",
        );
        let a = args(&j, 1 << 30).unwrap().join(" ");
        for want in [
            "--filename=/d/f",
            "--size=1073741824",
            "--rw=randread",
            "--bs=4096",
            "--ioengine=io_uring",
            "--iodepth=32",
            "--direct=1",
            "--invalidate=0",
            "--randseed=89",
            "--numjobs=2",
            "--iodepth_batch_submit=8",
            "--iodepth_batch_complete_min=4",
            "--runtime=2000ms",
            "--time_based",
            "--number_ios=1000",
            "--ramp_time=1000ms",
            "--norandommap",
            "--fadvise_hint=1",
            "--output-format=json",
        ] {
            assert!(a.contains(want), "missing {want} in {a}");
        }
    }

    #[test]
    fn passes_io_uring_options_under_fio_names() {
        let a = args(
            &job("--filename=/f --ioengine=uring --direct=1 --sqthread_poll --fixedbufs --hipri"),
            4096,
        )
        .unwrap()
        .join(" ");
        for want in [
            "--sqthread_poll=1",
            "--fixedbufs=1",
            "--hipri=1",
            "--registerfiles=0",
        ] {
            assert!(a.contains(want), "missing {want} in {a}");
        }
        let a = args(&job("--filename=/f --ioengine=aio --direct=1"), 4096)
            .unwrap()
            .join(" ");
        assert!(!a.contains("registerfiles"), "{a}");
    }

    #[test]
    fn sync_maps_to_psync_at_depth_one() {
        let a = args(&job("--filename=/f --ioengine=psync --iodepth=32"), 4096)
            .unwrap()
            .join(" ");
        assert!(
            a.contains("--ioengine=psync") && a.contains("--iodepth=1 "),
            "{a}"
        );
    }

    /// --cache=drop (fio's uncached=1) is passed as fio's uncached=1, on
    /// the two engines of fio that have it; adaptive, and drop on libaio,
    /// have nothing to compare with; direct reads ignore it, as fio does.
    #[test]
    fn uncached_reads_pass_fios_uncached() {
        let a = |cmd: &str| args(&job(cmd), 4096).map(|a| a.join(" "));
        let u = a("--filename=/f --ioengine=uring --iodepth=4 --uncached=1").unwrap();
        assert!(
            u.contains("--ioengine=io_uring") && u.contains("--uncached=1"),
            "{u}"
        );
        assert_eq!(job("--uncached=1").cache, CachePolicy::Drop);
        assert_eq!(job("--uncached=7 --cache=keep").cache, CachePolicy::Keep);
        let s = a("--filename=/f --ioengine=psync --cache=drop").unwrap();
        assert!(
            s.contains("--ioengine=pvsync2") && s.contains("--uncached=1"),
            "{s}"
        );
        let k = a("--filename=/f --ioengine=psync --uncached=0").unwrap();
        assert!(
            k.contains("--ioengine=psync") && !k.contains("uncached"),
            "{k}"
        );
        let d = a("--filename=/f --ioengine=uring --direct=1 --uncached=1").unwrap();
        assert!(!d.contains("uncached"), "{d}");
        let e = a("--filename=/f --ioengine=uring --cache=adaptive").unwrap_err();
        assert!(e.contains("--cache=adaptive"), "{e}");
        let e = a("--filename=/f --ioengine=aio --uncached=1").unwrap_err();
        assert!(e.contains("libaio") && e.contains("uncached"), "{e}");
        assert!(a("--filename=/f --ioengine=aio --direct=1 --uncached=1").is_ok());
    }

    /// fio before 3.18 turns clat percentiles off when lat_percentiles=1 is
    /// set (init.c), so fio gets it only at iodepth 1, where its lat is
    /// compared (`fio/run.rs` reads what such a fio prints).
    #[test]
    fn lat_percentiles_only_where_fios_lat_is_compared() {
        let has = |cmd: &str| {
            args(&job(cmd), 4096)
                .unwrap()
                .contains(&"--lat_percentiles=1".to_string())
        };
        assert!(has("--filename=/f --ioengine=uring"));
        assert!(has("--filename=/f --ioengine=aio --iodepth=1"));
        assert!(!has("--filename=/f --ioengine=uring --iodepth=8"));
        assert!(!has("--filename=/f --ioengine=aio --iodepth=32"));
        assert!(!has("--filename=/f --ioengine=sync"));
    }

    /// Measuring options go to fio; log options do not (fio's logs would
    /// overwrite nowait's, named the same).
    #[test]
    fn measuring_options_go_to_fio_logs_do_not() {
        let a = args(
            &job(
                "--filename=/f --iodepth=8 --gtod_reduce --percentile_list=50:99.9 \
                  --write_lat_log=x --log_avg_msec=10 --ss=bw:5% --ss_dur=4",
            ),
            4096,
        )
        .unwrap()
        .join(" ");
        for want in [
            "--gtod_reduce=1",
            "--percentile_list=50:99.9",
            "--steadystate=bw:5%",
            "--steadystate_duration=4s",
        ] {
            assert!(a.contains(want), "missing {want} in {a}");
        }
        assert!(
            !a.contains("write_lat_log") && !a.contains("log_avg_msec"),
            "{a}"
        );
        assert!(!a.contains("disable_clat"), "gtod_reduce says it: {a}");
    }

    /// A colon of a file's name (`\:` on nowait's command line) is handed
    /// to fio escaped again.
    #[test]
    fn filename_colons_are_escaped_for_fio() {
        let a = args(&job(r"--filename=/tmp/a\:b"), 4096).unwrap();
        assert!(a.iter().any(|x| x == r"--filename=/tmp/a\:b"), "{a:?}");
    }
}
