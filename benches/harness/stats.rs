//! Order statistics of repeated measurements.

/// p50 and p90 of a set of samples, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub p50: f64,
    pub p90: f64,
    pub n: usize,
}

/// The `q`-quantile (0 ≤ q ≤ 1) of sorted samples, linear between closest ranks.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Summarises `samples`; `None` when there are none or one is not a number.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(Summary {
        p50: quantile(&sorted, 0.5),
        p90: quantile(&sorted, 0.9),
        n: sorted.len(),
    })
}

/// Least-squares slope of `ln y` against `ln x`: the exponent of a power law `y ~ x^k`.
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Checks of this module that need no GPU; `bench-harness --self-test` runs them.
pub fn self_test() -> Result<(), String> {
    let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).ok_or("summary of five samples missing")?;
    if s.p50 != 3.0 || (s.p90 - 4.6).abs() > 1e-12 || s.n != 5 {
        return Err(format!("wrong summary of 1..=5: {s:?}"));
    }
    if summarize(&[]).is_some() || summarize(&[1.0, f64::NAN]).is_some() {
        return Err("summary of no samples or of a NaN must be missing".into());
    }
    let pts: Vec<(f64, f64)> = [10.0, 100.0, 1000.0]
        .iter()
        .map(|&x| (x, 3.0 * x))
        .collect();
    match log_log_slope(&pts) {
        Some(k) if (k - 1.0).abs() < 1e-12 => {}
        other => return Err(format!("slope of y = 3x must be 1, got {other:?}")),
    }
    if log_log_slope(&[(1.0, 1.0)]).is_some() {
        return Err("slope of one point must be missing".into());
    }
    Ok(())
}
