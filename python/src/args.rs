//! A call's Python arguments, checked, turned into the reads it makes and
//! the memory they land in ([`Plan`]); the open options.
//!
//! Offsets and sizes may be any iterable of ints (a list, a tuple, a
//! `range`, a generator) or an integer NumPy array; one int is one size for
//! every record. Every refusal says which argument is wrong and what to
//! pass instead, as `os.pread` and `io` do for theirs.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyTuple};

use crate::calls::{Kind, MAX_PARTS};
use crate::errors::to_py;
use crate::export::{Export, Landing};

/// The `direct=` option.
pub fn parse_direct(direct: &Bound<'_, PyAny>) -> PyResult<nowait::Direct> {
    if let Ok(b) = direct.cast::<pyo3::types::PyBool>() {
        return Ok(if b.is_true() {
            nowait::Direct::On
        } else {
            nowait::Direct::Off
        });
    }
    let s: String = direct.extract().map_err(|_| {
        PyTypeError::new_err("direct must be \"off\", \"auto\" or \"on\" (or a bool)")
    })?;
    match s.as_str() {
        "auto" => Ok(nowait::Direct::Auto),
        "on" => Ok(nowait::Direct::On),
        "off" => Ok(nowait::Direct::Off),
        other => Err(PyValueError::new_err(format!(
            "direct={other:?} is not a mode; use \"off\" (the default: through the page cache), \
             \"auto\" (O_DIRECT where the filesystem allows it, unaligned reads bounced) or \
             \"on\" (O_DIRECT or an error)"
        ))),
    }
}

/// The name `direct=` is reported under (`File.mode`).
pub fn direct_name(d: nowait::Direct) -> &'static str {
    match d {
        nowait::Direct::On => "on",
        nowait::Direct::Off => "off",
        nowait::Direct::Auto => "auto",
    }
}

/// The `nowait=` option.
pub fn parse_nowait(mode: &str) -> PyResult<nowait::NowaitMode> {
    match mode {
        "adaptive" => Ok(nowait::NowaitMode::Adaptive),
        "always" => Ok(nowait::NowaitMode::Always),
        "off" => Ok(nowait::NowaitMode::Off),
        other => Err(PyValueError::new_err(format!(
            "nowait={other:?} is not a mode; use \"adaptive\" (aread_at tries the page cache \
             first while the file mostly hits), \"always\" or \"off\" (every aread_at goes \
             through the ring)"
        ))),
    }
}

/// The `cache=` option.
pub fn parse_cache(policy: &str) -> PyResult<nowait::CachePolicy> {
    policy.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "cache={policy:?} is not a policy; use \"keep\" (the default: reads leave their \
             pages in the page cache), \"drop\" (RWF_DONTCACHE: the pages a read brings in are \
             dropped once copied) or \"adaptive\" (drop only while the file is scanned and too \
             large to stay cached)"
        ))
    })
}

/// Values from any iterable of ints or an integer NumPy array, each
/// checked by `check` (`what` names the argument in errors). At most
/// `MAX_PARTS` are taken.
fn ints<T>(
    obj: &Bound<'_, PyAny>,
    what: &str,
    check: impl Fn(i64) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let py = obj.py();
    let one = |item: Bound<'_, PyAny>| -> PyResult<T> {
        let v = item.extract::<i64>().map_err(|e: PyErr| {
            // An int too large for a file offset is an OverflowError, as for
            // read_at and os.pread; anything else is the wrong type.
            if e.is_instance_of::<PyOverflowError>(py) {
                PyOverflowError::new_err(format!(
                    "a value of {what} is out of range: file offsets and sizes are 0 to \
                     2**63 - 1 ({e})"
                ))
            } else {
                PyTypeError::new_err(format!("{what} must be ints: {e}"))
            }
        })?;
        check(v)
    };
    let too_many = || {
        PyValueError::new_err(format!(
            "more than {MAX_PARTS} {what} in one call; split the batch"
        ))
    };
    // Lists and tuples first: the usual case, and asking them for a
    // `dtype` would cost a formatted AttributeError per call.
    if let Ok(l) = obj.cast::<PyList>() {
        if l.len() > MAX_PARTS {
            return Err(too_many());
        }
        return l.iter().map(one).collect();
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        if t.len() > MAX_PARTS {
            return Err(too_many());
        }
        return t.iter().map(one).collect();
    }
    let mut obj = obj.clone();
    if let Ok(dtype) = obj.getattr("dtype") {
        // A NumPy array (or anything with a dtype): integers only, one
        // dimension; `tolist` makes Python ints in one C loop.
        let kind: String = dtype
            .getattr("kind")
            .and_then(|k| k.extract())
            .unwrap_or_default();
        if kind != "i" && kind != "u" {
            return Err(PyTypeError::new_err(format!(
                "{what} must be integers; this array's dtype is {}",
                dtype.str().map(|s| s.to_string()).unwrap_or_default()
            )));
        }
        let ndim: usize = obj.getattr("ndim").and_then(|n| n.extract()).unwrap_or(1);
        if ndim != 1 {
            return Err(PyTypeError::new_err(format!(
                "{what} must be a 1-D array; this one has {ndim} dimensions (ravel it)"
            )));
        }
        obj = obj.call_method0("tolist")?;
        if let Ok(l) = obj.cast::<PyList>() {
            if l.len() > MAX_PARTS {
                return Err(too_many());
            }
            return l.iter().map(one).collect();
        }
    }
    let it = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be an iterable of ints or an integer NumPy array, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let mut v = Vec::with_capacity(obj.len().unwrap_or(0).min(MAX_PARTS));
    for item in it {
        if v.len() == MAX_PARTS {
            return Err(too_many());
        }
        v.push(one(item?)?);
    }
    Ok(v)
}

