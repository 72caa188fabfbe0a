//! The element types of the BLAS ops and where an op is made.

use crate::device::Device;
use crate::error::Result;
use crate::ffi::blas::{ElemType, Scalars};
use crate::memory::Pod;
use crate::stream::Stream;

mod sealed {
    /// An element type of the BLAS ops, as the library names it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        F32,
        F64,
        F16,
        BF16,
    }

    /// Implemented for the element types cuBLAS computes in here, and only for them.
    pub trait Sealed: Copy {
        const KIND: Kind;
        const ONE: Self;
        const ZERO: Self;
        /// The value in the compute type's precision (`f64` for `f64`, `f32` otherwise).
        fn to_f64(self) -> f64;
    }

    impl Sealed for f32 {
        const KIND: Kind = Kind::F32;
        const ONE: f32 = 1.0;
        const ZERO: f32 = 0.0;
        fn to_f64(self) -> f64 {
            f64::from(self)
        }
    }

    impl Sealed for f64 {
        const KIND: Kind = Kind::F64;
        const ONE: f64 = 1.0;
        const ZERO: f64 = 0.0;
        fn to_f64(self) -> f64 {
            self
        }
    }

    impl Sealed for half::f16 {
        const KIND: Kind = Kind::F16;
        const ONE: half::f16 = half::f16::ONE;
        const ZERO: half::f16 = half::f16::ZERO;
        fn to_f64(self) -> f64 {
            self.to_f64()
        }
    }

    impl Sealed for half::bf16 {
        const KIND: Kind = Kind::BF16;
        const ONE: half::bf16 = half::bf16::ONE;
        const ZERO: half::bf16 = half::bf16::ZERO;
        fn to_f64(self) -> f64 {
            self.to_f64()
        }
    }
}

/// An element type of [`super::Gemm`] and [`super::StridedBatchedGemm`]: `f32` and `f64`
/// (computed in their own precision), [`half::f16`] and [`half::bf16`] (computed in `f32`).
pub trait GemmElem: Pod + Send + Sync + sealed::Sealed + std::fmt::Debug {}

impl GemmElem for f32 {}
impl GemmElem for f64 {}
impl GemmElem for half::f16 {}
impl GemmElem for half::bf16 {}

/// An element type of [`super::Matmul`] and [`super::MatmulBias`] (cuBLASLt): `f32`,
/// [`half::f16`] and [`half::bf16`], computed in `f32`.
pub trait MatmulElem: GemmElem {}

impl MatmulElem for f32 {}
impl MatmulElem for half::f16 {}
impl MatmulElem for half::bf16 {}

/// The library's name of `T`.
pub(super) fn elem_type<T: GemmElem>() -> ElemType {
    match T::KIND {
        sealed::Kind::F32 => ElemType::F32,
        sealed::Kind::F64 => ElemType::F64,
        sealed::Kind::F16 => ElemType::F16,
        sealed::Kind::BF16 => ElemType::BF16,
    }
}

/// `alpha` and `beta` in `T`'s compute type.
pub(super) fn scalars<T: GemmElem>(alpha: T, beta: T) -> Scalars {
    match T::KIND {
        sealed::Kind::F64 => Scalars::F64 {
            alpha: alpha.to_f64(),
            beta: beta.to_f64(),
        },
        _ => Scalars::F32 {
            alpha: alpha.to_f64() as f32,
            beta: beta.to_f64() as f32,
        },
    }
}

/// `1` and `0` of `T`.
pub(super) fn one_zero<T: GemmElem>() -> (T, T) {
    (T::ONE, T::ZERO)
}

/// Where an op is made: a [`Device`], or a [`Stream`]'s device. The op's handle and workspace
/// live there, and it is issued on that device's streams.
pub trait OnDevice {
    /// The device.
    fn op_device(&self) -> Result<Device>;
}

impl OnDevice for Device {
    fn op_device(&self) -> Result<Device> {
        Ok(self.clone())
    }
}

impl OnDevice for Stream {
    fn op_device(&self) -> Result<Device> {
        Ok(self.device())
    }
}

/// The workspace an op allocates by default: what NVIDIA recommends for cuBLAS and
/// cuBLASLt, 32 MiB on Hopper and later, 4 MiB before.
pub(super) fn default_workspace(device: &Device) -> Result<usize> {
    let (major, _) = device.compute_capability()?;
    Ok(if major >= 9 { 32 << 20 } else { 4 << 20 })
}
