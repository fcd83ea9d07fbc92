//! fio's command line for a bench job, on fio's own engine or on nowait's
//! (`ioengine=external:fio-nowait.so` with the engine's options): the same
//! job in fio's option names, so the two runs differ only in the engine.

use std::path::{Path, PathBuf};

use nowait::{BackendKind, CachePolicy};

use crate::model::job::{uses_pool, Job, Rw};

/// Which engine fio reads through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// fio's own engine closest to the job's backend ([`fio_engine`]).
    Fio,
    /// nowait's engine at this path, on the job's backend.
    Nowait(PathBuf),
}

impl Side {
    /// The engine's name in reports: `io_uring`, `nowait:uring`.
    pub fn label(&self, job: &Job) -> String {
        match self {
            Side::Fio => fio_engine(job.ioengine).to_string(),
            Side::Nowait(_) => format!("nowait:{}", job.ioengine.as_str()),
        }
    }
}

/// fio's own engine that does what a backend does: io_uring, libaio,
/// psync, and posixaio (glibc's thread pool) for the pool.
pub fn fio_engine(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Uring => "io_uring",
        BackendKind::Aio | BackendKind::AioPool => "libaio",
        BackendKind::Sync => "psync",
        _ => "posixaio",
    }
}

/// fio's arguments for `job` over the first `region` bytes of its file on
/// `side`, reporting JSON; an error names an option fio cannot be given.
pub fn args(job: &Job, region: u64, side: &Side) -> Result<Vec<String>, String> {
    let file = job
        .filename
        .as_deref()
        .ok_or("--filename is required to run fio")?;
    let mut a = vec![
        format!("--name={}", job.name),
        format!("--filename={}", fio_path(file)?),
        format!("--size={region}"),
        format!(
            "--rw={}",
            match job.rw {
                Rw::Read => "read",
                Rw::RandRead => "randread",
            }
        ),
        format!("--bs={}", job.bs),
        format!("--iodepth={}", job.iodepth),
        format!("--direct={}", u8::from(job.direct)),
        format!("--numjobs={}", job.numjobs),
        format!("--invalidate={}", u8::from(job.invalidate)),
        format!("--norandommap={}", u8::from(job.norandommap)),
        format!("--randseed={}", job.randseed),
        format!("--fadvise_hint={}", u8::from(job.fadvise_hint)),
        format!("--iodepth_batch_submit={}", job.iodepth_batch_submit),
        format!(
            "--iodepth_batch_complete_min={}",
            job.iodepth_batch_complete_min
        ),
        "--lat_percentiles=1".into(),
        "--output-format=json".into(),
    ];
    if let Some(r) = job.runtime {
        a.push(format!("--runtime={}ms", r.as_millis().max(1)));
    }
    if job.time_based {
        a.push("--time_based=1".into());
    }
    if let Some(n) = job.number_ios {
        a.push(format!("--number_ios={n}"));
    }
    if !job.ramp_time.is_zero() {
        a.push(format!("--ramp_time={}ms", job.ramp_time.as_millis()));
    }
    if job.numjobs > 1 {
        a.push("--group_reporting=1".into());
    }
    let n = job.normalized();
    match side {
        Side::Fio => {
            a.push(format!("--ioengine={}", fio_engine(job.ioengine)));
            if job.ioengine == BackendKind::Uring {
                // fio's io_uring engine takes these as nowait's uring does.
                for (name, on) in [
                    ("hipri", n.hipri == Some(true)),
                    ("fixedbufs", n.fixedbufs),
                    ("registerfiles", n.registerfiles),
                    ("sqthread_poll", n.sqthread_poll),
                ] {
                    if on {
                        a.push(format!("--{name}=1"));
                    }
                }
            }
            match n.cache {
                CachePolicy::Keep => {}
                CachePolicy::Drop => a.push("--uncached=1".into()),
                _ => {
                    return Err(format!(
                        "--cache={}: fio's own engines have no such policy (drop is fio's \
                         uncached=1)",
                        n.cache.as_str()
                    ))
                }
            }
        }
        Side::Nowait(path) => {
            a.push(format!("--ioengine=external:{}", fio_path(path)?));
            // The engine's options come after the engine that defines them.
            a.push(format!("--backend={}", job.ioengine.as_str()));
            if uses_pool(job.ioengine) {
                if let Some(m) = n.nowait {
                    a.push(format!("--nowait_mode={}", m.as_str()));
                }
                if let Some(w) = n.pool_workers {
                    a.push(format!("--pool_workers={w}"));
                }
            }
            if n.cache != CachePolicy::Keep {
                a.push(format!("--cache={}", n.cache.as_str()));
            }
        }
    }
    Ok(a)
}

/// A path as fio's command line takes it: UTF-8, no `:` (fio's separator
/// of several files).
fn fio_path(p: &Path) -> Result<String, String> {
    let s = p
        .to_str()
        .ok_or_else(|| format!("{}: fio takes UTF-8 paths only", p.display()))?;
    if s.contains(':') {
        return Err(format!(
            "{s}: fio reads ':' as a separator of several files; use a path without one"
        ));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            filename: Some("/tmp/f".into()),
            rw: Rw::RandRead,
            iodepth: 32,
            ioengine: BackendKind::Pool,
            nowait: Some(nowait::NowaitMode::Off),
            ..Job::default()
        }
    }

    /// The two sides differ only in the engine and its options.
    #[test]
    fn both_sides_run_the_same_job() {
        let fio = args(&job(), 1 << 20, &Side::Fio).unwrap();
        let ours = args(&job(), 1 << 20, &Side::Nowait("/x/fio-nowait.so".into())).unwrap();
        let common = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|a| {
                    !["--ioengine", "--backend", "--nowait_mode"]
                        .iter()
                        .any(|p| a.starts_with(p))
                })
                .cloned()
                .collect()
        };
        assert_eq!(common(&fio), common(&ours));
        assert!(fio.contains(&"--ioengine=posixaio".to_string()), "{fio:?}");
        for want in [
            "--ioengine=external:/x/fio-nowait.so",
            "--backend=pool",
            "--nowait_mode=off",
            "--rw=randread",
            "--iodepth=32",
            "--size=1048576",
        ] {
            assert!(ours.contains(&want.to_string()), "{want}: {ours:?}");
        }
        assert!(args(
            &Job {
                filename: Some("/a:b".into()),
                ..job()
            },
            4096,
            &Side::Fio
        )
        .unwrap_err()
        .contains("separator"));
    }
}