/// A file offset from an int.
pub fn offset(o: i64) -> PyResult<u64> {
    u64::try_from(o)
        .map_err(|_| PyValueError::new_err(format!("offset {o} is negative; offsets count from 0")))
}

/// The offsets of a batch.
pub fn parse_offsets(offsets: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if offsets.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(
            "offsets must be an iterable of ints or an integer NumPy array (for one read use \
             read_at)",
        ));
    }
    ints(offsets, "offsets", offset)
}

/// One read's size.
pub fn check_size(s: i64) -> PyResult<usize> {
    let len = usize::try_from(s).map_err(|_| {
        PyValueError::new_err(format!("size {s} is negative; ask for 0 or more bytes"))
    })?;
    if len > nowait::MAX_READ {
        // Refused here, before a buffer of that size is allocated.
        return Err(to_py(nowait::Error::TooLarge {
            len,
            max: nowait::MAX_READ,
        }));
    }
    Ok(len)
}

/// The sizes of a batch of `n`: one int for all, or one per offset.
pub fn parse_sizes(size: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<usize>> {
    let scalar = size.is_instance_of::<PyInt>()
        || !(size.is_instance_of::<PyList>() || size.is_instance_of::<PyTuple>())
            && size
                .getattr("ndim")
                .and_then(|d| d.extract::<usize>())
                .is_ok_and(|d| d == 0);
    if scalar {
        // Too large for a read is an OverflowError here, as for read_at.
        let s = check_size(size.extract::<i64>()?)?;
        return Ok(vec![s; n]);
    }
    let v = ints(size, "sizes", Ok).map_err(|e| {
        let py = size.py();
        if e.is_instance_of::<PyTypeError>(py) {
            PyTypeError::new_err(format!(
                "size must be an int or an iterable of ints, one per offset ({e})"
            ))
        } else {
            e
        }
    })?;
    if v.len() != n {
        return Err(PyValueError::new_err(format!(
            "{} sizes for {n} offsets; pass one size per offset, or a single int",
            v.len()
        )));
    }
    v.into_iter().map(check_size).collect()
}

/// What a call reads.
pub enum Call<'a, 'py> {
    /// `read_at(offset, size)`.
    One { offset: u64, size: usize },
    /// `read_many(offsets, size)`.
    Many {
        offsets: &'a Bound<'py, PyAny>,
        size: &'a Bound<'py, PyAny>,
    },
    /// `read_into(buffer, offsets, size)`.
    Into {
        buffer: &'a Bound<'py, PyAny>,
        offsets: &'a Bound<'py, PyAny>,
        size: &'a Bound<'py, PyAny>,
    },
    /// `readinto(buffer, offset)`.
    IntoOne {
        buffer: &'a Bound<'py, PyAny>,
        offset: u64,
    },
    /// `read()`: the whole file.
    Whole,
}

/// The reads of a call and where they land.
pub struct Plan {
    pub kind: Kind,
    /// (offset, length) per part.
    pub reqs: Vec<(u64, usize)>,
    /// One memory every part lands in, part `i` at byte `.1[i]` (the
    /// caller's buffer, or the one `bytes` of `read()`); `None`: each part
    /// its own `bytes`.
    pub shared: Option<(Landing, Vec<usize>)>,
}

/// Reads longer than this are trimmed to the file's size before their
/// result is allocated (one `fstat` per call): a read of "up to N bytes"
/// past end of file costs the bytes it returns, not N. Shorter reads are
/// allocated at the size asked and shrunk in place when they come back
/// short, which costs less than the `fstat`.
const TRIM_FROM: usize = 256 << 10;

/// `read()` reads the file in parts of this size, many in flight at once.
const WHOLE_PART: usize = 2 << 20;

/// Trim each read to what the file holds at its offset when the call
/// starts (see [`TRIM_FROM`]). A file that grows meanwhile is read up to
/// the size it had then, as a read that ran at that moment would have;
/// one that shrinks gives a shorter result. Files whose size cannot be
/// learnt are not trimmed.
fn trim_to_eof(file: &nowait::File, reqs: &mut [(u64, usize)]) {
    if !reqs.iter().any(|&(_, len)| len > TRIM_FROM) {
        return;
    }
    let Ok(size) = file.len() else {
        return;
    };
    for (offset, len) in reqs.iter_mut() {
        let left = usize::try_from(size.saturating_sub(*offset)).unwrap_or(usize::MAX);
        *len = (*len).min(left);
    }
}

/// A caller's buffer and where each record lands in it: back to back,
/// record `i` at the sum of the sizes before it.
fn into_plan(
    buffer: &Bound<'_, PyAny>,
    sizes: &[usize],
    method: &str,
) -> PyResult<(Landing, Vec<usize>)> {
    let export = Export::writable(buffer, method)?;
    let mut dests = Vec::with_capacity(sizes.len());
    let mut need = 0usize;
    for &s in sizes {
        dests.push(need);
        need = need.checked_add(s).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{} records of up to {s} bytes overflow the address space",
                sizes.len()
            ))
        })?;
    }
    if export.len() < need {
        let what = match sizes.first() {
            Some(&s) if sizes.iter().all(|&x| x == s) => {
                format!("{} records of {s} bytes", sizes.len())
            }
            _ => format!("{} records of the sizes given", sizes.len()),
        };
        return Err(PyValueError::new_err(format!(
            "the buffer holds {} bytes but {what} need {need}; \
             pass a buffer of at least {need} bytes",
            export.len()
        )));
    }
    Ok((Landing::export(export), dests))
}

