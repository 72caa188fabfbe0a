//! Pipeline parameters: how each is passed, and what its declared references show.
//!
//! Nothing here reads a type's name: what a parameter's type is (device memory, a copy source,
//! pageable host memory) is the compiler's to say, through the traits that generated code
//! checks at the user's tokens, so that an alias or a renamed import changes no verdict.

use syn::{Ident, Type};

/// A pipeline parameter, or a temporary (`temp h: f32[n];`), which statements name as they
/// name a `&mut` parameter.
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    pub kind: ParamKind,
    /// For a temporary: its index in [`super::Program::temps`].
    pub temp: Option<usize>,
}

/// How a parameter is passed, from its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `&T`.
    Shared,
    /// `&mut T`.
    Mut,
    /// Anything else: bound by copy.
    Value,
}

impl Param {
    /// Whether the parameter is declared `&mut` but what it holds is written borrowed shared
    /// under the `&mut`: `&mut &DeviceBuffer<T>`, `&mut [&PinnedBuffer<T>]`, `&mut &mut &T`.
    /// The pipeline cannot write such a buffer: the `&mut` is exclusive only for the
    /// reference, not for the memory, which others may be reading. (A read-only view under the
    /// `&mut`, `&mut DeviceView<'_, T>`, is refused by the type system, which knows it is one.)
    pub fn shared_under_mut(&self) -> bool {
        matches!(&self.ty, Type::Reference(r) if r.mutability.is_some() && holds_shared(&r.elem))
    }

    /// The declared type with every shared borrow under it made exclusive: what to declare
    /// instead of a [`Param::shared_under_mut`] type (`&mut &DeviceBuffer<T>` becomes
    /// `&mut DeviceBuffer<T>`, `&mut [&'a T]` becomes `&mut [&'a mut T]`).
    pub fn exclusive_type(&self) -> Type {
        exclusive(&self.ty, false)
    }
}

/// Whether `ty` (under a `&mut`) holds a shared borrow: a `&T`, or a slice or array of them.
fn holds_shared(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_none() || holds_shared(&r.elem),
        Type::Paren(p) => holds_shared(&p.elem),
        Type::Group(g) => holds_shared(&g.elem),
        Type::Slice(s) => holds_shared(&s.elem),
        Type::Array(a) => holds_shared(&a.elem),
        _ => false,
    }
}

/// `ty` with its shared borrows made exclusive (see [`Param::exclusive_type`]); a shared
/// reference directly under another reference is dropped (`&mut &T` is `&mut T`).
fn exclusive(ty: &Type, under_reference: bool) -> Type {
    let mut ty = ty.clone();
    match &mut ty {
        Type::Reference(r) => {
            let inner = exclusive(&r.elem, true);
            if r.mutability.is_none() {
                if under_reference {
                    return inner;
                }
                r.mutability = Some(syn::token::Mut(r.and_token.span));
            }
            *r.elem = inner;
        }
        Type::Paren(p) => *p.elem = exclusive(&p.elem, under_reference),
        Type::Group(g) => *g.elem = exclusive(&g.elem, under_reference),
        Type::Slice(s) => *s.elem = exclusive(&s.elem, false),
        Type::Array(a) => *a.elem = exclusive(&a.elem, false),
        _ => {}
    }
    ty
}
