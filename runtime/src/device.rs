//! Devices.
/// A CUDA device.
#[derive(Debug, Clone)]
pub struct Device {}
