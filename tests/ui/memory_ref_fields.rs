// A `MemoryRef` names live memory: safe code cannot change the memory it names.
use streamgraph::MemoryRef;

fn retarget(r: &mut MemoryRef<'_>) {
    r.memory = streamgraph::Memory::PageableHost { ptr: std::ptr::null_mut(), bytes: 8 };
}

fn main() {
    let _ = retarget;
}
