//! The report: the markdown table printed at the end and `target/bench/summary.json`, built
//! section by section. Each measured thing writes its own section (its lines and its summary
//! keys) through [`Report`]; this file only knows how figures are rounded and where they go.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use crate::plan::Plan;

/// A figure of a child's result; NaN if the child did not give it.
pub(crate) fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// A JSON number, or null for NaN (a figure that was not measured).
fn jnum(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The table's lines and the summary's keys, in the making.
#[derive(Default)]
pub(crate) struct Report {
    summary: serde_json::Map<String, Value>,
    lines: Vec<String>,
}

impl Report {
    /// Adds a line to the table.
    pub(crate) fn line(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    /// Puts a figure into the summary, rounded to `digits` decimals (null if not measured).
    pub(crate) fn put(&mut self, key: &str, value: f64, digits: i32) {
        self.summary
            .insert(key.to_owned(), jnum(round(value, digits)));
    }

    /// How the run was made: the summary's `mode`, `pinned` and `machine`, and the table's
    /// last line.
    pub(crate) fn footer(&mut self, plan: &Plan, machine: &str) {
        self.summary.insert(
            "mode".into(),
            json!(if plan.quick { "quick" } else { "full" }),
        );
        self.summary.insert("pinned".into(), json!(plan.pin));
        self.summary.insert("machine".into(), json!(machine));
        self.line(format!(
            "Machine: {machine}. Reproduce: `cargo bench --bench overhead`{}.",
            if plan.pin { " -- --pin" } else { "" }
        ));
    }

    fn table(&self) -> String {
        self.lines.join("\n") + "\n"
    }

    /// Prints the table and writes `target/bench/summary.json` and `target/bench/table.md`.
    pub(crate) fn write(&self, started: Instant) {
        let table = self.table();
        println!("\n{table}");
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
        std::fs::create_dir_all(&dir).expect("create target/bench");
        let summary = serde_json::to_string_pretty(&self.summary).expect("serialize the summary");
        std::fs::write(dir.join("summary.json"), summary + "\n").expect("write summary.json");
        std::fs::write(dir.join("table.md"), &table).expect("write table.md");
        println!(
            "wrote {} (and table.md) in {:.1} s",
            dir.join("summary.json").display(),
            started.elapsed().as_secs_f64()
        );
    }
}
