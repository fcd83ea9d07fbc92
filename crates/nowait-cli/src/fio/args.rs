//! Running fio with the job nowait just ran, and reading its JSON output.
//!
//! Every option that changes what is measured is passed explicitly (the
//! defaults of `nowait bench` are fio's, but a job may set nowait's own
//! modes, such as `iodepth_batch_submit=0`), with fio's `--thread` so both
//! sides use threads, and `--group_reporting` so several `numjobs` come
//! back as one entry.

use std::process::Command;

use crate::model::defs::Job;

/// What fio measured, in the fields nowait compares.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FioResult {
    /// `jobs[0].read.iops`.
    pub iops: f64,
    /// `jobs[0].read.bw_bytes`.
    pub bw_bytes: f64,
    /// `jobs[0].read.clat_ns.mean`.
    pub clat_mean_ns: f64,
    /// `jobs[0].read.clat_ns.percentile["50.000000"]` (`None`: fio printed
    /// no clat percentiles).
    pub clat_p50_ns: Option<u64>,
    /// `jobs[0].read.clat_ns.percentile["99.000000"]`.
    pub clat_p99_ns: Option<u64>,
    /// `jobs[0].read.lat_ns.percentile["50.000000"]` (fio is run with
    /// `lat_percentiles=1` where it is compared, at iodepth 1): from before
    /// the submission, as nowait's clat at iodepth 1. `None`: fio printed
    /// no lat percentiles.
    #[serde(default)]
    pub lat_p50_ns: Option<u64>,
    /// `jobs[0].read.lat_ns.percentile["99.000000"]`.
    #[serde(default)]
    pub lat_p99_ns: Option<u64>,
    /// `jobs[0].usr_cpu`.
    pub usr_cpu: f64,
    /// `jobs[0].sys_cpu`.
    pub sys_cpu: f64,
    /// `jobs[0].ctx`.
    pub ctx: u64,
    /// `jobs[0].read.runtime`, milliseconds.
    pub runtime_ms: u64,
    /// The command that was run.
    pub command: String,
}

impl FioResult {
    /// fio's percentile `p` (50 or 99) that matches nowait's clat: its lat
    /// where nowait's reads rode on the reap's call (`rode`, iodepth 1:
    /// clat from before the submission), else its clat. With the column's
    /// name, `clat` or `lat`. `None`: fio's JSON has no such percentile
    /// (never read as 0).
    pub fn like_clat(&self, p: u8, rode: bool) -> (Option<u64>, &'static str) {
        match (rode, p) {
            (true, 50) => (self.lat_p50_ns, "lat"),
            (true, _) => (self.lat_p99_ns, "lat"),
            (false, 50) => (self.clat_p50_ns, "clat"),
            (false, _) => (self.clat_p99_ns, "clat"),
        }
    }

    /// Why the percentiles nowait's clat is compared with are missing
    /// from fio's JSON, if they are (shown as "–", never as 0).
    pub fn missing_percentiles(&self, rode: bool) -> Option<String> {
        let (p50, what) = self.like_clat(50, rode);
        if p50.is_some() && self.like_clat(99, rode).0.is_some() {
            return None;
        }
        Some(format!(
            "fio's JSON has no {what} percentiles (jobs[0].read.{what}_ns.percentile), \
             so fio's {what} p50/p99 are not compared (\"–\"); fio older than 3.18 prints \
             percentiles of either clat or lat (lat_percentiles=1 turns clat's off), and \
             clat_percentiles=0 or disable_{what}=1 in a job file turn them off"
        ))
    }
}

/// fio's lat, not its clat, is what nowait's clat matches: at iodepth 1 the
/// reap's system call submits the read and waits for it (every engine but
/// `sync`, whose pread is timed as psync's clat).
pub fn compares_lat(job: &Job) -> bool {
    job.effective_iodepth() == 1 && job.ioengine != nowait::BackendKind::Sync
}

/// fio's name for a nowait engine, if fio has one.
pub fn engine(job: &Job) -> Option<&'static str> {
    match job.ioengine.as_str() {
        "uring" => Some("io_uring"),
        "sync" => Some("psync"),
        "aio" => Some("libaio"),
        _ => None,
    }
}

/// fio's version, or how to install it.
pub fn version() -> Result<String, String> {
    match Command::new("fio").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!(
            "--compare-fio: `fio --version` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(_) => Err("--compare-fio: fio is not installed; install it with \
                       `apt-get install fio` (Debian/Ubuntu), `dnf install fio` (Fedora/RHEL) \
                       or `pacman -S fio` (Arch), or run without --compare-fio"
            .into()),
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
            // fio splits at ':'; a colon of the name is written '\:'.
            j.filename
                .as_ref()
                .map(|p| p.display().to_string().replace(':', "\\:")),
        ),
        ("size", s(&region)),
        ("rw", s(&j.rw.as_str())),
        ("bs", s(&j.bs)),
        ("ioengine", s(&j.ioengine)),
        ("iodepth", s(&j.iodepth)),
        ("direct", b(j.direct)),
        ("runtime", j.runtime.and_then(ms)),
        ("time_based", b(j.time_based)),
        ("number_ios", j.number_ios.map(|n| n.to_string())),
        ("ramp_time", ms(j.ramp_time)),
        ("norandommap", b(j.norandommap)),
        ("randseed", s(&j.randseed)),
        ("invalidate", b(j.invalidate)),
        ("numjobs", s(&j.numjobs)),
        ("iodepth_batch_submit", s(&j.iodepth_batch_submit)),
        (
            "iodepth_batch_complete_min",
            s(&j.iodepth_batch_complete_min),
        ),
        ("verify", b(j.verify)),
        ("fadvise_hint", b(j.fadvise_hint)),
        ("nowait", n.nowait.map(|m| m.to_string())),
        ("pool_workers", n.pool_workers.map(|n| n.to_string())),
        ("sqthread_poll", b(n.sqthread_poll)),
        ("sqthread_poll_idle", ms(j.sqthread_poll_idle)),
        ("fixedbufs", b(j.fixedbufs)),
        ("registerfiles", b(j.registerfiles)),
        ("hipri", n.hipri.and_then(b)),
        ("spin_us", s(&n.spin_us)),
    ]
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
                "verify" | "nowait" | "pool_workers" | "sqthread_poll_idle" | "spin_us" => {
                    return None
                }
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
    if compares_lat(job) {
        a.push("--lat_percentiles=1".into());
    }
    a.push("--output-format=json".into());
    Ok(a)
}

