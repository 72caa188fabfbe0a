//! Normalised source text of user tokens, for statement texts in messages and pictures.
//!
//! Spacing follows rustfmt's habits closely enough for messages: `k.scale(&mut x, n + 1)`,
//! `x.slice(0..n)`, `Ordering::SeqCst`; the user's own whitespace is not kept.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// The text of `tokens`, on one line.
pub fn text_of(tokens: &impl ToTokens) -> String {
    let mut out = String::new();
    write_stream(&mut out, tokens.to_token_stream());
    out
}

/// The text of a type: `&mut DeviceBuffer<f32>`, `&[f32]`, `Vec<u8>`.
pub fn type_text(ty: &syn::Type) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(raw.len());
    let chars: Vec<char> = raw.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i + 1).copied();
            let tight = matches!(before, Some('<' | '&' | ':' | '(' | '['))
                || matches!(after, Some('<' | '>' | ',' | ':' | ')' | ']'));
            if tight {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The candidate closest to `name` by edit distance, if close enough to be a likely typo:
/// one edit for names of three to five characters, a third of the name's length beyond; none for
/// shorter names (any other short name is as close as a typo). Ties go to the first candidate.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = match name.chars().count() {
        0..=2 => return None,
        n => (n / 3).max(1),
    };
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between `a` and `b`, counted in characters, where swapping two adjacent
/// characters counts as one edit (`mian` is one edit from `main`).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j]; three rows suffice for transpositions.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[derive(Clone, Copy, PartialEq)]
enum Prev {
    Start,
    /// An identifier, literal or group: something an operator can follow.
    Operand,
    /// Part of a multi-character operator (`::`, `..`, `+=`) that continues.
    Joined,
    /// A punctuation after which no space is written (`.`, `::`, unary `&`, `-`, `!`, `*`).
    Tight,
    /// A punctuation after which a space is written (`,`, `;`, `:`, binary operators).
    Spaced,
}

