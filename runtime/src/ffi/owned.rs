//! [`Owned`]: a cudarc value (an allocation, a loaded module) that the runtime keeps only for
//! what it owns.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;

/// A cudarc value kept for what it owns (an allocation, a loaded module): only dropped or
/// handed back whole, never used in between, so it is unwind-safe like the runtime's handles.
pub(crate) struct Owned(AssertUnwindSafe<Box<dyn Any + Send + Sync>>);

impl Owned {
    pub(crate) fn new<T: Any + Send + Sync>(value: T) -> Owned {
        Owned(AssertUnwindSafe(Box::new(value)))
    }

    /// The value, when it is a `T`.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }

    /// The value, when it is a `T`; `Err(self)` otherwise.
    pub(super) fn take<T: Any>(self) -> std::result::Result<T, Owned> {
        let AssertUnwindSafe(boxed) = self.0;
        boxed
            .downcast::<T>()
            .map(|v| *v)
            .map_err(|b| Owned(AssertUnwindSafe(b)))
    }
}

impl fmt::Debug for Owned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Owned")
    }
}
