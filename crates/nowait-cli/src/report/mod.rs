//! Reports, the top floor under the commands: a bench job's text
//! (`text.rs`) and fio's JSON shape (`json.rs`), the sweep table
//! (`table.rs`), the words they share (`words.rs`), nowait's engine
//! against fio's in fio (`duel.rs`), the mixed scenario's per-stream
//! figures (`streams.rs`) and the `scan`
//! scenario's table (`scan.rs`). [`render`] writes the format
//! `--output-format` asks for.

pub mod duel;
pub mod json;
pub mod scan;
pub mod streams;
pub mod table;
pub mod text;
pub mod words;

use crate::base::host::host;
use crate::measure::row::Row;
use crate::model::job::Format;

/// The report of `rows` in `format`: the JSON document, or the text: the
/// host, each job's report, and the sweep table when there is more than
/// one row. With `peak`, `--peak`'s text or JSON.
pub fn render(rows: &[Row], format: Format, peak: bool) -> String {
    if format == Format::Json {
        let doc = json::doc(rows, peak);
        return serde_json::to_string_pretty(&doc).expect("JSON values serialise") + "\n";
    }
    let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
    let mut out = format!("host: {}\n", host(file));
    for r in rows {
        out.push('\n');
        out += &if peak {
            text::peak(&r.ours)
        } else {
            text::human(r)
        };
    }
    if rows.len() > 1 && !peak {
        out.push('\n');
        out += &table::table(rows);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row::fixture as row;

    #[test]
    fn text_and_json_of_one_job() {
        let r = row::example();
        let t = render(std::slice::from_ref(&r), Format::Normal, false);
        assert!(t.starts_with("host: ") && t.contains("IOPS=10.0k"), "{t}");
        let j = render(&[r.clone(), r], Format::Json, false);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    }
}
