//! Memory: copies avoid pageable host memory, kernels and fills use device memory.

use crate::model::{Errors, Kind, Program};

/// A `copy` reads and writes device or page-locked host memory, never pageable host memory.
///
/// Pageable host memory cannot be captured into a CUDA graph.
pub(super) fn copies_avoid_pageable_memory(program: &Program, errors: &mut Errors) {
    for stmt in &program.statements {
        if let Kind::Copy { dst, src } = &stmt.kind {
            for side in [dst, src] {
                if let Some(param) = program.param(&side.root).filter(|p| p.is_pageable_host()) {
                    errors.spanned(
                        &side.expr,
                        format!(
                            "`{}` cannot be captured: parameter `{}` is pageable host memory \
                             (`{}`), which a CUDA graph cannot copy; declare it as a \
                             `PinnedBuffer<T>` (page-locked host memory)",
                            stmt.text,
                            param.name,
                            crate::text::type_text(&param.ty)
                        ),
                    );
                }
            }
        }
    }
}

/// A launch's `&x`/`&mut x` arguments and a `fill` target are device memory, never host memory
/// such as a `Vec` or a slice.
pub(super) fn kernels_and_fills_use_device_memory(program: &Program, errors: &mut Errors) {
    for stmt in &program.statements {
        if !matches!(stmt.kind, Kind::Launch { .. } | Kind::Fill { .. }) {
            continue;
        }
        for access in &stmt.accesses {
            let Some(param) = program
                .param(&access.buffer)
                .filter(|p| p.is_pageable_host())
            else {
                continue;
            };
            errors.spanned(
                &access.at,
                format!(
                    "`{}` passes `{}` to the device, but parameter `{}` is host memory (`{}`), \
                     which kernels and fills cannot reach: copy the data to the device first, \
                     with `DeviceBuffer::from_host(&device, &data)`, and declare the parameter \
                     as a `&DeviceBuffer<T>` (`&mut` if the pipeline writes it)",
                    stmt.text,
                    access.buffer,
                    param.name,
                    crate::text::type_text(&param.ty)
                ),
            );
        }
    }
}
