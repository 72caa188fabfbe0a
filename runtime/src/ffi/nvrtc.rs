//! Compiling CUDA C to CUBIN with NVRTC.

use std::ffi::{c_char, c_int, CStr, CString};

/// Why compiling CUDA C failed.
#[derive(Debug)]
pub(crate) enum CompileFailure {
    /// The source did not compile; NVRTC's log.
    Log(String),
    /// An NVRTC call failed outside compilation.
    Call(&'static str, String),
}

/// Compiles `source` with NVRTC for `sm_{major}{minor}` and returns the CUBIN image.
///
/// The caller has checked [`nvrtc_present`](super::nvrtc_present) and that `source`/`name`
/// hold no NUL byte.
///
/// <https://docs.nvidia.com/cuda/nvrtc/index.html>
pub(crate) fn nvrtc_compile(
    name: &CStr,
    source: &CStr,
    options: &[CString],
) -> Result<Vec<u8>, CompileFailure> {
    compile(name, source, options, false)
}

/// Compiles `source` with NVRTC to PTX text (for code that calls device-runtime functions the
/// driver's JIT resolves when it loads the PTX), under the same conditions as
/// [`nvrtc_compile`].
///
/// <https://docs.nvidia.com/cuda/nvrtc/index.html>
pub(crate) fn nvrtc_compile_ptx(
    name: &CStr,
    source: &CStr,
    options: &[CString],
) -> Result<String, CompileFailure> {
    let bytes = compile(name, source, options, true)?;
    let text = CStr::from_bytes_until_nul(&bytes)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
    Ok(text)
}

fn compile(
    name: &CStr,
    source: &CStr,
    options: &[CString],
    ptx: bool,
) -> Result<Vec<u8>, CompileFailure> {
    use cudarc::nvrtc::sys as nv;
    let call = |what: &'static str, r: nv::nvrtcResult| -> Result<(), CompileFailure> {
        match r {
            nv::nvrtcResult::NVRTC_SUCCESS => Ok(()),
            other => Err(CompileFailure::Call(what, format!("{other:?}"))),
        }
    };
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: `source` and `name` are NUL-terminated and outlive the program (destroyed below
    // before this function returns); no headers are passed.
    let created = unsafe {
        nv::nvrtcCreateProgram(
            &mut prog,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    call("nvrtcCreateProgram", created)?;
    let result = (|| {
        let opts: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let n = c_int::try_from(opts.len())
            .map_err(|_| CompileFailure::Call("nvrtcCompileProgram", "too many options".into()))?;
        // SAFETY: `prog` was created above; `opts` holds `n` NUL-terminated strings alive for
        // the call.
        let compiled = unsafe { nv::nvrtcCompileProgram(prog, n, opts.as_ptr()) };
        if compiled != nv::nvrtcResult::NVRTC_SUCCESS {
            return Err(CompileFailure::Log(program_log(prog).unwrap_or_else(|e| {
                format!("{compiled:?} (the log could not be read: {e:?})")
            })));
        }
        let mut size = 0usize;
        if ptx {
            // SAFETY: `prog` compiled; `size` is a valid out-pointer.
            call("nvrtcGetPTXSize", unsafe {
                nv::nvrtcGetPTXSize(prog, &mut size)
            })?;
            let mut text = vec![0u8; size];
            // SAFETY: `text` has room for the `size` bytes NVRTC reported.
            call("nvrtcGetPTX", unsafe {
                nv::nvrtcGetPTX(prog, text.as_mut_ptr().cast())
            })?;
            return Ok(text);
        }
        // SAFETY: `prog` compiled; `size` is a valid out-pointer.
        call("nvrtcGetCUBINSize", unsafe {
            nv::nvrtcGetCUBINSize(prog, &mut size)
        })?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has room for the `size` bytes NVRTC reported.
        call("nvrtcGetCUBIN", unsafe {
            nv::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
        })?;
        Ok(cubin)
    })();
    // SAFETY: `prog` was created above and is destroyed once, here.
    let destroyed = unsafe { nv::nvrtcDestroyProgram(&mut prog) };
    let cubin = result?;
    call("nvrtcDestroyProgram", destroyed)?;
    Ok(cubin)
}

/// NVRTC's log of a compiled (or failed) program.
fn program_log(prog: cudarc::nvrtc::sys::nvrtcProgram) -> Result<String, String> {
    use cudarc::nvrtc::sys as nv;
    let mut size = 0usize;
    // SAFETY: `prog` is a live program; `size` is a valid out-pointer.
    let r = unsafe { nv::nvrtcGetProgramLogSize(prog, &mut size) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("{r:?}"));
    }
    let mut log = vec![0u8; size.max(1)];
    // SAFETY: `log` has room for the `size` bytes NVRTC reported.
    let r = unsafe { nv::nvrtcGetProgramLog(prog, log.as_mut_ptr().cast()) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("{r:?}"));
    }
    let text = CStr::from_bytes_until_nul(&log)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&log).into_owned());
    Ok(text.trim_end().to_string())
}
