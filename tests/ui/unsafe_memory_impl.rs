// Memory the driver reads and writes is named only through `unsafe` promises: a safe impl of
// the memory traits could aim a copy or fill at any address.
use streamgraph::{CopyTarget, DeviceMemory, DeviceRange, MemoryRef};

struct Anywhere(u64);

impl DeviceMemory for Anywhere {
    type Elem = u64;
    fn range(&self) -> DeviceRange {
        DeviceRange { device: 0, ptr: self.0, bytes: 8 }
    }
}

impl CopyTarget<u64> for Anywhere {
    fn copy_target(&self) -> MemoryRef<'_> {
        todo!()
    }
}

fn main() {}
