//! fio's scheduler over the one read driver: the threads of a run (each
//! job and its `numjobs` clones) run side by side, each with its own
//! thread, files and queue; a job with `stonewall` (or the first of a later
//! job file) starts once every thread before it has ended; `startdelay`
//! counts from the run's start (a delay that passed while earlier threads
//! ran starts the thread at once, as fio's `run_threads` does); flow groups
//! are joined before anything runs. Each thread's files are named, laid out
//! when missing (once, however many threads read them), opened for it,
//! their cache dropped (`invalidate`) and their access advised
//! (`fadvise_hint`) before the threads start.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nowait::File;

use crate::base::failure::{interrupted, Failure};
use crate::base::flags::say;
use crate::base::units::human_bytes;
use crate::driver::cache::fadvise_access;
use crate::driver::engine::{open_for, reads_files};
use crate::driver::files;
use crate::driver::flow::Flows;
use crate::driver::layout::lay_out;
use crate::driver::run::{drive, Mode, Thread};
use crate::measure::outcome::Outcome;
use crate::model::job::{uses_pool, Job};
use crate::workload::fio_job::{self, FioReads, IoLog, JobFile};
use crate::workload::fio_random::{JobSeeds, Stream, SEED_COUNT};

/// Fresh random words from the operating system (fio reads `/dev/urandom`
/// for `randrepeat=0` without `randseed`).
pub fn entropy() -> [u64; SEED_COUNT] {
    use std::io::Read;
    let mut bytes = [0u8; SEED_COUNT * 8];
    let got = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if got.is_err() {
        // No /dev/urandom: the clock, mixed, is random enough for seeds.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut r = crate::workload::rng::Rng::new(t);
        return std::array::from_fn(|_| r.next_u64());
    }
    std::array::from_fn(|i| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8")))
}

/// The size of the file at `path` now (`None`: missing).
fn size_now(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| {
        if m.file_type().is_file() {
            m.len()
        } else {
            // A block device: its size, as the engine opens it.
            File::open(path, nowait::Direct::Off)
                .and_then(|f| f.len())
                .unwrap_or(0)
        }
    })
}

/// A thread ready to run: its seeds, its files (fio's names and regions).
struct Planned {
    seeds: JobSeeds,
    files: Vec<JobFile>,
    laid_out: bool,
}

/// Lay out the run's missing files (each once, at the largest size any
/// thread needs) and work out every thread's files.
fn plan(threads: &[Job]) -> Result<Vec<Planned>, Failure> {
    let mut seeds: Vec<JobSeeds> = threads.iter().map(|j| fio_job::seeds(j, entropy)).collect();
    // What each path must hold, over every thread that reads it.
    let mut need: Vec<(PathBuf, u64, String)> = Vec::new();
    for (j, s) in threads.iter().zip(&seeds) {
        if !reads_files(j) {
            continue;
        }
        let names = files::names(j);
        let sizes: Vec<u64> = names.iter().map(|n| size_now(n).unwrap_or(0)).collect();
        for f in files::layout(j, &sizes, s).map_err(Failure::Usage)? {
            match need.iter_mut().find(|(p, _, _)| *p == f.name) {
                Some(n) => n.1 = n.1.max(f.geometry.real_file_size),
                None => need.push((f.name, f.geometry.real_file_size, j.name.clone())),
            }
        }
    }
    let mut laid_out = Vec::new();
    for (path, size, job) in &need {
        match size_now(path) {
            None if *size == 0 => {
                return Err(Failure::Usage(format!(
                    "job {job}: file {} does not exist and the job gives it no size; \
                     give size (or filesize) to lay it out, or name an existing file",
                    path.display()
                )))
            }
            None => {
                lay_out(path, *size)?;
                laid_out.push(path.clone());
            }
            Some(have) if have < *size => {
                return Err(Failure::Usage(format!(
                    "job {job}: file {} holds {} but the job reads {} of it \
                     (size, offset, filesize); lower size, or remove the file so it is laid \
                     out anew at that size",
                    path.display(),
                    human_bytes(have),
                    human_bytes(*size)
                )))
            }
            Some(_) => {}
        }
    }
    let mut out = Vec::with_capacity(threads.len());
    for (j, s) in threads.iter().zip(seeds.drain(..)) {
        let names = files::names(j);
        let sizes: Vec<u64> = if reads_files(j) {
            names.iter().map(|n| size_now(n).unwrap_or(0)).collect()
        } else {
            vec![0; names.len()]
        };
        let files = files::layout(j, &sizes, &s).map_err(Failure::Usage)?;
        if files.iter().all(|f| f.geometry.io_size == 0) {
            return Err(Failure::Usage(format!(
                "job {}: nothing to read: give size (the null engine reads no file, so it \
                 needs one)",
                j.name
            )));
        }
        let laid = files.iter().any(|f| laid_out.contains(&f.name));
        out.push(Planned {
            seeds: s,
            files,
            laid_out: laid,
        });
    }
    Ok(out)
}

