//! Running fio with the job nowait runs, and reading its JSON output into
//! the figures nowait compares ([`FioResult`]), with the same types nowait
//! writes its own JSON with.

use std::process::Command;

use crate::base::json::{Doc, FioResult};
use crate::fio::args::{args, run_command};
use crate::fio::limit::{run_bounded, Ended, Limit, GRACE};
use crate::model::job::Job;
use crate::model::resolve::Run;

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

/// Run fio with the jobs of `run` (the same job file) and read each entry
/// it reports, in order; a run past `limit` is ended (SIGTERM, then
/// SIGKILL) and is an error naming `version`, what was expected and what
/// to do.
pub fn run_jobs(run: &Run, limit: &Limit, version: &str) -> Result<Vec<FioResult>, String> {
    let cmd = run_command(run)?;
    let mut command = format!("fio {}", cmd.args.join(" "));
    if let Some(t) = &cmd.text {
        // The job file written for fio, on one line.
        let body: Vec<&str> = t.lines().filter(|l| !l.starts_with(';')).collect();
        command.push_str(&format!(" (job file: {})", body.join(" ")));
    }
    let ended = run_bounded(Command::new("fio").args(&cmd.args), limit.wait, GRACE)
        .map_err(|e| format!("cannot run fio: {e}"))?;
    let out = match ended {
        Ended::Exited(o) => o,
        Ended::TimedOut(o) => {
            let wait = limit.wait.unwrap_or_default().as_secs_f64();
            let printed = String::from_utf8_lossy(&o.stderr);
            return Err(format!(
                "{version} did not end within {wait:.1} s ({}): sent SIGTERM, then SIGKILL \
                 after {} s if still running ({}); fio's side is not compared. `{command}`{}. \
                 fio 3.33 (Debian 12's) does not always end rate-limited jobs: try a newer \
                 fio, or give --fio-timeout=SECS to wait longer (--fio-timeout=0: no limit)",
                limit.why,
                GRACE.as_secs(),
                o.status,
                match printed.trim() {
                    "" => String::new(),
                    e => format!("; it printed: {e}"),
                }
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "`{command}` failed ({}): {}{}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            stdout.trim(),
            cmd.text.as_deref().map_or(String::new(), |t| format!(
                "\nthe job file given to fio:\n{t}"
            ))
        ));
    }
    let mut all = parse_all(&stdout)?;
    for r in &mut all {
        r.command = command.clone();
    }
    Ok(all)
}

/// Read fio's JSON output (fio may print notes before the JSON object)
/// into the same types nowait writes its own with: its first entry.
pub fn parse(text: &str) -> Result<FioResult, String> {
    parse_all(text)?
        .into_iter()
        .next()
        .ok_or_else(|| "fio's JSON has no jobs[0]".to_string())
}

/// Every entry of fio's JSON output (`jobs[]`, one per job or group as
/// fio folds them).
pub fn parse_all(text: &str) -> Result<Vec<FioResult>, String> {
    let start = text
        .find('{')
        .ok_or("fio printed no JSON (is it older than 2.x?)")?;
    let doc: Doc = serde_json::from_str(&text[start..]).map_err(|e| format!("fio's JSON: {e}"))?;
    if doc.jobs.is_empty() {
        return Err("fio's JSON has no jobs".into());
    }
    Ok(doc.jobs.iter().map(result_of).collect())
}

fn result_of(j: &crate::base::json::Job) -> FioResult {
    let r = &j.read;
    FioResult {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// fio before 3.18 with lat_percentiles=1 prints percentiles of lat
    /// only: those missing from its JSON are missing, not 0.
    #[test]
    fn percentiles_missing_from_fios_json_are_missing_not_zero() {
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
