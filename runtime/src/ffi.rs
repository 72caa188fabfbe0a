//! FFI
