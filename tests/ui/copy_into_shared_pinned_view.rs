// A copy writes pinned memory only through an exclusive borrow: a view of a pinned buffer
// borrowed shared (`host.slice(..)` of a `&PinnedBuffer`) is no destination, even borrowed
// `&mut`, so no copy can be queued into it while a guard of it is read.
use streamgraph::{DeviceBuffer, PinnedBuffer, Stream};

fn read_back(s: &Stream, host: &PinnedBuffer<u32>, x: &DeviceBuffer<u32>) -> streamgraph::Result<()> {
    let seen = host.as_slice()?;
    s.copy(&mut host.slice(0..4), x)?;
    println!("{:?}", &*seen);
    Ok(())
}

fn main() {
    let _ = read_back;
}
