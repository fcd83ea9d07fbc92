//! `nowait.probe()`: the machine report (and a file's) as a dict, with the
//! text `nowait probe` prints under "text".

use std::path::PathBuf;

use nowait::probe::{self, NowaitProbe, UringStatus};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;

pub fn probe(py: Python<'_>, path: Option<PathBuf>) -> PyResult<Bound<'_, PyDict>> {
    let (machine, file) = py.detach(|| {
        let m = probe::machine();
        let f = path.as_ref().map(|p| probe::file(p, &m));
        (m, f)
    });
    let d = PyDict::new(py);
    let mut text = machine.to_string();
    d.set_item("kernel_release", &machine.kernel_release)?;
    d.set_item("cpus", machine.cpus)?;
    d.set_item("io_uring_disabled", machine.io_uring_disabled.clone())?;
    d.set_item("memlock_bytes", machine.memlock_bytes)?;
    let u = PyDict::new(py);
    match &machine.uring {
        UringStatus::Available {
            flags,
            op_read,
            op_read_fixed,
        } => {
            u.set_item("available", true)?;
            u.set_item("op_read", *op_read)?;
            u.set_item("op_read_fixed", *op_read_fixed)?;
            let fl = PyDict::new(py);
            for f in flags {
                match f.result {
                    Ok(()) => fl.set_item(f.flag, "accepted")?,
                    Err(e) => fl.set_item(f.flag, probe::errno_name(e))?,
                }
            }
            u.set_item("flags", fl)?;
            u.set_item("errno", py.None())?;
            u.set_item("reason", py.None())?;
        }
        UringStatus::Unavailable { errno, reason } => {
            u.set_item("available", false)?;
            u.set_item("op_read", py.None())?;
            u.set_item("op_read_fixed", py.None())?;
            u.set_item("flags", py.None())?;
            u.set_item("errno", *errno)?;
            u.set_item("reason", reason)?;
        }
    }
    d.set_item("io_uring", u)?;
    match &machine.aio {
        Ok(()) => d.set_item("aio", "available")?,
        Err(why) => d.set_item("aio", format!("unavailable: {why}"))?,
    }
    let b = PyDict::new(py);
    match &machine.auto {
        Ok(r) => {
            b.set_item("kind", r.kind.as_str())?;
            b.set_item("reason", r.reason.to_string())?;
            b.set_item("detail", &r.detail)?;
        }
        Err(e) => {
            b.set_item("kind", py.None())?;
            b.set_item("reason", e)?;
            b.set_item("detail", py.None())?;
        }
    }
    d.set_item("backend", b)?;
    d.set_item("rwf_dontcache", machine.dontcache.words())?;
    d.set_item("file", py.None())?;
    if let Some(r) = file {
        let r = r.map_err(to_py)?;
        text.push('\n');
        text.push_str(&r.to_string());
        let f = PyDict::new(py);
        f.set_item("path", r.path.to_string_lossy().into_owned())?;
        f.set_item(
            "kind",
            match r.kind {
                nowait::FileKind::Regular => "regular file",
                nowait::FileKind::BlockDevice => "block device",
            },
        )?;
        f.set_item("fs", r.fs)?;
        f.set_item("size", r.size)?;
        match &r.direct {
            Ok(a) => {
                let a_d = PyDict::new(py);
                a_d.set_item("mem_align", a.mem)?;
                a_d.set_item("offset_align", a.offset)?;
                a_d.set_item("source", a.source.as_str())?;
                f.set_item("direct", a_d)?;
                f.set_item("direct_reason", py.None())?;
            }
            Err(why) => {
                f.set_item("direct", py.None())?;
                f.set_item("direct_reason", why)?;
            }
        }
        f.set_item("io_poll", r.io_poll)?;
        f.set_item("backend", r.backend.as_str())?;
        f.set_item("buffered_path", &r.buffered_path)?;
        f.set_item("direct_path", r.direct_path.clone())?;
        let nw = match r.rwf_nowait {
            NowaitProbe::Supported { cached: true } => "supported (byte 0 cached)".to_string(),
            NowaitProbe::Supported { cached: false } => "supported (byte 0 not cached)".to_string(),
            NowaitProbe::Unsupported { errno } => {
                format!("unsupported ({})", probe::errno_name(errno))
            }
            NowaitProbe::SyscallRefused { errno } => {
                format!("preadv2 refused ({})", probe::errno_name(errno))
            }
            NowaitProbe::Failed { errno } => format!("failed ({})", probe::errno_name(errno)),
        };
        f.set_item("rwf_nowait", nw)?;
        f.set_item("nowait_path_hit_ratio", r.nowait_state.hit_ratio)?;
        f.set_item("nowait_path_off", r.nowait_state.off.map(|o| o.to_string()))?;
        f.set_item("rwf_dontcache", r.rwf_dontcache.words(r.fs))?;
        d.set_item("file", f)?;
    }
    d.set_item("text", text)?;
    Ok(d)
}
