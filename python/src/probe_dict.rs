//! `nowait.probe()`: the library's probe document (`nowait::ProbeDoc`, the
//! shape the C library's JSON has too) as a dict, with the text `nowait
//! probe` prints under "text".

use std::path::PathBuf;

use nowait::probe;
use nowait::ProbeDoc;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;

pub fn probe(py: Python<'_>, path: Option<PathBuf>) -> PyResult<Bound<'_, PyDict>> {
    let (machine, file) = py.detach(|| {
        let m = probe::machine();
        let f = path.as_ref().map(|p| probe::file(p, &m));
        (m, f)
    });
    let file = file.transpose().map_err(to_py)?;
    let mut text = machine.to_string();
    if let Some(r) = &file {
        text.push('\n');
        text.push_str(&r.to_string());
    }
    // The document through JSON: serde's shape, read by Python's own
    // parser, so the dict and the C library's JSON agree key for key.
    let json = serde_json::to_string(&ProbeDoc::new(&machine, file.as_ref()))
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    let d = py
        .import("json")?
        .call_method1("loads", (json,))?
        .cast_into::<PyDict>()?;
    d.set_item("text", text)?;
    Ok(d)
}
