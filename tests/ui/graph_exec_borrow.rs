// A buffer used by a graph cannot be touched mutably (or freed) while the executable graph
// that owns the pipeline can still launch.
use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, Stream};

pipeline! {
    pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch k<<<1, 256>>>(&mut x, 2.0f32, n);
    }
}

fn replay(origin: &Stream, k: &Kernel, x: &mut DeviceBuffer<f32>) -> streamgraph::Result<()> {
    let exec = capture(origin, Scale::new(x, k, 256))?.instantiate()?;
    x.copy_from_host(&[0.0; 256])?; // the exec still borrows `x`
    exec.launch(origin)?;
    Ok(())
}

fn main() {
    let _ = replay;
}
