//! Parameter keys: what an argument update compares before it walks a statement, so that it
//! walks only the statements that read a parameter that changed.
//!
//! `pipeline!` writes one key per parameter ([`Pipeline::param_keys`](super::Pipeline::param_keys))
//! and gives each statement whose expressions are functions of the parameters they name the
//! set of those parameters ([`Issuer::unchanged`](super::Issuer::unchanged)). An argument
//! update compares the new keys with those of the values its nodes run and skips the
//! statements none of whose parameters changed. A parameter whose type has no key counts as
//! changed on every update.

use crate::memory::{DeviceBuffer, DeviceFlag, DeviceView, DeviceViewMut};
use crate::module::Kernel;
use crate::operand::{Dim3, LaunchConfig};

/// A pipeline parameter's key: bytes equal for two values when every expression of a
/// pipeline computes the same from either, so that an argument update
/// ([`GraphExec::update_args`](crate::GraphExec::update_args)) need not evaluate the
/// statements that read only parameters whose keys did not change.
///
/// Implemented for the integer, float and `bool` types, [`DeviceBuffer`] and its views (the
/// memory they name, not its contents), [`DeviceFlag`], [`Kernel`] (the function),
/// [`Dim3`], [`LaunchConfig`], references, `Option`, tuples, arrays, and slices of up to
/// [`MAX_KEYED_ELEMENTS`] elements (longer ones have no key). Implement it for a parameter
/// type of your own (say, a struct of kernels) by writing the keys of what its expressions
/// read:
///
/// ```
/// use streamgraph::{Kernel, KeyWriter, ParamKey};
/// struct Kernels { scale: Kernel, add: Kernel }
/// impl ParamKey for Kernels {
///     fn key(&self, out: &mut KeyWriter<'_>) {
///         self.scale.key(out);
///         self.add.key(out);
///     }
/// }
/// ```
///
/// A key that stays equal while what a pipeline's expressions compute from the value changes
/// makes an argument update keep running the old arguments (as a `Hash` that disagrees with
/// `Eq` makes a map miss): a logic error, never memory unsafety — a graph keeps the memory its
/// nodes use alive, and an update never skips a node that touches host memory.
pub trait ParamKey {
    /// Writes the key of `self` to `out`.
    fn key(&self, out: &mut KeyWriter<'_>);
}

/// The most elements a slice's key holds: a longer slice has no key (comparing it would cost
/// what walking its statements costs).
pub const MAX_KEYED_ELEMENTS: usize = 256;

/// Where a [`ParamKey`] writes its key.
#[derive(Debug)]
pub struct KeyWriter<'a> {
    bytes: &'a mut Vec<u8>,
    known: bool,
}

impl KeyWriter<'_> {
    /// Appends `bytes` to the key.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Appends `value` to the key.
    #[inline]
    pub fn write_u64(&mut self, value: u64) {
        self.write(&value.to_le_bytes());
    }

    /// The value has no key: the parameter counts as changed on every update.
    pub fn unknown(&mut self) {
        self.known = false;
    }
}

/// The keys of a pipeline value's parameters, in declaration order.
#[derive(Debug, Default, Clone)]
pub struct ParamKeys {
    bytes: Vec<u8>,
    /// Where each parameter's key ends in `bytes`.
    ends: Vec<u32>,
    /// The parameters without a key, as in [`param_bit`].
    unknown: u64,
}

/// The bit of parameter `i` in the parameter sets of argument updates and
/// [`Issuer::unchanged`](super::Issuer::unchanged): bit `i`, and bit 63 for every parameter
/// from the 64th on.
#[inline]
pub const fn param_bit(i: usize) -> u64 {
    1 << if i < 63 { i } else { 63 }
}

impl ParamKeys {
    /// No parameters.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.unknown = 0;
    }

    /// The next parameter's key is `value`'s.
    pub fn keyed<T: ParamKey + ?Sized>(&mut self, value: &T) {
        let i = self.ends.len();
        let start = self.bytes.len();
        let mut out = KeyWriter {
            bytes: &mut self.bytes,
            known: true,
        };
        value.key(&mut out);
        if !out.known {
            self.bytes.truncate(start);
            self.unknown |= param_bit(i);
        }
        self.ends.push(self.bytes.len() as u32);
    }

    /// The next parameter has no key.
    pub fn unkeyed(&mut self) {
        self.unknown |= param_bit(self.ends.len());
        self.ends.push(self.bytes.len() as u32);
    }

    /// The parameters whose keys differ between `self` and `new` (see [`param_bit`]), those
    /// without a key among them; every parameter when the two hold different numbers of
    /// parameters or none.
    pub(crate) fn changed(&self, new: &ParamKeys) -> u64 {
        if self.ends.len() != new.ends.len() || self.ends.is_empty() {
            return !0;
        }
        let unknown = self.unknown | new.unknown;
        if self.bytes == new.bytes && self.ends == new.ends {
            // What a graph set's relaunch of a key meets: one comparison.
            return unknown;
        }
        if self.ends == new.ends {
            unknown | changed_in_layout(&self.bytes, &new.bytes, &self.ends)
        } else {
            unknown | changed_by_parameter(self, new)
        }
    }
}

