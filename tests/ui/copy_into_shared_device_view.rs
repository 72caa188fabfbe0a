// A copy or fill writes device memory only through an exclusive borrow: a view of a buffer
// borrowed shared (`x.slice(..)` of a `&DeviceBuffer`) is no destination, even borrowed
// `&mut`. Here a live executable graph borrows `x` shared; the copy would change what its next
// replay reads.
use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, Stream};

pipeline! {
    pipeline Reads(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut y, &x);
    }
}

fn overwrite(
    s: &Stream,
    k: &Kernel,
    x: &DeviceBuffer<u32>,
    y: &mut DeviceBuffer<u32>,
    sevens: &DeviceBuffer<u32>,
) -> streamgraph::Result<()> {
    let exec = capture(s, Reads::new(x, y, k))?.instantiate()?;
    s.copy(&mut x.slice(..), sevens)?;
    s.fill(&mut x.slice(..), 7)?;
    exec.launch(s)?;
    Ok(())
}

fn main() {
    let _ = overwrite;
}
