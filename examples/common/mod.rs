//! What every example does with its outcome: on a machine without CUDA (no driver, device or
//! NVRTC) it says so and shows what it can without a GPU; any other error fails the example.

use std::process::ExitCode;

use streamgraph::Error;

/// Runs `run`; without CUDA prints why and `instead`'s heading, then runs `instead` (e.g. the
/// pipeline's plan).
pub fn run_or(
    run: impl FnOnce() -> Result<(), Error>,
    heading: &str,
    instead: impl FnOnce() -> Result<(), Error>,
) -> ExitCode {
    let outcome = match run() {
        Err(e) if e.is_unavailable() => {
            println!("{e}");
            println!("{heading}\n");
            instead()
        }
        outcome => outcome,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic values in `[-scale, scale)` from `seed` (xorshift), for examples' inputs and
/// weights.
#[allow(dead_code)] // not every example draws values
pub fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}