/// The parameters whose keys differ between `a` and `b`, two key buffers of one layout (each
/// parameter's key ending at `ends`): compared eight bytes at a time, each differing byte
/// naming its parameter — what a comparison per parameter finds, without a call per parameter.
fn changed_in_layout(a: &[u8], b: &[u8], ends: &[u32]) -> u64 {
    let mut changed = 0;
    // The parameter whose key holds the byte at hand: ends only grow, so it only moves on.
    let mut p = 0;
    let mut name = |mut diff: u64, at: usize, changed: &mut u64| {
        while diff != 0 {
            let byte = at + (diff.trailing_zeros() / 8) as usize;
            while ends.get(p).is_some_and(|&end| end as usize <= byte) {
                p += 1;
            }
            *changed |= param_bit(p);
            // The word's other bytes of this parameter say nothing more.
            let end = ends.get(p).map_or(usize::MAX, |&end| end as usize);
            if end >= at + 8 {
                break;
            }
            diff &= !0u64 << ((end - at) * 8);
        }
    };
    let mut at = 0;
    while let (Some(x), Some(y)) = (a.get(at..at + 8), b.get(at..at + 8)) {
        let diff = word(x) ^ word(y);
        if diff != 0 {
            name(diff, at, &mut changed);
        }
        at += 8;
    }
    let (x, y) = (a.get(at..).unwrap_or(&[]), b.get(at..).unwrap_or(&[]));
    let mut diff = 0;
    for (i, (x, y)) in x.iter().zip(y).enumerate() {
        diff |= u64::from(x ^ y) << (8 * i);
    }
    if diff != 0 {
        name(diff, at, &mut changed);
    }
    changed
}

/// Eight bytes as a little-endian word (byte `i` in bits `8i..8i + 8`).
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// [`ParamKeys::changed`] of two key sets of other layouts: parameter by parameter.
fn changed_by_parameter(old: &ParamKeys, new: &ParamKeys) -> u64 {
    let mut changed = 0;
    let (mut a, mut b) = (0, 0);
    for (i, (&end_a, &end_b)) in old.ends.iter().zip(&new.ends).enumerate() {
        let (end_a, end_b) = (end_a as usize, end_b as usize);
        if old.bytes.get(a..end_a) != new.bytes.get(b..end_b) {
            changed |= param_bit(i);
        }
        (a, b) = (end_a, end_b);
    }
    changed
}

/// A parameter looked at by `pipeline!`'s `param_keys`: through [`KeyedParam`] when its type
/// has a key, else through [`UnkeyedParam`] (which method applies is decided by the
/// parameter's type where the pipeline is declared).
#[derive(Debug)]
pub struct ParamProbe<'a, T: ?Sized>(pub &'a T);

/// [`ParamProbe`] of a type with a key.
pub trait KeyedParam {
    /// Writes the parameter's key.
    fn param_key(&self, keys: &mut ParamKeys);
}

impl<T: ParamKey + ?Sized> KeyedParam for &ParamProbe<'_, T> {
    #[inline]
    fn param_key(&self, keys: &mut ParamKeys) {
        keys.keyed(self.0);
    }
}

/// [`ParamProbe`] of a type without a key.
pub trait UnkeyedParam {
    /// Records that the parameter has no key.
    fn param_key(&self, keys: &mut ParamKeys);
}

impl<T: ?Sized> UnkeyedParam for ParamProbe<'_, T> {
    #[inline]
    fn param_key(&self, keys: &mut ParamKeys) {
        keys.unkeyed();
    }
}

macro_rules! bytes_key {
    ($($t:ty),*) => {$(
        impl ParamKey for $t {
            #[inline]
            fn key(&self, out: &mut KeyWriter<'_>) {
                out.write(&self.to_le_bytes());
            }
        }
    )*};
}

bytes_key!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

macro_rules! bits_key {
    ($($t:ty),*) => {$(
        impl ParamKey for $t {
            #[inline]
            fn key(&self, out: &mut KeyWriter<'_>) {
                out.write(&self.to_bits().to_le_bytes());
            }
        }
    )*};
}

bits_key!(f32, f64);
#[cfg(feature = "cublas")]
bits_key!(half::f16, half::bf16);

