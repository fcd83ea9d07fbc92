//! The engine the process shares for files opened without one.

use std::io;
use std::sync::Mutex;

use crate::Engine;

/// The engine the process shares for [`File::open`](crate::fs::File::open)
/// and [`File::from_std`](crate::fs::File::from_std): built with the
/// defaults on first use (with the feature `tokio`, inside a runtime, its
/// rings wait on that runtime's reactor; see [`crate::Notifier`]). An error
/// to build it is returned to each caller, and it is tried again next time.
pub fn engine() -> io::Result<Engine> {
    static SHARED: Mutex<Option<Engine>> = Mutex::new(None);
    let mut g = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = &*g {
        return Ok(e.clone());
    }
    let e = Engine::new()?;
    *g = Some(e.clone());
    Ok(e)
}
