// Buffer elements are plain data whose every bit pattern is a value: a kernel or copy could
// write 2 into a `bool`.
use streamgraph::{Device, DeviceBuffer};

fn main() -> streamgraph::Result<()> {
    let device = Device::new(None)?;
    let flags = DeviceBuffer::<bool>::zeros(&device, 4)?;
    let _ = flags.to_vec()?;
    Ok(())
}