/// The thread's start delay (`startdelay`; a range draws it from the
/// thread's stream as fio does).
fn start_delay(job: &Job, seeds: &JobSeeds) -> Duration {
    let (lo, hi) = job.startdelay;
    if lo == hi {
        return lo;
    }
    let use64 =
        job.random_generator == Some(crate::model::fio_ini::choice::RandomGenerator::Tausworthe64);
    let mut r = seeds.rand(Stream::StartDelay, use64);
    Duration::from_micros(r.between(lo.as_micros() as u64, hi.as_micros() as u64))
}

/// Run the threads of a run, as fio runs a job file's jobs: one
/// [`Outcome`] per thread, in thread order (threads a Ctrl-C kept from
/// starting are left out).
pub fn run(threads: &[Job]) -> Result<Vec<Outcome>, Failure> {
    let planned = plan(threads)?;
    // Open every thread's files (its own descriptors, as fio's threads
    // have), drop their cache and advise the access pattern.
    let mut opened: Vec<Vec<File>> = Vec::with_capacity(threads.len());
    let mut invalidated: HashMap<PathBuf, ()> = HashMap::new();
    for (j, p) in threads.iter().zip(&planned) {
        let mut fs = Vec::new();
        if reads_files(j) {
            for f in &p.files {
                let file = open_for(j, &f.name).map_err(|e| match e {
                    nowait::Error::DirectUnsupported { .. } => {
                        Failure::Usage(format!("job {}: direct=1: {}", j.name, say(&e)))
                    }
                    e => Failure::Runtime(format!("job {}: {}", j.name, say(&e))),
                })?;
                if j.direct && j.bs % u64::from(file.dio_align().offset) != 0 {
                    let a = u64::from(file.dio_align().offset);
                    return Err(Failure::Usage(format!(
                        "job {}: bs={}: with direct=1 the block size must be a multiple of \
                         {a} (O_DIRECT alignment of {}, from {}); try bs={}",
                        j.name,
                        j.bs,
                        f.name.display(),
                        file.dio_align().source,
                        j.bs.div_ceil(a) * a
                    )));
                }
                if j.invalidate && invalidated.insert(f.name.clone(), ()).is_none() {
                    file.drop_cache().map_err(|e| {
                        Failure::Runtime(format!("job {}: invalidate=1: {e}", j.name))
                    })?;
                }
                if j.fadvise_hint {
                    fadvise_access(&file, j.rw).map_err(|e| {
                        Failure::Runtime(format!(
                            "job {}: fadvise_hint=1: posix_fadvise failed: {e}",
                            j.name
                        ))
                    })?;
                }
                fs.push(file);
            }
        }
        opened.push(fs);
    }
    let mut flows = Flows::default();
    let mut members: Vec<_> = threads
        .iter()
        .map(|j| flows.join(j.flow_id, j.flow))
        .collect();
    let delays: Vec<Duration> = threads
        .iter()
        .zip(&planned)
        .map(|(j, p)| start_delay(j, &p.seeds))
        .collect();
    // Segments: a new one at each job (not clone) with stonewall.
    let mut cuts: Vec<usize> = (1..threads.len())
        .filter(|&i| threads[i].stonewall && threads[i].member.clone == 0)
        .collect();
    cuts.push(threads.len());
    let genesis = Instant::now();
    let mut outcomes = Vec::with_capacity(threads.len());
    let mut from = 0;
    let mut planned = planned.into_iter();
    for to in cuts {
        if interrupted() {
            break;
        }
        let since = genesis.elapsed();
        let mut specs = Vec::with_capacity(to - from);
        let mut refs: Vec<Vec<&File>> = opened[from..to]
            .iter()
            .map(|v| v.iter().collect())
            .collect();
        let mut meta = Vec::new();
        for (k, i) in (from..to).enumerate() {
            let j = &threads[i];
            let p = planned.next().expect("one plan per thread");
            let pacing = fio_job::pacing(j, &p.seeds).map_err(Failure::Usage)?;
            let mut reads = FioReads::new(j, &p.files, p.seeds, pacing).map_err(Failure::Usage)?;
            if let Some(path) = &j.write_iolog {
                let path = if j.numjobs > 1 {
                    let mut p = path.clone().into_os_string();
                    p.push(format!(".{}", j.member.thread_number));
                    p.into()
                } else {
                    path.clone()
                };
                let names = p
                    .files
                    .iter()
                    .map(|f| f.name.display().to_string())
                    .collect();
                let log = IoLog::create(&path, names).map_err(|e| {
                    Failure::Runtime(format!(
                        "job {}: write_iolog={}: cannot write: {e}",
                        j.name,
                        path.display()
                    ))
                })?;
                reads = reads.with_log(log);
            }
            meta.push((p.files, p.laid_out));
            specs.push(Thread {
                job: j,
                files: std::mem::take(&mut refs[k]),
                reads,
                delay: delays[i].saturating_sub(since),
                flow: members[i].take(),
            });
        }
        let mut d = drive(specs, Mode::Measure, None)?;
        for (k, r) in d.reads.iter_mut().enumerate() {
            if let Some(log) = r.take_log() {
                log.finish().map_err(|e| {
                    Failure::Runtime(format!(
                        "job {}: write_iolog: writing failed: {e}",
                        threads[from + k].name
                    ))
                })?;
            }
        }
        for (k, (t, (fs, laid_out))) in d.threads.into_iter().zip(meta).enumerate() {
            let i = from + k;
            let j = &threads[i];
            let first = opened[i].first();
            outcomes.push(Outcome {
                job: Job {
                    filename: j
                        .filename
                        .clone()
                        .or_else(|| fs.first().map(|f| f.name.clone())),
                    ..j.clone()
                },
                threads: vec![t.measured.clone()],
                disks: Vec::new(),
                measured: t.measured,
                backend: t.backend,
                path: path_words(j, first),
                effective_iodepth: j.effective_iodepth(),
                region: fs.iter().map(|f| f.geometry.io_size).sum(),
                laid_out,
                verified_ios: t.verified,
                nowait_path: first
                    .filter(|_| uses_pool(j.ioengine) && j.own_engine.is_none())
                    .map(|f| f.nowait_state()),
                seconds: Vec::new(),
                interrupted: t.interrupted,
            });
        }
        from = to;
    }
    Ok(outcomes)
}