/// Check a call's arguments and lay out its reads.
pub fn plan(py: Python<'_>, file: &nowait::File, call: Call<'_, '_>) -> PyResult<Plan> {
    let plan = match call {
        Call::One { offset, size } => {
            let mut reqs = vec![(offset, size)];
            trim_to_eof(file, &mut reqs);
            Plan {
                kind: Kind::One,
                reqs,
                shared: None,
            }
        }
        Call::Many { offsets, size } => {
            let offsets = parse_offsets(offsets)?;
            let sizes = parse_sizes(size, offsets.len())?;
            let mut reqs: Vec<_> = offsets.into_iter().zip(sizes).collect();
            trim_to_eof(file, &mut reqs);
            Plan {
                kind: Kind::Many,
                reqs,
                shared: None,
            }
        }
        Call::Into {
            buffer,
            offsets,
            size,
        } => {
            let offsets = parse_offsets(offsets)?;
            let sizes = parse_sizes(size, offsets.len())?;
            let shared = into_plan(buffer, &sizes, "read_into")?;
            Plan {
                kind: Kind::Into,
                reqs: offsets.into_iter().zip(sizes).collect(),
                shared: Some(shared),
            }
        }
        Call::IntoOne { buffer, offset } => {
            let export = Export::writable(buffer, "readinto")?;
            let size = check_size(i64::try_from(export.len()).unwrap_or(i64::MAX))?;
            Plan {
                kind: Kind::IntoOne,
                reqs: vec![(offset, size)],
                shared: Some((Landing::export(export), vec![0])),
            }
        }
        Call::Whole => {
            let size = file.len().map_err(to_py)?;
            let size = usize::try_from(size)
                .ok()
                .filter(|&s| isize::try_from(s).is_ok() && s.div_ceil(WHOLE_PART) <= MAX_PARTS)
                .ok_or_else(|| {
                    PyOverflowError::new_err(format!(
                        "{} is {size} bytes, more than one bytes object holds; read it in parts \
                         with read_at or read_into",
                        file.path().display()
                    ))
                })?;
            let parts = size.div_ceil(WHOLE_PART);
            let reqs = (0..parts)
                .map(|i| {
                    let at = i * WHOLE_PART;
                    (at as u64, WHOLE_PART.min(size - at))
                })
                .collect();
            // One bytes the parts land in; for O_DIRECT, aligned buffers
            // per part joined at the end (see `Core::start`).
            let shared = if file.is_direct() {
                None
            } else {
                let dests = (0..parts).map(|i| i * WHOLE_PART).collect();
                Some((Landing::bytes(py, size)?, dests))
            };
            Plan {
                kind: Kind::Whole,
                reqs,
                shared,
            }
        }
    };
    Ok(plan)
}
