use streamgraph::{CallStream, DeviceBuffer, DeviceFlag, In, Kernel, Out, StreamOp};

/// Reads `a`, writes `c`.
struct Scale;

// SAFETY: issues nothing.
unsafe impl StreamOp for Scale {
    type Operands<'a> = (Out<'a, f32>, In<'a, f32>);
    fn issue(&self, _: &CallStream<'_>, _: &mut Self::Operands<'_>) -> streamgraph::Result<()> {
        Ok(())
    }
}

streamgraph::pipeline! {
    pipeline P(c: &mut DeviceBuffer<f32>, a: &DeviceBuffer<f32>, scale: &Scale) {
        stream main;
        main: call scale(&mut c, &a);
    }
}

/// The case's program.
pub fn main() {
    let _ = (
        P::PROGRAM,
        std::marker::PhantomData::<(&DeviceFlag, &Kernel)>,
    );
}
