//! The pieces of the scenarios' JSON documents: one run's figures
//! ([`Summary`]) and a result that may have been skipped ([`Or`]).

use serde::Serialize;

/// One run's figures in a scenario's JSON (`runs[]`, `results[].nowait`).
#[derive(Debug, Serialize)]
pub struct Summary {
    pub iops: f64,
    pub bw_bytes: f64,
    pub ios: u64,
    pub clat_p50_ns: u64,
    pub clat_p99_ns: u64,
    pub real_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) / real, like time(1).
    pub cpu_pct: f64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub syscalls: u64,
    pub polled: u64,
    pub poll_fallbacks: u64,
    pub effective_iodepth: usize,
    pub verified_ios: u64,
    pub backend_detail: String,
}

/// A result, or why there is none (`{"error": ...}`), as JSON.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Or<T> {
    /// The result.
    Ok(T),
    /// Why there is none.
    Err {
        /// The reason.
        error: String,
    },
    /// Why it was skipped (a backend this machine does not offer).
    Skipped {
        /// The reason.
        skipped: String,
    },
}

impl<T> Or<T> {
    /// From a `Result` whose error is text.
    pub fn of<U>(r: &Result<U, String>, f: impl FnOnce(&U) -> T) -> Or<T> {
        match r {
            Ok(u) => Or::Ok(f(u)),
            Err(e) => Or::Err { error: e.clone() },
        }
    }

    /// From a `Result` whose error says why the run was skipped.
    pub fn skipped<U>(r: &Result<U, String>, f: impl FnOnce(&U) -> T) -> Or<T> {
        match r {
            Ok(u) => Or::Ok(f(u)),
            Err(e) => Or::Skipped { skipped: e.clone() },
        }
    }
}
