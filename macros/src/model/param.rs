//! Pipeline parameters: how each is passed, and what its declared type shows.

use syn::{Ident, Type};

/// A pipeline parameter.
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    pub kind: ParamKind,
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
    /// Whether the parameter is declared `&mut` but what it holds is borrowed shared under
    /// the `&mut`: `&mut &DeviceBuffer<T>`, `&mut DeviceView<'_, T>`, `&mut [&PinnedBuffer<T>]`,
    /// `&mut &mut &T`. The pipeline cannot write such a buffer: the `&mut` is exclusive only
    /// for the reference or view, not for the memory, which others may be reading.
    pub fn shared_under_mut(&self) -> bool {
        matches!(&self.ty, Type::Reference(r) if r.mutability.is_some() && holds_shared(&r.elem))
    }

    /// The declared type with every shared borrow of a buffer made exclusive: what to declare
    /// instead of a [`Param::shared_under_mut`] type (`&mut &DeviceBuffer<T>` becomes
    /// `&mut DeviceBuffer<T>`, `&mut DeviceView<'_, T>` becomes `&mut DeviceViewMut<'_, T>`).
    pub fn exclusive_type(&self) -> Type {
        exclusive(&self.ty, false)
    }

    /// Whether the declared type is pageable host memory (`&[T]`, `&mut [T]`, `&Vec<T>`,
    /// `Vec<T>`, arrays of plain data), which a copy cannot use inside a CUDA graph. Slices,
    /// `Vec`s and arrays *of buffers* (`&[PinnedBuffer<f32>]`, `Vec<DeviceBuffer<u8>>`) are
    /// not: a copy names one of their elements, whose own type decides.
    pub fn is_pageable_host(&self) -> bool {
        container_element(&self.ty).is_some_and(is_host_data)
    }
}

/// The read-only views of the runtime and of cudarc, with their writable counterparts.
const SHARED_VIEWS: [(&str, &str); 3] = [
    ("DeviceView", "DeviceViewMut"),
    ("PinnedView", "PinnedViewMut"),
    ("CudaView", "CudaViewMut"),
];

/// Whether `ty` (under a `&mut`) holds a shared borrow: a `&T`, a read-only view, or a
/// slice, array or `Vec` of them.
fn holds_shared(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_none() || holds_shared(&r.elem),
        Type::Paren(p) => holds_shared(&p.elem),
        Type::Group(g) => holds_shared(&g.elem),
        Type::Slice(s) => holds_shared(&s.elem),
        Type::Array(a) => holds_shared(&a.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|last| {
            SHARED_VIEWS.iter().any(|(view, _)| last.ident == view)
                || (last.ident == "Vec" && vec_element(last).is_some_and(holds_shared))
        }),
        _ => false,
    }
}

/// The element type of `Vec<T>`'s last path segment.
fn vec_element(last: &syn::PathSegment) -> Option<&Type> {
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
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
        Type::Path(p) if p.qself.is_none() => {
            if let Some(last) = p.path.segments.last_mut() {
                if let Some((_, writable)) = SHARED_VIEWS.iter().find(|(v, _)| last.ident == v) {
                    last.ident = Ident::new(writable, last.ident.span());
                } else if last.ident == "Vec" {
                    if let syn::PathArguments::AngleBracketed(args) = &mut last.arguments {
                        for arg in &mut args.args {
                            if let syn::GenericArgument::Type(t) = arg {
                                *t = exclusive(t, false);
                            }
                        }
                    }
                }
            }
        }
        _ => {}
    }
    ty
}

/// The element type of a slice, array or `Vec` (behind references and parentheses).
fn container_element(ty: &Type) -> Option<&Type> {
    match strip(ty) {
        Type::Slice(s) => Some(&s.elem),
        Type::Array(a) => Some(&a.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    args.args.iter().find_map(|a| match a {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The buffer types of the runtime and of cudarc that a parameter may hold many of.
const BUFFER_TYPES: &[&str] = &[
    "DeviceBuffer",
    "DeviceView",
    "DeviceViewMut",
    "PinnedBuffer",
    "PinnedView",
    "PinnedViewMut",
    "CudaSlice",
    "CudaView",
    "CudaViewMut",
];

/// Whether an element type is plain host data (a scalar, a struct, nested containers of
/// them) rather than a buffer: a generic type other than `Vec` (`PinnedBuffer<f32>`, a
/// user's `Chunk<T>`) or one of [`BUFFER_TYPES`] is taken as a buffer.
fn is_host_data(ty: &Type) -> bool {
    if container_element(ty).is_some() {
        return true;
    }
    match strip(ty) {
        Type::Path(p) => p.path.segments.last().is_none_or(|last| {
            !(BUFFER_TYPES.iter().any(|b| last.ident == b)
                || matches!(last.arguments, syn::PathArguments::AngleBracketed(_)))
        }),
        _ => true,
    }
}

/// `ty` without the references and parentheses around it.
fn strip(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Reference(r) => ty = &r.elem,
            Type::Paren(p) => ty = &p.elem,
            _ => return ty,
        }
    }
}
