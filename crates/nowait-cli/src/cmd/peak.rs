//! `nowait bench --peak`: peak IOPS, the way fio's `t/io_uring` measures it.
//!
//! The driver's peak mode ([`Mode::Peak`]): registered files
//! and buffers, direct random reads, queue depth 128, submissions in
//! batches of 32 (`iodepth_batch_submit`), reaps of at least 1
//! (`iodepth_batch_complete_min`) taking every completion available — the
//! defaults of `bench --peak`, each overridable by its option. Per read it
//! does only what it must: pick an offset, push, and on completion check the
//! length (and the data with `--verify`). No clock reads per read and no
//! latency histogram; one clock read per reap call decides when to stop.
//!
//! Every second the main thread prints IOPS and, like `t/io_uring`'s
//! `IOS/call=32/31`, the reads per submit call and per reap call of that
//! second, from counters the loop stores after each reap.

use crate::base::failure::{interrupted, Failure};
use crate::driver::job::run_job;
use crate::driver::layout;
use crate::driver::run::Mode;
use crate::measure::row::Row;
use crate::model::job::{Job, Settings};

/// Run every job with the peak loop, printing IOPS every second.
pub fn run_all(jobs: &[Job], settings: &Settings) -> Result<Vec<Row>, Failure> {
    let json = settings.format == crate::model::job::Format::Json;
    // Per-second lines go where the report does not: stderr under JSON on stdout.
    let live_to_stderr = json && settings.output.is_none();
    let say = |line: String| {
        if live_to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let mut results = Vec::new();
    for job in jobs {
        let data = match layout::prepare(job) {
            Ok(d) => d,
            // Ctrl-C while laying out a later job: report the jobs run.
            Err(Failure::Interrupted(m)) if !results.is_empty() => {
                eprintln!("nowait bench: job {}: {m}", job.name);
                break;
            }
            Err(e) => return Err(e),
        };
        say(format!(
            "peak: {} {} bs={} qd={} batch submit={} complete min={} direct={} fixedbufs={} \
             registerfiles={} small_direct={} threads={}",
            job.engine_label(),
            job.rw.as_str(),
            job.bs,
            job.effective_iodepth(),
            job.iodepth_batch_submit,
            job.iodepth_batch_complete_min,
            u8::from(job.direct),
            u8::from(job.fixedbufs),
            u8::from(job.registerfiles),
            u8::from(job.small_direct),
            job.numjobs
        ));
        results.push(run_job(job, &data, Mode::Peak, Some(&say))?);
        if interrupted() {
            break;
        }
    }
    Ok(results.into_iter().map(|ours| Row { ours }).collect())
}