impl ParamKey for bool {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        out.write(&[u8::from(*self)]);
    }
}

impl ParamKey for char {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        out.write(&u32::from(*self).to_le_bytes());
    }
}

impl ParamKey for () {
    #[inline]
    fn key(&self, _: &mut KeyWriter<'_>) {}
}

impl<T: ParamKey + ?Sized> ParamKey for &T {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        (**self).key(out);
    }
}

impl<T: ParamKey + ?Sized> ParamKey for &mut T {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        (**self).key(out);
    }
}

impl<T: ParamKey> ParamKey for Option<T> {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        match self {
            None => out.write(&[0]),
            Some(v) => {
                out.write(&[1]);
                v.key(out);
            }
        }
    }
}

impl<T: ParamKey> ParamKey for [T] {
    fn key(&self, out: &mut KeyWriter<'_>) {
        if self.len() > MAX_KEYED_ELEMENTS {
            return out.unknown();
        }
        out.write_u64(self.len() as u64);
        self.iter().for_each(|v| v.key(out));
    }
}

impl<T: ParamKey, const N: usize> ParamKey for [T; N] {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        self[..].key(out);
    }
}

impl<T: ParamKey> ParamKey for Vec<T> {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        self[..].key(out);
    }
}

macro_rules! tuple_key {
    ($(($($n:tt $t:ident),+)),*) => {$(
        impl<$($t: ParamKey),+> ParamKey for ($($t,)+) {
            #[inline]
            fn key(&self, out: &mut KeyWriter<'_>) {
                $(self.$n.key(out);)+
            }
        }
    )*};
}

tuple_key!((0 A), (0 A, 1 B), (0 A, 1 B, 2 C), (0 A, 1 B, 2 C, 3 D));

/// The memory a buffer or view names: its address (unified: one space for every device) and
/// length; the contents do not enter a launch's arguments. An address names one allocation
/// while a graph's node uses it, since the graph keeps that allocation alive.
fn memory_key(out: &mut KeyWriter<'_>, ptr: u64, len: usize) {
    out.write_u64(ptr);
    out.write_u64(len as u64);
}

impl<T> ParamKey for DeviceBuffer<T> {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        memory_key(out, self.device_ptr(), self.len());
    }
}

impl<T> ParamKey for DeviceView<'_, T> {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        memory_key(out, self.device_ptr(), self.len());
    }
}

impl<T> ParamKey for DeviceViewMut<'_, T> {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        self.as_view().key(out);
    }
}

impl ParamKey for DeviceFlag {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        out.write_u64(self.device_ptr());
    }
}

impl ParamKey for Kernel {
    /// The function: a kernel a graph launches stays loaded while the graph lives, so its
    /// handle names one function. A plan-only kernel has no key.
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        match self.loaded() {
            Some(f) => out.write_u64(f.handle().identity()),
            None => out.unknown(),
        }
    }
}

impl ParamKey for Dim3 {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        (self.x, self.y, self.z).key(out);
    }
}

impl ParamKey for LaunchConfig {
    #[inline]
    fn key(&self, out: &mut KeyWriter<'_>) {
        (self.grid, self.block, self.shared_mem_bytes).key(out);
    }
}

/// An op's [`ParamKey`]: what a graph keeps of it (its handle, plan or counter), by identity,
/// and its fixed work's parameters; none when its work is not fixed. A graph that captured the
/// op keeps that value alive, so no other op can take its address while the graph runs the
/// op's nodes: equal keys mean the same work.
fn op_key<O: crate::call::StreamOp>(op: &O, out: &mut KeyWriter<'_>) {
    let mut parameters = Vec::new();
    match op.keep() {
        Some(kept) if op.fixed_work(&mut parameters) => {
            out.write_u64(std::sync::Arc::as_ptr(&kept).cast::<()>() as usize as u64);
            out.write(&parameters);
        }
        _ => out.unknown(),
    }
}

/// By identity and fixed work (see `op_key`): a `call` of an unchanged op on unchanged
/// operands is skipped by argument updates.
impl<T: crate::ops::RandomElem> ParamKey for crate::ops::Random<T> {
    fn key(&self, out: &mut KeyWriter<'_>) {
        op_key(self, out);
    }
}

#[cfg(feature = "cublas")]
mod op_keys {
    use super::{op_key, KeyWriter, ParamKey};
    use crate::ops::{Gemm, GemmElem, Matmul, MatmulBias, MatmulElem, StridedBatchedGemm};

    /// By identity (see `op_key`): a GEMM's shape and scalars are fixed when it is made.
    impl<T: GemmElem> ParamKey for Gemm<T> {
        fn key(&self, out: &mut KeyWriter<'_>) {
            op_key(self, out);
        }
    }

