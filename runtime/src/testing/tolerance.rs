//! How an element of an eager run's output and one of a replay's are compared: exactly, or
//! within a [`Tolerance`].

use std::fmt;

/// How far two elements may be apart and still match: `|a - b| <= absolute + relative ·
/// max(|a|, |b|)`. [`Tolerance::EXACT`] (the default) compares bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tolerance {
    /// The absolute part.
    pub absolute: f64,
    /// The part relative to the larger magnitude.
    pub relative: f64,
}

impl Tolerance {
    /// Bitwise equality (the default).
    pub const EXACT: Tolerance = Tolerance {
        absolute: 0.0,
        relative: 0.0,
    };

    /// `|a - b| <= absolute`.
    pub fn absolute(absolute: f64) -> Tolerance {
        Tolerance {
            absolute,
            relative: 0.0,
        }
    }

    /// `|a - b| <= relative · max(|a|, |b|)`.
    pub fn relative(relative: f64) -> Tolerance {
        Tolerance {
            absolute: 0.0,
            relative,
        }
    }

    /// Whether this is bitwise equality.
    pub fn is_exact(&self) -> bool {
        self.absolute == 0.0 && self.relative == 0.0
    }

    /// Whether the floats `a` and `b` match: equal bits, or both finite and close enough.
    pub fn floats_match(&self, a: f64, b: f64) -> bool {
        if a.to_bits() == b.to_bits() {
            return true;
        }
        if self.is_exact() || !a.is_finite() || !b.is_finite() {
            return false;
        }
        (a - b).abs() <= self.absolute + self.relative * a.abs().max(b.abs())
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_exact() {
            f.write_str("bitwise")
        } else {
            write!(
                f,
                "within {:e} absolute + {:e} relative",
                self.absolute, self.relative
            )
        }
    }
}

/// An element type [`compare`](super::compare()) can compare. Integers compare exactly; `f32` and `f64`
/// bitwise, or within a [`Tolerance`] when one is set. Implement it for your own element
/// types (exact comparison is usually right for them).
pub trait Compared: Copy + fmt::Debug + 'static {
    /// Whether `self` (from an eager run) and `other` (from a replay) match.
    fn matches(&self, other: &Self, tolerance: Tolerance) -> bool;
}

macro_rules! exactly {
    ($($t:ty),*) => {$(
        impl Compared for $t {
            fn matches(&self, other: &Self, _: Tolerance) -> bool {
                self == other
            }
        }
    )*};
}
exactly!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl Compared for f32 {
    fn matches(&self, other: &Self, tolerance: Tolerance) -> bool {
        self.to_bits() == other.to_bits() || tolerance.floats_match(*self as f64, *other as f64)
    }
}

impl Compared for f64 {
    fn matches(&self, other: &Self, tolerance: Tolerance) -> bool {
        tolerance.floats_match(*self, *other)
    }
}

impl<T: Compared, const N: usize> Compared for [T; N] {
    fn matches(&self, other: &Self, tolerance: Tolerance) -> bool {
        self.iter().zip(other).all(|(a, b)| a.matches(b, tolerance))
    }
}
