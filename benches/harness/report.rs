//! Rows of results, the one comparison table, and the JSON file (the schema the Python peers
//! print too: `{workload, system, variant, metric, unit, p50, p90, n, params, note}`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::stats;

/// One measured (or derived) quantity of one system.
#[derive(Debug, Clone)]
pub struct Row {
    pub workload: &'static str,
    pub system: String,
    pub variant: String,
    pub metric: String,
    pub unit: String,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub n: usize,
    pub params: Value,
    /// Why there are no numbers, or how they were derived.
    pub note: Option<String>,
}

impl Row {
    pub fn to_json(&self) -> Value {
        json!({
            "workload": self.workload,
            "system": self.system,
            "variant": self.variant,
            "metric": self.metric,
            "unit": self.unit,
            "p50": self.p50,
            "p90": self.p90,
            "n": self.n,
            "params": self.params,
            "note": self.note,
        })
    }
}

/// Rows computed from other rows: W7's log-log slope of capture + instantiate time against node
/// count, per system (from the p50s, and from the p90s).
pub fn derived(rows: &[Row]) -> Vec<Row> {
    type Points = Vec<(f64, f64)>;
    let mut by_system: BTreeMap<&str, (Points, Points)> = BTreeMap::new();
    for r in rows {
        if r.workload != "W7" || r.metric != "total" {
            continue;
        }
        let (Some(nodes), Some(p50), Some(p90)) = (r.params["nodes"].as_f64(), r.p50, r.p90) else {
            continue;
        };
        let e = by_system.entry(&r.system).or_default();
        e.0.push((nodes, p50));
        e.1.push((nodes, p90));
    }
    by_system
        .into_iter()
        .filter_map(|(system, (p50s, p90s))| {
            let slope = stats::log_log_slope(&p50s)?;
            Some(Row {
                workload: "W7",
                system: system.to_owned(),
                variant: "capture+instantiate".into(),
                metric: "log_log_slope".into(),
                unit: "1".into(),
                p50: Some(slope),
                p90: stats::log_log_slope(&p90s),
                n: p50s.len(),
                params: json!({"nodes": p50s.iter().map(|p| p.0).collect::<Vec<_>>()}),
                note: Some("least-squares slope of ln(total) on ln(nodes)".into()),
            })
        })
        .collect()
}

/// `{"kernels": 10000, "width": 4}` → `kernels=10000 width=4`.
pub fn params_text(params: &Value) -> String {
    match params {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A number with about four significant digits.
pub fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 1.0 => format!("{v:.3}"),
        Some(v) => format!("{v:.4}"),
    }
}

/// The one table: a line per (workload, variant, metric, params), p50 and p90 per system, and
/// each other system's p50 over the first system's (`raw`).
pub fn table(rows: &[Row], systems: &[&str]) -> String {
    type Key = (String, String, String, String, String);
    let mut order: Vec<Key> = Vec::new();
    let mut cells: BTreeMap<(Key, String), &Row> = BTreeMap::new();
    for r in rows {
        let key = (
            r.workload.to_owned(),
            r.variant.clone(),
            r.metric.clone(),
            params_text(&r.params),
            r.unit.clone(),
        );
        if !order.contains(&key) {
            order.push(key.clone());
        }
        cells.insert((key, r.system.clone()), r);
    }
    let mut header = vec![
        "wl".to_owned(),
        "variant".into(),
        "metric".into(),
        "params".into(),
        "unit".into(),
    ];
    for s in systems {
        header.push(format!("{s} p50"));
        header.push(format!("{s} p90"));
    }
    for s in systems.iter().skip(1) {
        header.push(format!("{s}/{}", systems[0]));
    }
    let mut lines = vec![header];
    let mut notes: Vec<String> = Vec::new();
    for key in &order {
        let mut line = vec![
            key.0.clone(),
            key.1.clone(),
            key.2.clone(),
            key.3.clone(),
            key.4.clone(),
        ];
        for s in systems {
            match cells.get(&(key.clone(), (*s).to_owned())) {
                Some(r) if r.p50.is_some() => {
                    line.push(num(r.p50));
                    line.push(num(r.p90));
                }
                Some(r) => {
                    let why = r.note.clone().unwrap_or_else(|| "no data".into());
                    let tag = match notes.iter().position(|n| *n == why) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(why);
                            notes.len()
                        }
                    };
                    line.push(format!("[{tag}]"));
                    line.push(String::new());
                }
                None => {
                    line.push("-".into());
                    line.push(String::new());
                }
            }
        }
        let base = cells
            .get(&(key.clone(), systems[0].to_owned()))
            .and_then(|r| r.p50);
        for s in systems.iter().skip(1) {
            let other = cells
                .get(&(key.clone(), (*s).to_owned()))
                .and_then(|r| r.p50);
            line.push(match (other, base) {
                (Some(o), Some(b)) if b != 0.0 => format!("{:.3}", o / b),
                _ => "-".into(),
            });
        }
        lines.push(line);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cols: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < 5 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cols.join("  ").trim_end());
        if i == 0 {
            let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    out
}
