//! The C API's words: how the engine's messages name the settings a C
//! caller chooses (`NOWAIT_DIRECT_AUTO`, `opts->depth`, …), the names of
//! the backends as static C strings, and the description of an errno that
//! `nowait_strerror` returns. No state, no unsafe code: the files above use
//! these.

use std::borrow::Cow;
use std::ffi::CStr;
use std::fmt;

use engine::{BackendChoice, BackendKind, Direct, Setting, Vocabulary};

/// The engine's messages as a C caller reads them: the settings named as
/// `nowait.h` spells them.
pub struct CWords;

impl Vocabulary for CWords {
    fn setting(&self, setting: Setting) -> Cow<'static, str> {
        match setting {
            Setting::Depth => "opts->depth".into(),
            Setting::PoolWorkers => "opts->pool_workers".into(),
            // The C API registers no buffers: the engine's own words.
            other => engine::PlainWords.setting(other),
        }
    }

    fn assigned(&self, setting: Setting, value: &dyn fmt::Display) -> String {
        format!("{} = {value}", self.setting(setting))
    }

    fn direct(&self, mode: Direct) -> Option<Cow<'static, str>> {
        Some(
            match mode {
                Direct::Off => "NOWAIT_DIRECT_OFF",
                Direct::On => "NOWAIT_DIRECT_ON",
                Direct::Auto => "NOWAIT_DIRECT_AUTO",
            }
            .into(),
        )
    }

    fn backend(&self, choice: BackendChoice) -> Option<Cow<'static, str>> {
        Some(
            match choice {
                BackendChoice::Auto => "NOWAIT_BACKEND_AUTO",
                BackendChoice::Exactly(BackendKind::Uring) => "NOWAIT_BACKEND_URING",
                BackendChoice::Exactly(BackendKind::Aio) => "NOWAIT_BACKEND_AIO",
                BackendChoice::Exactly(BackendKind::AioPool) => "NOWAIT_BACKEND_AIO_POOL",
                BackendChoice::Exactly(BackendKind::Pool) => "NOWAIT_BACKEND_POOL",
                BackendChoice::Exactly(BackendKind::Sync) => "NOWAIT_BACKEND_SYNC",
            }
            .into(),
        )
    }
}

/// A backend's name as a static C string (the names are a fixed set, so
/// `nowait_queue_backend` can return one that outlives every queue).
pub fn backend_name(kind: BackendKind) -> &'static CStr {
    match kind {
        BackendKind::Uring => c"uring",
        BackendKind::Aio => c"aio",
        BackendKind::AioPool => c"aio+pool",
        BackendKind::Pool => c"pool",
        BackendKind::Sync => c"sync",
    }
}

/// Describe an errno (negative or positive): `"EINVAL: Invalid argument"`;
/// 0 is `"success"`; one without a name is `"<words> (errno N)"`.
pub fn describe(err: i32) -> String {
    if err == 0 {
        return "success".into();
    }
    let e = err.checked_abs().unwrap_or(i32::MAX);
    let name = engine::probe::errno_name(e);
    let words = engine::errno_text(e);
    if name.starts_with("errno ") || name.is_empty() {
        format!("{words} (errno {e})")
    } else {
        format!("{name}: {words}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_are_the_engines() {
        for k in BackendKind::ALL.into_iter().chain([BackendKind::AioPool]) {
            assert_eq!(backend_name(k).to_str().unwrap(), k.as_str());
        }
    }

    #[test]
    fn strerror_names_the_errno() {
        assert_eq!(describe(-libc::EINVAL), "EINVAL: Invalid argument");
        assert_eq!(describe(libc::EINVAL), "EINVAL: Invalid argument");
        assert_eq!(describe(0), "success");
    }
}