fn write_stream(out: &mut String, tokens: TokenStream) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut prev = Prev::Start;
    let mut last_char = None;
    // Inside the `|…|` of a closure's parameters.
    let mut closure_params = false;
    for (i, tt) in tokens.iter().enumerate() {
        let after_ident = |word: Option<&str>| {
            i.checked_sub(1)
                .and_then(|j| tokens.get(j))
                .is_some_and(|t| matches!(t, TokenTree::Ident(id) if word.is_none_or(|w| id == w)))
        };
        if let TokenTree::Punct(p) = tt {
            let c = p.as_char();
            // `name!(…)`: a macro invocation.
            if c == '!'
                && after_ident(None)
                && matches!(tokens.get(i + 1), Some(TokenTree::Group(_)))
            {
                out.push('!');
                prev = Prev::Tight;
                last_char = Some(c);
                continue;
            }
            // `|…|` of a closure: at the start of an expression or after `move`.
            if c == '|'
                && (closure_params || matches!(prev, Prev::Start) || after_ident(Some("move")))
            {
                if closure_params {
                    out.push('|');
                    prev = Prev::Spaced;
                } else {
                    if prev == Prev::Operand {
                        out.push(' ');
                    }
                    out.push('|');
                    prev = Prev::Tight;
                }
                closure_params = !closure_params;
                last_char = Some(c);
                continue;
            }
        }
        let tt = tt.clone();
        match tt {
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if matches!(prev, Prev::Operand | Prev::Spaced) {
                    out.push(' ');
                }
                out.push_str(&tt.to_string());
                prev = Prev::Operand;
            }
            TokenTree::Group(g) => {
                let inner = {
                    let mut s = String::new();
                    write_stream(&mut s, g.stream());
                    s
                };
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                let tight = matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket);
                if prev == Prev::Spaced || (prev == Prev::Operand && !tight) {
                    out.push(' ');
                }
                out.push_str(open);
                if g.delimiter() == Delimiter::Brace && !inner.is_empty() {
                    out.push(' ');
                    out.push_str(&inner);
                    out.push(' ');
                } else {
                    out.push_str(&inner);
                }
                out.push_str(close);
                prev = Prev::Operand;
            }
            TokenTree::Punct(p) => {
                let c = p.as_char();
                let continues = p.spacing() == Spacing::Joint;
                let after_joined = prev == Prev::Joined;
                let tight_before = matches!(c, ',' | ';' | '.' | ':' | '?')
                    || after_joined
                    || matches!(prev, Prev::Start | Prev::Tight);
                if !tight_before && matches!(prev, Prev::Operand | Prev::Spaced) {
                    out.push(' ');
                }
                out.push(c);
                let unary = matches!(c, '&' | '-' | '!' | '*' | '|')
                    && !after_joined
                    && !matches!(prev, Prev::Operand);
                prev = if continues && !matches!(c, ',' | ';') {
                    Prev::Joined
                } else if c == '.'
                    || c == '#'
                    || unary
                    || (c == ':' && after_joined && last_char == Some(':'))
                {
                    Prev::Tight
                } else {
                    Prev::Spaced
                };
                last_char = Some(c);
                continue;
            }
        }
        last_char = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn edit_distances_count_transpositions_as_one() {
        assert_eq!(edit_distance("main", "main"), 0);
        assert_eq!(edit_distance("mian", "main"), 1);
        assert_eq!(edit_distance("redy", "ready"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions_are_close_and_the_closest() {
        let names = ["main", "side", "copy_stream"];
        assert_eq!(closest("mian", names), Some("main"));
        assert_eq!(closest("sied", names), Some("side"));
        assert_eq!(closest("copy_steam", names), Some("copy_stream"));
        assert_eq!(closest("other", names), None);
        assert_eq!(closest("x", ["y"]), None);
        assert_eq!(closest("ab", ["abc"]), None);
    }

    #[test]
    fn types_read_like_rust() {
        let t = |ty: syn::Type| type_text(&ty);
        assert_eq!(
            t(syn::parse_quote!(&mut DeviceBuffer<f32>)),
            "&mut DeviceBuffer<f32>"
        );
        assert_eq!(t(syn::parse_quote!(&[f32])), "&[f32]");
        assert_eq!(
            t(syn::parse_quote!(&'a std::vec::Vec<(u8, u16)>)),
            "&'a std::vec::Vec<(u8, u16)>"
        );
    }

    #[test]
    fn spacing_reads_like_rust() {
        assert_eq!(text_of(&quote!(k.scale)), "k.scale");
        assert_eq!(text_of(&quote!(&mut x)), "&mut x");
        assert_eq!(text_of(&quote!(grid(n))), "grid(n)");
        assert_eq!(text_of(&quote!((n + 255) / 256)), "(n + 255) / 256");
        assert_eq!(
            text_of(&quote!(x.slice(i * c..(i + 1) * c))),
            "x.slice(i * c..(i + 1) * c)"
        );
        assert_eq!(text_of(&quote!(Ordering::SeqCst)), "Ordering::SeqCst");
        assert_eq!(text_of(&quote!(-1)), "-1");
        assert_eq!(text_of(&quote!(a - 1)), "a - 1");
        assert_eq!(text_of(&quote!(x.slice(..n))), "x.slice(..n)");
        assert_eq!(
            text_of(&quote!(move || {
                c.fetch_add(1, Ordering::SeqCst);
            })),
            "move || { c.fetch_add(1, Ordering::SeqCst); }"
        );
        assert_eq!(text_of(&quote!(a += 1)), "a += 1");
        assert_eq!(
            text_of(&quote!(|| println!("done {}", n))),
            "|| println!(\"done {}\", n)"
        );
        assert_eq!(text_of(&quote!(move |x, y| x | y)), "move |x, y| x | y");
        assert_eq!(text_of(&quote!(!done)), "!done");
        let closure: syn::Expr = syn::parse_quote!(|| println!("iteration done"));
        assert_eq!(text_of(&closure), "|| println!(\"iteration done\")");
        assert_eq!(text_of(&quote!(x[0])), "x[0]");
    }
}