    /// By identity (see `op_key`).
    impl<T: GemmElem> ParamKey for StridedBatchedGemm<T> {
        fn key(&self, out: &mut KeyWriter<'_>) {
            op_key(self, out);
        }
    }

    /// By identity (see `op_key`).
    impl<T: MatmulElem> ParamKey for Matmul<T> {
        fn key(&self, out: &mut KeyWriter<'_>) {
            op_key(self, out);
        }
    }

    /// By identity (see `op_key`).
    impl<T: MatmulElem> ParamKey for MatmulBias<T> {
        fn key(&self, out: &mut KeyWriter<'_>) {
            op_key(self, out);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys(f: impl FnOnce(&mut ParamKeys)) -> ParamKeys {
        let mut k = ParamKeys::default();
        f(&mut k);
        k
    }

    #[test]
    fn changed_names_the_parameters_whose_keys_differ() {
        let a = keys(|k| {
            k.keyed(&1u32);
            k.keyed(&2.5f32);
            k.keyed(&[1usize, 2, 3][..]);
        });
        let same = keys(|k| {
            k.keyed(&1u32);
            k.keyed(&2.5f32);
            k.keyed(&vec![1usize, 2, 3]);
        });
        assert_eq!(a.changed(&same), 0);
        let b = keys(|k| {
            k.keyed(&1u32);
            k.keyed(&3.5f32);
            k.keyed(&[1usize, 2][..]);
        });
        assert_eq!(a.changed(&b), 0b110);
    }

    #[test]
    fn parameters_without_a_key_always_changed() {
        let long = vec![0u8; MAX_KEYED_ELEMENTS + 1];
        let a = keys(|k| {
            k.keyed(&1u32);
            k.unkeyed();
            k.keyed(&long[..]);
        });
        assert_eq!(a.changed(&a.clone()), 0b110);
    }

    proptest::proptest! {
        /// Word by word, within one layout, names what a comparison per parameter names.
        #[test]
        fn one_layout_compares_as_parameter_by_parameter(
            params in proptest::collection::vec(
                (proptest::collection::vec(0u8..4, 0..20), proptest::collection::vec(0u8..4, 0..20)),
                1..70,
            ),
        ) {
            let a = keys(|k| params.iter().for_each(|(x, _)| k.keyed(&x[..])));
            // The same layout: each parameter's second key cut or padded to the first's length.
            let b = keys(|k| {
                params.iter().for_each(|(x, y)| {
                    let mut y = y.clone();
                    y.resize(x.len(), 0);
                    k.keyed(&y[..]);
                })
            });
            proptest::prop_assert_eq!(a.ends.clone(), b.ends.clone());
            proptest::prop_assert_eq!(a.changed(&b), changed_by_parameter(&a, &b));
            proptest::prop_assert_eq!(a.changed(&a.clone()), 0);
        }
    }

    #[test]
    fn other_counts_or_none_change_everything() {
        let one = keys(|k| k.keyed(&1u8));
        let two = keys(|k| {
            k.keyed(&1u8);
            k.keyed(&1u8);
        });
        assert_eq!(one.changed(&two), !0);
        assert_eq!(ParamKeys::default().changed(&ParamKeys::default()), !0);
    }

    #[test]
    fn parameters_past_the_63rd_share_the_last_bit() {
        assert_eq!(param_bit(62), 1 << 62);
        assert_eq!(param_bit(63), 1 << 63);
        assert_eq!(param_bit(200), 1 << 63);
        let a = keys(|k| (0..70u32).for_each(|i| k.keyed(&i)));
        let b = keys(|k| (0..70u32).for_each(|i| k.keyed(&(if i == 69 { 0 } else { i }))));
        assert_eq!(a.changed(&b), 1 << 63);
    }

    #[test]
    #[allow(clippy::needless_borrow)] // the borrows are what picks the method
    fn probes_pick_the_key_where_the_type_has_one() {
        struct Opaque;
        let mut k = ParamKeys::default();
        (&&ParamProbe(&5u64)).param_key(&mut k);
        (&&ParamProbe(&Opaque)).param_key(&mut k);
        assert_eq!(k.unknown, 0b10);
        assert_eq!(k.ends, vec![8, 8]);
    }

    #[test]
    fn floats_compare_by_bits_and_options_by_tag() {
        let a = keys(|k| {
            k.keyed(&0.0f64);
            k.keyed(&None::<u8>);
        });
        let b = keys(|k| {
            k.keyed(&-0.0f64);
            k.keyed(&Some(0u8));
        });
        assert_eq!(a.changed(&b), 0b11);
    }
}
