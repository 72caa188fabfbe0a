//! Kernels (placeholder until the foundation lands).

/// A loaded module.
#[derive(Debug)]
pub struct Module {}

/// A kernel handle.
#[derive(Debug, Clone)]
pub struct Kernel {
    name: String,
}

impl Kernel {
    /// A kernel that can only be planned (no device, no code): for building a pipeline's plan
    /// on a machine without a GPU. Issuing it eagerly or capturing it is an error.
    pub fn for_planning(name: &str) -> Kernel {
        Kernel { name: name.to_owned() }
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
