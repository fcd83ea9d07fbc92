//! The queue a job asks for: its backend, depth and every engine option
//! (normalized: an option the engine does not take is left at its
//! default), with an error naming the option at fault; and one buffer per
//! slot, aligned for every file (the queue's registered buffers with
//! `fixedbufs`).

use std::time::Duration;

use nowait::{BackendChoice, BackendKind, Buf, File, IoPoll, Queue, PAGE};

use crate::base::failure::Failure;
use crate::base::flags::say;
use crate::model::job::Job;

/// The queue a job asks for: backend, depth and every engine option.
pub fn builder(job: &Job, depth: usize) -> nowait::QueueBuilder {
    let n = job.normalized();
    let mut b = Queue::builder()
        .depth(depth)
        .backend(BackendChoice::Exactly(n.ioengine))
        .register_files(n.registerfiles)
        .small_direct(n.small_direct)
        .memory_inline(n.memory_inline)
        .spin(Duration::from_micros(n.spin_us))
        .submit_policy(n.submit)
        .cache(n.cache)
        .iopoll(match n.hipri {
            None => IoPoll::Auto,
            Some(true) => IoPoll::Always,
            Some(false) => IoPoll::Off,
        });
    if let Some(m) = n.nowait {
        b = b.nowait(m);
    }
    if let Some(w) = n.inline_window {
        b = b.inline_window(w);
    }
    if let Some(w) = n.pool_workers {
        b = b.pool_workers(w);
    }
    if n.sqthread_poll {
        b = b.sqpoll(Some(n.sqthread_poll_idle.as_millis() as u32));
    }
    if n.fixedbufs {
        b = b.fixed_buffers(depth, job.bs as usize);
    }
    b
}

/// Build a job's queue, with an error naming the option at fault.
pub fn build_queue(job: &Job, depth: usize) -> Result<Queue, Failure> {
    builder(job, depth).build().map_err(|e| {
        let flag = if job.sqthread_poll && job.ioengine == BackendKind::Uring {
            "--ioengine=uring --sqthread_poll".to_string()
        } else {
            format!("--ioengine={}", job.ioengine.as_str())
        };
        // The message names the flag at fault in the command's words.
        match e {
            nowait::Error::Config(_) => Failure::Usage(say(&e)),
            nowait::Error::BackendUnavailable { .. } => {
                Failure::Unavailable(format!("{flag}: {}", say(&e)))
            }
            e => Failure::Runtime(format!("{flag}: {}", say(&e))),
        }
    })
}

/// One buffer per slot, as large as the job's largest read and aligned for
/// every file: the queue's registered ones with `fixedbufs`.
pub fn slot_buffers(job: &Job, q: &mut Queue, files: &[&File], depth: usize) -> Vec<Option<Buf>> {
    let align = files
        .iter()
        .map(|f| f.dio_align().mem as usize)
        .fold(PAGE, usize::max);
    (0..depth)
        .map(|_| {
            let fixed = if job.fixedbufs && align <= PAGE {
                q.take_buf()
            } else {
                None
            };
            let size = job.bs as usize;
            Some(fixed.unwrap_or_else(|| Buf::with_align(size, align)))
        })
        .collect()
}
