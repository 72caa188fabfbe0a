// Naming raw memory for a copy is an `unsafe` promise that it is live and unaliased.
use streamgraph::{Memory, MemoryRef};

fn forge() -> MemoryRef<'static> {
    let host = Memory::PageableHost { ptr: std::ptr::null_mut(), bytes: 8 };
    MemoryRef::from_raw(host, 8)
}

fn main() {
    let _ = forge;
}
