//! Writes: through parameters borrowed `&mut`, in a shape generated code can write.

use syn::Ident;

use crate::model::{write_form, Errors, Mode, ParamKind, Program};

/// A statement writes a buffer only through a parameter declared `&mut`, whose buffer is
/// borrowed exclusively (not `&mut &DeviceBuffer<T>` nor `&mut DeviceView<'_, T>`), and names
/// it in a shape that generated code writes through that borrow ([`write_form`]).
///
/// Writes are `&mut x` arguments, copy destinations, fill targets and collectives' receive
/// buffers.
pub(super) fn writes_go_through_mut_parameters(program: &Program, errors: &mut Errors) {
    let mut shared_reported: Vec<&Ident> = Vec::new();
    for stmt in &program.statements {
        for access in stmt.accesses.iter().filter(|a| a.mode == Mode::Write) {
            let Some(param) = program.param(&access.buffer) else {
                continue;
            };
            if param.kind != ParamKind::Mut {
                errors.spanned(
                    &access.at,
                    format!(
                        "`{}` writes `{}`, but parameter `{}` is declared `{}`: writing through a \
                         shared borrow would race with other users of it; declare it `&mut`",
                        stmt.text,
                        access.buffer,
                        param.name,
                        crate::text::type_text(&param.ty)
                    ),
                );
            } else if param.shared_under_mut() && !shared_reported.contains(&&param.name) {
                shared_reported.push(&param.name);
                errors.spanned(
                    &param.ty,
                    format!(
                        "`{}` writes `{}`, but `{}` is declared `{}`: the buffer is borrowed \
                         shared, so the pipeline cannot write it; declare `{}: {}`",
                        stmt.text,
                        access.buffer,
                        param.name,
                        crate::text::type_text(&param.ty),
                        param.name,
                        crate::text::type_text(&param.exclusive_type())
                    ),
                );
            }
        }
        for written in stmt.kind.writes() {
            if write_form(&written.expr).is_none() {
                let text = crate::text::text_of(&written.expr);
                errors.spanned(
                    &written.expr,
                    format!(
                        "`{}` writes `{text}`, which the pipeline cannot write through its \
                         `&mut` borrow of `{}`: a write names the parameter (`{}`), an element \
                         of it (`{}[i]`) or a part of either (`{}.slice_mut(a..b)`)",
                        stmt.text, written.root, written.root, written.root, written.root
                    ),
                );
            }
        }
    }
}