/// How reads reach a job's first file, in words.
pub fn path_words(job: &Job, file: Option<&File>) -> String {
    match file {
        None => "no I/O (ioengine=null)".into(),
        Some(f) if f.is_direct() => {
            let a = f.dio_align();
            format!(
                "direct (O_DIRECT, {}-byte alignment from {}) on {}",
                a.offset,
                a.source,
                f.fs()
            )
        }
        Some(f) if job.own_engine == Some(crate::model::job::OwnEngine::Mmap) => {
            format!("mapped (mmap, page cache) on {}", f.fs())
        }
        Some(f) => format!("buffered (page cache) on {}", f.fs()),
    }
}

/// The entries fio prints for a run's threads (in thread order): each
/// thread on its own, or folded into the entry before it in its group
/// with `group_reporting` ([`crate::model::group::entries`]); an entry's
/// counts and latencies are its threads' together, its CPU time their
/// sum, its wall time the longest, its `numjobs` how many threads it holds.
pub fn entries(outcomes: Vec<Outcome>) -> Vec<Outcome> {
    let members: Vec<crate::model::group::Member> = outcomes.iter().map(|o| o.job.member).collect();
    let sizes: Vec<usize> = crate::model::group::entries(&members)
        .iter()
        .map(|e| e.len())
        .collect();
    let mut it = outcomes.into_iter();
    let mut out = Vec::with_capacity(sizes.len());
    for n in sizes {
        let mut first = it.next().expect("entries cover every outcome");
        first.job.numjobs = n;
        for o in it.by_ref().take(n - 1) {
            let mut cpu = first.measured.rusage;
            let r = o.measured.rusage;
            cpu.user_us += r.user_us;
            cpu.sys_us += r.sys_us;
            cpu.ctx_voluntary += r.ctx_voluntary;
            cpu.ctx_involuntary += r.ctx_involuntary;
            first.measured.add(&o.measured);
            first.measured.rusage = cpu;
            first.threads.extend(o.threads);
            first.verified_ios += o.verified_ios;
            first.interrupted |= o.interrupted;
            first.laid_out |= o.laid_out;
        }
        out.push(first);
    }
    out
}
