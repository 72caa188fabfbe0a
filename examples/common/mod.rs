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
