// A copy into pinned host memory needs the buffer borrowed `&mut`: no `&[T]` of it can be
// alive while the DMA is issued.
use streamgraph::{DeviceBuffer, PinnedBuffer, Stream};

fn read_back(s: &Stream, host: &PinnedBuffer<u32>, x: &DeviceBuffer<u32>) -> streamgraph::Result<()> {
    let seen = host.as_slice()?;
    s.copy(&mut &*host, x)?;
    println!("{:?}", &*seen);
    Ok(())
}

fn main() {
    let _ = read_back;
}
