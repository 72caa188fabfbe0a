//! Runs one workload on several systems in one process: each system's case is set up, warmed
//! up, then sampled alternately (A B A B …) so that drifting clocks and thermal state hit every
//! system alike.

use serde_json::Value;

use crate::gpu::BenchError;
use crate::report::Row;
use crate::stats;

/// One measured quantity of a workload, e.g. `replay` / `device_per_node` in µs.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub variant: &'static str,
    pub metric: &'static str,
    pub unit: &'static str,
}

/// Shorthand for a [`Metric`].
pub const fn metric(variant: &'static str, metric: &'static str, unit: &'static str) -> Metric {
    Metric {
        variant,
        metric,
        unit,
    }
}

/// A workload set up on one system, ready to be sampled.
pub trait Case {
    /// Runs the workload once and returns one value per metric of its [`Spec`], in order.
    fn sample(&mut self) -> Result<Vec<f64>, BenchError>;
}

/// What one workload measures and how often.
#[derive(Debug, Clone)]
pub struct Spec {
    /// `W1` … `W7`.
    pub workload: &'static str,
    /// Sizes and shapes, reported with every row (`{"kernels": 10000}`).
    pub params: Value,
    pub metrics: Vec<Metric>,
    pub warmup: usize,
    pub reps: usize,
}

/// A system's attempt at setting up a case.
pub type Setup<'a> = (&'static str, Result<Box<dyn Case + 'a>, BenchError>);

/// Warms up every case that was set up, samples them alternately `spec.reps` times, and returns
/// one row per system and metric. A system whose setup or a sample fails gets rows without
/// numbers that say why.
pub fn run(spec: &Spec, setups: Vec<Setup<'_>>) -> Vec<Row> {
    struct Live<'a> {
        system: &'static str,
        case: Box<dyn Case + 'a>,
        samples: Vec<Vec<f64>>,
        failed: Option<String>,
    }
    let mut rows = Vec::new();
    let mut live = Vec::new();
    for (system, setup) in setups {
        match setup {
            Ok(case) => live.push(Live {
                system,
                case,
                samples: Vec::new(),
                failed: None,
            }),
            Err(e) => rows.extend(failed_rows(spec, system, &e.to_string())),
        }
    }
    let record = |l: &mut Live<'_>, keep: bool| {
        if l.failed.is_some() {
            return;
        }
        match l.case.sample() {
            Ok(v) if v.len() == spec.metrics.len() => {
                if keep {
                    l.samples.push(v);
                }
            }
            Ok(v) => {
                l.failed = Some(format!(
                    "case returned {} values for {} metrics",
                    v.len(),
                    spec.metrics.len()
                ))
            }
            Err(e) => l.failed = Some(e.to_string()),
        }
    };
    for _ in 0..spec.warmup {
        for l in live.iter_mut() {
            record(l, false);
        }
    }
    for _ in 0..spec.reps {
        for l in live.iter_mut() {
            record(l, true);
        }
    }
    for l in live {
        if let Some(why) = &l.failed {
            rows.extend(failed_rows(spec, l.system, why));
            continue;
        }
        for (i, m) in spec.metrics.iter().enumerate() {
            let column: Vec<f64> = l.samples.iter().map(|s| s[i]).collect();
            let summary = stats::summarize(&column);
            rows.push(Row {
                workload: spec.workload,
                system: l.system.to_owned(),
                variant: m.variant.to_owned(),
                metric: m.metric.to_owned(),
                unit: m.unit.to_owned(),
                p50: summary.map(|s| s.p50),
                p90: summary.map(|s| s.p90),
                n: summary.map_or(0, |s| s.n),
                params: spec.params.clone(),
                note: summary.is_none().then(|| "no valid samples".to_owned()),
            });
        }
    }
    rows
}

fn failed_rows(spec: &Spec, system: &'static str, why: &str) -> Vec<Row> {
    spec.metrics
        .iter()
        .map(|m| Row {
            workload: spec.workload,
            system: system.to_owned(),
            variant: m.variant.to_owned(),
            metric: m.metric.to_owned(),
            unit: m.unit.to_owned(),
            p50: None,
            p90: None,
            n: 0,
            params: spec.params.clone(),
            note: Some(why.to_owned()),
        })
        .collect()
}
