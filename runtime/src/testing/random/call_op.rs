//! The op of random programs' `call` statements: [`RandomCallOp`].

use crate::call::{BodyOp, CallStream, In, Out, StreamOp};
use crate::error::Result;
use crate::ffi::KernelArg;
use crate::module::Kernel;
use crate::operand::LaunchConfig;

/// The op of a random program's `call op(&mut dst, &src)`: a memset of `dst` to the call's
/// value, then two launches of the program's kernel on `dst` (`k(dst, value)` and
/// `k(dst, value + 1)`), the launches a `launch` statement of the program would issue. So a
/// captured call is three nodes in stream order (a memset, two kernels), the last one the
/// call's node. It declares `src` read and reads nothing: a call may read less than it
/// declares.
#[derive(Debug)]
pub struct RandomCallOp<'k> {
    kernel: &'k Kernel,
    config: LaunchConfig,
    value: u32,
}

impl<'k> RandomCallOp<'k> {
    /// The op of one issue of a `call` numbered `value`, launching `kernel` with `config`.
    pub fn new(kernel: &'k Kernel, config: LaunchConfig, value: u32) -> RandomCallOp<'k> {
        RandomCallOp {
            kernel,
            config,
            value,
        }
    }
}

// SAFETY: `issue` issues a memset of `dst` within its length and two launches of the
// program's kernel with `dst` as its buffer argument, on the given stream only: the work a
// `fill` and two `launch` statements of the program issue, with the kernel's arguments as its
// maker promised (`Module::kernel`). The kernel's module is kept by the launches
// (`CallStream::launch`). No allocation, event or synchronisation.
unsafe impl StreamOp for RandomCallOp<'_> {
    type Operands<'a> = (Out<'a, u32>, In<'a, u32>);

    fn issue(&self, stream: &CallStream<'_>, (dst, _src): &mut Self::Operands<'_>) -> Result<()> {
        stream.fill(dst, self.value)?;
        for value in [self.value, self.value.wrapping_add(1)] {
            stream.launch(
                self.kernel,
                self.config,
                &[dst.arg(), KernelArg::value(&value)],
            )?;
        }
        Ok(())
    }
}

impl BodyOp for RandomCallOp<'_> {}