/// Run fio with `job` and read its result.
pub fn run(job: &Job, region: u64) -> Result<FioResult, String> {
    let a = args(job, region)?;
    let command = format!("fio {}", a.join(" "));
    let out = Command::new("fio")
        .args(&a)
        .output()
        .map_err(|e| format!("cannot run fio: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "`{command}` failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            stdout.trim()
        ));
    }
    let mut r = parse(&stdout)?;
    r.command = command;
    Ok(r)
}

/// Read fio's JSON output (fio may print notes before the JSON object)
/// into the same types nowait writes its own with.
pub fn parse(text: &str) -> Result<FioResult, String> {
    let start = text
        .find('{')
        .ok_or("fio printed no JSON (is it older than 2.x?)")?;
    let doc: crate::base::json::Doc =
        serde_json::from_str(&text[start..]).map_err(|e| format!("fio's JSON: {e}"))?;
    let j = doc
        .jobs
        .into_iter()
        .next()
        .ok_or("fio's JSON has no jobs[0]")?;
    let r = &j.read;
    Ok(FioResult {
        iops: r.iops,
        bw_bytes: r.bw_bytes as f64,
        clat_mean_ns: r.clat_ns.mean,
        clat_p50_ns: r.clat_ns.get(50.0),
        clat_p99_ns: r.clat_ns.get(99.0),
        lat_p50_ns: r.lat_ns.get(50.0),
        lat_p99_ns: r.lat_ns.get(99.0),
        usr_cpu: j.usr_cpu,
        sys_cpu: j.sys_cpu,
        ctx: j.ctx,
        runtime_ms: r.runtime,
        command: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::defs::job_of as job;

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
        let a = args(&job("--filename=/f --ioengine=sync --iodepth=32"), 4096)
            .unwrap()
            .join(" ");
        assert!(
            a.contains("--ioengine=psync") && a.contains("--iodepth=1 "),
            "{a}"
        );
    }

    #[test]
    fn parses_fio_json_after_notes() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"fio version":"fio-3.33","jobs":[{"jobname":"x","usr_cpu":1.5,"sys_cpu":20.25,"ctx":1234,
"read":{"iops":50123.5,"bw_bytes":205306880,"runtime":3001,
"clat_ns":{"mean":600.5,"percentile":{"50.000000":580,"99.000000":1200}},
"lat_ns":{"mean":900.5,"percentile":{"50.000000":880,"99.000000":1500}}}}]}"#;
        let r = parse(text).unwrap();
        assert_eq!(r.iops, 50123.5);
        assert_eq!(
            (r.clat_p50_ns, r.clat_p99_ns, r.ctx, r.runtime_ms),
            (Some(580), Some(1200), 1234, 3001)
        );
        assert_eq!((r.usr_cpu, r.sys_cpu), (1.5, 20.25));
        // nowait's clat at iodepth 1 matches fio's lat, elsewhere fio's clat.
        assert_eq!(r.like_clat(99, true), (Some(1500), "lat"));
        assert_eq!(r.like_clat(50, false), (Some(580), "clat"));
        assert_eq!(r.missing_percentiles(true), None);
    }

    /// fio before 3.18 turns clat percentiles off when lat_percentiles=1 is
    /// set (init.c), so fio gets it only at iodepth 1 (where its lat is
    /// compared), and percentiles missing from its JSON are missing, not 0.
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
        // fio-3.16 with lat_percentiles=1: lat has percentiles, clat none.
        let text = r#"{"fio version":"fio-3.16","jobs":[{"read":{"iops":1000,
"clat_ns":{"mean":600.5},
"lat_ns":{"mean":900.5,"percentile":{"50.000000":880,"99.000000":1500}}}}]}"#;
        let r = parse(text).unwrap();
        assert_eq!((r.clat_p50_ns, r.clat_p99_ns), (None, None));
        assert_eq!(r.like_clat(99, false), (None, "clat"));
        assert_eq!(r.like_clat(99, true), (Some(1500), "lat"));
        let note = r.missing_percentiles(false).unwrap();
        assert!(
            note.contains("no clat percentiles") && note.contains("3.18"),
            "{note}"
        );
        assert_eq!(r.missing_percentiles(true), None);
    }
}
