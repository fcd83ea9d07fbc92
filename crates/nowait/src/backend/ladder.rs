//! The ladder: which backend `BackendChoice::Auto` sets up (uring →
//! aio+pool → pool → sync, the first that can be had), what each fallback
//! means for the reads, and the [`BackendReport`] that says why.

use std::fmt;

use super::aio_pool;
use super::pool::{self, PoolConfig};
use super::sync::SyncBackend;
use super::uring::{self, UringConfig};
use super::{aio, Backend, BackendChoice, BackendKind};
use crate::error::{Error, Result};

/// Why a queue has the backend it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendReason {
    /// `BackendChoice::Exactly` asked for it.
    AskedFor,
    /// `Auto`: the first rung of the ladder could be set up.
    FirstChoice,
    /// `Auto`: the rungs above were refused, each for the reason given.
    FellBack {
        /// The backends tried and refused, best first.
        skipped: Vec<Skipped>,
    },
}

/// A backend the ladder tried and could not set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The backend.
    pub kind: BackendKind,
    /// Why, in words (the errno named, and what to do).
    pub why: String,
}

impl BackendReason {
    /// True if `Auto` fell back below its first choice.
    pub fn fell_back(&self) -> bool {
        matches!(self, BackendReason::FellBack { .. })
    }
}

/// The text: "asked for", "uring is available; it is the first choice",
/// "fell back from uring: …; then from …; O_DIRECT files use aio, …".
impl fmt::Display for BackendReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendReason::AskedFor => f.write_str("asked for"),
            BackendReason::FirstChoice => {
                write!(f, "{} is available; it is the first choice", LADDER[0])
            }
            BackendReason::FellBack { skipped } => {
                f.write_str("fell back ")?;
                for (i, s) in skipped.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; then ")?;
                    }
                    write!(f, "from {}: {}", s.kind, s.why)?;
                }
                // The backend chosen is the rung after the last skipped one.
                let chosen = skipped
                    .last()
                    .and_then(|s| LADDER.iter().position(|&k| k == s.kind))
                    .and_then(|i| LADDER.get(i + 1));
                if let Some(&k) = chosen {
                    f.write_str(ladder_note(k))?;
                }
                Ok(())
            }
        }
    }
}

/// Where a queue's backend came from.
#[derive(Debug, Clone)]
pub struct BackendReport {
    /// The backend in use.
    pub kind: BackendKind,
    /// Why it was chosen (and what was skipped on the way).
    pub reason: BackendReason,
    /// Setup details (ring flags, …).
    pub detail: String,
}

/// True if `NOWAIT_DISABLE_URING` is set to anything but empty or `0`:
/// `Auto` then skips io_uring (to exercise the ladder without seccomp).
pub(crate) fn uring_disabled_by_env() -> bool {
    std::env::var_os("NOWAIT_DISABLE_URING").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Set up one backend, or say why it cannot be had here.
fn build_one(
    kind: BackendKind,
    depth: usize,
    uring_cfg: UringConfig,
    pool_cfg: PoolConfig,
) -> std::result::Result<Box<dyn Backend>, String> {
    match kind {
        BackendKind::Uring => {
            if uring_disabled_by_env() {
                return Err("disabled by NOWAIT_DISABLE_URING".into());
            }
            match uring::setup(depth, uring_cfg) {
                Ok(b) => Ok(Box::new(b)),
                Err(e) => Err(uring::refusal(&e)),
            }
        }
        BackendKind::Aio => match aio::setup(depth) {
            Ok(mut b) => {
                b.set_submit_policy(uring_cfg.submit);
                Ok(Box::new(b))
            }
            Err(e) => Err(aio::refusal(&e)),
        },
        BackendKind::AioPool => match aio_pool::setup(depth, pool_cfg) {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(aio_pool::refusal(&e)),
        },
        BackendKind::Pool => match pool::setup(depth, pool_cfg) {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(pool::refusal(&e)),
        },
        BackendKind::Sync => Ok(Box::new(SyncBackend::new(depth))),
    }
}

/// The ladder `BackendChoice::Auto` walks: the first that can be set up
/// wins. Below io_uring, direct files go to native AIO and buffered files
/// to the pool (`aio+pool`); if AIO cannot be set up, everything goes to
/// the pool; `sync` only if no thread can be started.
const LADDER: [BackendKind; 4] = [
    BackendKind::Uring,
    BackendKind::AioPool,
    BackendKind::Pool,
    BackendKind::Sync,
];

/// What a fallback means for the reads, appended to the report's reason.
fn ladder_note(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::AioPool => "; O_DIRECT files use aio, buffered files use pool",
        BackendKind::Pool => "; O_DIRECT and buffered files use pool",
        BackendKind::Sync => "; every read is a pread(2) on the calling thread",
        BackendKind::Uring | BackendKind::Aio => "",
    }
}

pub(crate) fn make_backend(
    choice: BackendChoice,
    depth: usize,
    uring_cfg: UringConfig,
    pool_cfg: PoolConfig,
) -> Result<(Box<dyn Backend>, BackendReport)> {
    let report = |kind, reason: BackendReason, b: &dyn Backend| BackendReport {
        kind,
        reason,
        detail: b.describe(),
    };
    match choice {
        BackendChoice::Exactly(kind) => match build_one(kind, depth, uring_cfg, pool_cfg) {
            Ok(b) => {
                let r = report(kind, BackendReason::AskedFor, b.as_ref());
                Ok((b, r))
            }
            // The message adds the backends to ask for instead, in the
            // words of the front end that renders it.
            Err(reason) => Err(Error::BackendUnavailable {
                backend: choice,
                reason,
            }),
        },
        BackendChoice::Auto => {
            let mut skipped: Vec<Skipped> = Vec::new();
            for kind in LADDER {
                match build_one(kind, depth, uring_cfg, pool_cfg) {
                    Ok(b) => {
                        let reason = if skipped.is_empty() {
                            BackendReason::FirstChoice
                        } else {
                            BackendReason::FellBack { skipped }
                        };
                        let r = report(kind, reason, b.as_ref());
                        return Ok((b, r));
                    }
                    Err(why) => skipped.push(Skipped { kind, why }),
                }
            }
            Err(Error::BackendUnavailable {
                backend: BackendChoice::Auto,
                reason: skipped
                    .iter()
                    .map(|s| format!("from {}: {}", s.kind, s.why))
                    .collect::<Vec<_>>()
                    .join("; "),
            })
        }
    }
}
