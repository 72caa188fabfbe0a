//! Values built once per CUDA context and kept for the process: the runtime's built-in
//! kernels (device blocks' conditional kernels, the random-number kernels).

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaContext;

use crate::error::Result;

/// A value of type `T` per context, built on first use.
pub(crate) struct PerContext<T> {
    built: Mutex<Vec<(usize, Arc<T>)>>,
}

impl<T> PerContext<T> {
    pub(crate) const fn new() -> PerContext<T> {
        PerContext {
            built: Mutex::new(Vec::new()),
        }
    }

    /// The value of `ctx`, built with `build` the first time (without the lock held, so that
    /// a slow build blocks no other context; a value built twice by racing threads keeps the
    /// first one).
    pub(crate) fn get(
        &self,
        ctx: &Arc<CudaContext>,
        build: impl FnOnce(&Arc<CudaContext>) -> Result<T>,
    ) -> Result<Arc<T>> {
        let key = ctx.cu_ctx() as usize;
        let find = |built: &[(usize, Arc<T>)]| {
            built
                .iter()
                .find(|(c, _)| *c == key)
                .map(|(_, v)| v.clone())
        };
        if let Some(v) = find(&self.built.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(v);
        }
        let value = Arc::new(build(ctx)?);
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = find(&built) {
            return Ok(v);
        }
        built.push((key, value.clone()));
        Ok(value)
    }
}
