//! Running fio with a bench job and reading its JSON output into the
//! figures reports show ([`FioResult`]), with the same types nowait writes
//! its own JSON with. A run is bounded: past its runtime and ramp time
//! plus a minute's grace (ten minutes without a runtime) fio is killed
//! and the error says so.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::base::failure::interrupted;
use crate::base::json::{Doc, FioResult};
use crate::fio::args::{args, Side};
use crate::fio::find::fio_program;
use crate::model::job::Job;

/// Run fio with `job` over `region` bytes on `side` and read its result.
pub fn run(job: &Job, region: u64, side: &Side) -> Result<FioResult, String> {
    let a = args(job, region, side)?;
    let fio = fio_program();
    let command = format!("{} {}", fio.display(), a.join(" "));
    let limit = match job.runtime {
        Some(r) => r + job.ramp_time + Duration::from_secs(60),
        None => Duration::from_secs(600),
    };
    let (status, stdout, stderr) =
        run_bounded(Command::new(&fio).args(&a), limit).map_err(|e| format!("`{command}`: {e}"))?;
    if !status.success() {
        // fio's own words: its first lines on stderr (else stdout's), not a
        // JSON document.
        let said = if stderr.trim().is_empty() {
            &stdout
        } else {
            &stderr
        };
        let lines: Vec<&str> = said.trim().lines().take(3).collect();
        return Err(format!(
            "`{command}` failed ({status}): {}",
            lines.join("; ")
        ));
    }
    let mut r = parse(&stdout).map_err(|e| format!("`{command}`: {e}"))?;
    r.command = command;
    Ok(r)
}

/// Run `cmd` with its output read, killing it past `limit` or on Ctrl-C.
fn run_bounded(
    cmd: &mut Command,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run fio: {e}"))?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let mut b = Vec::new();
                let _ = r.read_to_end(&mut b);
                s = String::from_utf8_lossy(&b).into_owned();
            }
            s
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| format!("waiting for fio: {e}"))?
        {
            break s;
        }
        let over = start.elapsed() > limit;
        if over || interrupted() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(if over {
                format!(
                    "fio ran past {} s and was ended; give the job a --runtime",
                    limit.as_secs()
                )
            } else {
                "interrupted (SIGINT): fio was ended".into()
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok((status, stdout, stderr))
}

/// Read fio's JSON output (fio and engines may print lines before the JSON
/// object) into the same types nowait writes its own with: its first entry.
pub fn parse(text: &str) -> Result<FioResult, String> {
    let start = text
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| text.starts_with('{').then_some(0))
        .ok_or("fio printed no JSON document")?;
    let mut de = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Doc>();
    let doc = match de.next() {
        Some(Ok(d)) => d,
        Some(Err(e)) => return Err(format!("fio's JSON: {e}")),
        None => return Err("fio printed no JSON document".into()),
    };
    let j = doc.jobs.first().ok_or("fio's JSON has no jobs[0]")?;
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

    #[test]
    fn parses_fio_json_after_notes_and_engine_lines() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"fio version":"fio-3.33","jobs":[{"jobname":"x","usr_cpu":1.5,"sys_cpu":20.25,"ctx":1234,
"read":{"iops":50123.5,"bw_bytes":205306880,"runtime":3001,
"clat_ns":{"mean":600.5,"percentile":{"50.000000":580,"99.000000":1200}},
"lat_ns":{"mean":900.5,"percentile":{"50.000000":880,"99.000000":1500}}}}]}
nowait: backend uring (asked for), 12 reads"#;
        let r = parse(text).unwrap();
        assert_eq!(r.iops, 50123.5);
        assert_eq!(
            (r.clat_p50_ns, r.clat_p99_ns, r.ctx, r.runtime_ms),
            (Some(580), Some(1200), 1234, 3001)
        );
        assert_eq!((r.usr_cpu, r.sys_cpu), (1.5, 20.25));
        assert_eq!((r.lat_p50_ns, r.lat_p99_ns), (Some(880), Some(1500)));
        assert!(parse("fio: engine not found").is_err());
    }
}
