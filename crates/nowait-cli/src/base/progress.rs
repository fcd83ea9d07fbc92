//! A live progress line on standard error, drawn only when standard error
//! is a terminal: nothing at all goes to a pipe or a file.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// One progress line, redrawn in place.
#[derive(Debug)]
pub struct Progress {
    on: bool,
    label: String,
    last: Option<Instant>,
}

impl Progress {
    /// A progress line labelled `label`; silent unless stderr is a terminal.
    pub fn new(label: impl Into<String>) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            label: label.into(),
            last: None,
        }
    }

    /// True if anything will be drawn.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Redraw with `fraction` done (0..=1, if known) and a detail such as the
    /// current IOPS. Redraws at most ten times a second.
    pub fn update(&mut self, fraction: Option<f64>, detail: &str) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let line = match fraction {
            Some(f) => {
                let f = f.clamp(0.0, 1.0);
                let width = 30;
                let full = (f * width as f64).round() as usize;
                format!(
                    "{} [{}{}] {:3.0}% {detail}",
                    self.label,
                    "#".repeat(full),
                    ".".repeat(width - full),
                    f * 100.0
                )
            }
            None => format!("{} {detail}", self.label),
        };
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[2K{line}");
        let _ = e.flush();
    }

    /// Erase the line.
    pub fn finish(&mut self) {
        if self.on && self.last.is_some() {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
        self.last = None;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
