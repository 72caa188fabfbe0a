//! NVTX ranges (the `nvtx` feature), through the NVTX library loaded at run time.
//!
//! Ranges are only made while a tool listens: when a profiler such as Nsight Systems runs the
//! process it names its NVTX injection library in `NVTX_INJECTION64_PATH` (the NVTX
//! convention); without that variable no range is made and a statement pays one check of a
//! static (naming each range costs an allocation, which would slow every eager launch).
//!
//! The library is looked for once, on the first range: `libnvToolsExt` (CUDA 10–12) and then
//! `libnvtx3interop` (CUDA 12.8 and later). When none loads, or it lacks the range functions,
//! every call here does nothing: no panic, no error, no ranges.

use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// `int nvtxRangePushA(const char*)`.
type RangePush = unsafe extern "C" fn(*const c_char) -> c_int;
/// `int nvtxRangePop(void)`.
type RangePop = unsafe extern "C" fn() -> c_int;

/// The loaded library and its two range functions.
struct Nvtx {
    push: RangePush,
    pop: RangePop,
    /// Kept loaded for the life of the process: the function pointers point into it.
    _library: libloading::Library,
}

/// The library names tried, in order.
const LIBRARIES: &[&str] = &[
    "libnvToolsExt.so.1",
    "libnvToolsExt.so",
    "libnvtx3interop.so.1",
    "libnvtx3interop.so",
    "nvToolsExt64_1.dll",
    "nvtx3interop.dll",
];

static NVTX: OnceLock<Option<Nvtx>> = OnceLock::new();

/// What [`NVTX`] holds, in one byte that a statement's hook reads: not looked for yet, no
/// library, a library.
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const ABSENT: u8 = 1;
const LOADED: u8 = 2;

/// The variables through which a profiler names its NVTX injection library.
const INJECTION: &[&str] = &["NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH"];

fn load() -> Option<Nvtx> {
    if !INJECTION.iter().any(|v| std::env::var_os(v).is_some()) {
        return None; // no tool listens: ranges would go nowhere
    }
    LIBRARIES.iter().find_map(|name| {
        // SAFETY: loading a library runs its initialisers; the NVTX libraries' only set up
        // their own tables (they are built to be loaded into any CUDA process).
        let library = unsafe { libloading::Library::new(*name) }.ok()?;
        // SAFETY: `nvtxRangePushA` has the C signature `int (const char*)` in every NVTX
        // version (the function type `RangePush`).
        let push = *unsafe { library.get::<RangePush>(b"nvtxRangePushA\0") }.ok()?;
        // SAFETY: `nvtxRangePop` has the C signature `int (void)` in every NVTX version.
        let pop = *unsafe { library.get::<RangePop>(b"nvtxRangePop\0") }.ok()?;
        Some(Nvtx {
            push,
            pop,
            _library: library,
        })
    })
}

#[inline(always)]
fn nvtx() -> Option<&'static Nvtx> {
    match NVTX.get() {
        Some(nvtx) => nvtx.as_ref(),
        None => first_nvtx(),
    }
}

/// [`nvtx`] on its first call: looks for the library.
#[cold]
#[inline(never)]
fn first_nvtx() -> Option<&'static Nvtx> {
    let nvtx = NVTX.get_or_init(load).as_ref();
    STATE.store(
        if nvtx.is_some() { LOADED } else { ABSENT },
        Ordering::Relaxed,
    );
    nvtx
}

/// Whether ranges are made: a tool listens and an NVTX library was loaded (loads it on the
/// first call).
#[inline(always)]
pub(crate) fn available() -> bool {
    // One load on every statement; what it says is settled before it is stored (the ranges
    // themselves go through `NVTX`).
    match STATE.load(Ordering::Relaxed) {
        ABSENT => false,
        LOADED => true,
        _ => first_nvtx().is_some(),
    }
}

/// Opens a range named `name()` (called only when the library is loaded); returns whether a
/// range was opened, i.e. whether [`pop`] must close it.
#[inline(always)]
pub(crate) fn push_with(name: impl FnOnce() -> String) -> bool {
    match nvtx() {
        None => false,
        Some(nvtx) => push_named(nvtx, name),
    }
}

/// Opens a range named `name()` through `nvtx`; `true`.
#[cold]
#[inline(never)]
fn push_named(nvtx: &Nvtx, name: impl FnOnce() -> String) -> bool {
    let name = CString::new(name().replace('\0', " ")).unwrap_or_default();
    // SAFETY: `name` is a NUL-terminated string that lives across the call; NVTX copies it.
    unsafe { (nvtx.push)(name.as_ptr()) };
    true
}

/// Closes the innermost range this thread opened with [`push_with`].
#[inline]
pub(crate) fn pop() {
    if let Some(nvtx) = nvtx() {
        // SAFETY: `nvtxRangePop` takes no argument; called only after a successful push.
        unsafe { (nvtx.pop)() };
    }
}
