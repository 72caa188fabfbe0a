//! What `pipeline!` requires of a launch's kernel and sizes and of parameters passed by
//! value, as traits whose diagnostics say what to write instead.

use crate::module::Kernel;

/// What `launch KERNEL<<<…>>>(…)` in [`pipeline!`](crate::Pipeline) accepts as `KERNEL`: a
/// [`Kernel`], or a reference to one.
///
/// ```
/// use streamgraph::{Kernel, LaunchKernel};
///
/// let k = Kernel::for_planning("scale");
/// assert_eq!((&&k).as_kernel().name(), "scale");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel",
    label = "`launch` expects a `Kernel` here",
    note = "a kernel comes from a loaded module (`Module::from_ptx`, then \
            `module.kernel(\"name\")`); pass it as a pipeline parameter such as `k: &Kernel` and \
            write `launch k<<<…>>>(…)`"
)]
pub trait LaunchKernel {
    /// The kernel.
    fn as_kernel(&self) -> &Kernel;
}

impl LaunchKernel for Kernel {
    fn as_kernel(&self) -> &Kernel {
        self
    }
}

// One impl per type rather than for every `&K`: a value that is not a kernel is then reported
// as itself (`&str`), without a note deriving it from an impl for references.
impl LaunchKernel for &Kernel {
    fn as_kernel(&self) -> &Kernel {
        self
    }
}

impl LaunchKernel for &mut Kernel {
    fn as_kernel(&self) -> &Kernel {
        self
    }
}

/// What a grid or block size of `launch KERNEL<<<GRID, BLOCK>>>` may be: a `u32`, a tuple of
/// two or three `u32`s, or a [`Dim3`](crate::Dim3).
///
/// ```
/// use streamgraph::{Dim3, LaunchDims};
///
/// assert_eq!(LaunchDims::dims((4u32, 2u32)), Dim3 { x: 4, y: 2, z: 1 });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a launch size",
    label = "a grid or block size is a `u32`, a tuple of two or three `u32`s, or a `Dim3`",
    note = "convert it where it is computed, e.g. `n.div_ceil(256) as u32` (or `u32::try_from(n)?` \
            in code that can fail), and pass `(x, y)` for two dimensions"
)]
pub trait LaunchDims {
    /// The size as a [`Dim3`](crate::Dim3).
    fn dims(self) -> crate::operand::Dim3;
}

impl LaunchDims for crate::operand::Dim3 {
    fn dims(self) -> crate::operand::Dim3 {
        self
    }
}

impl LaunchDims for u32 {
    fn dims(self) -> crate::operand::Dim3 {
        self.into()
    }
}

impl LaunchDims for (u32, u32) {
    fn dims(self) -> crate::operand::Dim3 {
        self.into()
    }
}

impl LaunchDims for (u32, u32, u32) {
    fn dims(self) -> crate::operand::Dim3 {
        self.into()
    }
}

/// What a `pipeline!` parameter declared without `&` must be: `Copy`, since every run binds a
/// copy of it. Implemented for every `Copy` type; `pipeline!` checks it on each such parameter.
#[diagnostic::on_unimplemented(
    message = "pipeline parameter of type `{Self}` is not `Copy`",
    label = "a parameter that is not a reference must be `Copy`",
    note = "declare it as a reference, `&{Self}`; host data that kernels use goes into a device \
            buffer first, `DeviceBuffer::from_host(&device, &data)`, passed as \
            `&DeviceBuffer<T>`"
)]
pub trait ValueParameter {
    /// Compiles for `Copy` types only; does nothing.
    fn check() {}
}

impl<T: Copy> ValueParameter for T {}
