//! The static description of the pipeline: `PROGRAM`, its streams, events and statements.

use proc_macro2::{Span, TokenStream};
use quote::quote;

use crate::model::{BlockShape, CollectiveOp, Kind, Mode, Program};
use crate::validate::line_column;

fn location(span: Span) -> TokenStream {
    let (line, column) = line_column(span);
    quote!(::streamgraph::__private::Location { file: ::core::file!(), line: #line, column: #column })
}

pub(super) fn program_const(program: &Program) -> TokenStream {
    let name = program.name.to_string();
    let streams = program.streams.iter().map(|s| {
        let n = s.name.to_string();
        let loc = location(s.name.span());
        quote!(::streamgraph::__private::StreamDecl { name: #n, location: #loc })
    });
    let events = program.events.iter().map(|e| {
        let n = e.label();
        let loc = location(e.name.span());
        quote!(::streamgraph::__private::EventDecl { name: #n, location: #loc })
    });
    let statements = program.statements.iter().map(|s| {
        let id = s.id;
        let stream = s.stream;
        let kind = match &s.kind {
            Kind::Launch { kernel, .. } => {
                let k = crate::text::text_of(kernel);
                quote!(Launch { kernel: #k })
            }
            Kind::Copy { .. } => quote!(Copy),
            Kind::Fill { .. } => quote!(Fill),
            Kind::Host { .. } => quote!(Host),
            Kind::Call { op, .. } => {
                let op = crate::text::text_of(op);
                quote!(Call { op: #op })
            }
            Kind::Record { event, .. } => quote!(Record { event: #event }),
            Kind::Wait { event, .. } => quote!(Wait { event: #event }),
            Kind::WaitStream { stream, .. } => quote!(WaitStream { stream: #stream }),
            Kind::Alloc { temp } => quote!(Alloc { temp: #temp }),
            Kind::Free { temp } => quote!(Free { temp: #temp }),
            Kind::Block {
                shape: BlockShape::While,
                end,
                signalled,
                ..
            } => {
                let signalled = signalled.is_some();
                quote!(While { end: #end, signalled: #signalled })
            }
            Kind::Block {
                shape: BlockShape::If,
                starts,
                end,
                ..
            } => {
                let otherwise = starts.get(1).copied().unwrap_or(*end);
                quote!(If { otherwise: #otherwise, end: #end })
            }
            Kind::Block {
                shape: BlockShape::Switch(values),
                starts,
                end,
                ..
            } => {
                let arms = values.iter().zip(starts).map(|(value, start)| {
                    let value = match value {
                        Some(v) => quote!(::core::option::Option::Some(#v)),
                        None => quote!(::core::option::Option::None),
                    };
                    quote!(::streamgraph::__private::SwitchArm { value: #value, start: #start })
                });
                quote!(Switch { arms: &[#(#arms),*], end: #end })
            }
            Kind::Collective {
                op, first, count, ..
            } => {
                let op = match op {
                    CollectiveOp::AllReduce => quote!(AllReduce),
                    CollectiveOp::AllGather => quote!(AllGather),
                    CollectiveOp::ReduceScatter => quote!(ReduceScatter),
                    CollectiveOp::Broadcast { root } => quote!(Broadcast { root: #root }),
                };
                quote!(Collective {
                    op: ::streamgraph::__private::Collective::#op,
                    first: #first,
                    count: #count,
                })
            }
        };
        let accesses = s.accesses.iter().map(|a| {
            let buffer = a.buffer.to_string();
            let mode = match a.mode {
                Mode::Read => quote!(Read),
                Mode::Write => quote!(Write),
            };
            // At run time an element is part of its parameter (the plan compares addresses).
            let whole = a.whole && a.element.is_none();
            quote!(::streamgraph::__private::StaticAccess {
                buffer: #buffer,
                mode: ::streamgraph::__private::AccessMode::#mode,
                whole: #whole,
            })
        });
        let text = &s.text;
        let loc = location(s.first);
        quote!(::streamgraph::__private::Statement {
            id: #id,
            stream: #stream,
            kind: ::streamgraph::__private::StatementKind::#kind,
            text: #text,
            accesses: &[#(#accesses),*],
            location: #loc,
        })
    });
    let temps = program.temps.iter().map(|t| {
        let n = t.name.to_string();
        let elem = crate::text::text_of(&t.ty);
        let loc = location(t.name.span());
        quote!(::streamgraph::__private::TempDecl { name: #n, elem: #elem, location: #loc })
    });
    let loc = location(program.pipeline_span);
    quote!(::streamgraph::__private::Program {
        name: #name,
        streams: &[#(#streams),*],
        events: &[#(#events),*],
        statements: &[#(#statements),*],
        temps: &[#(#temps),*],
        location: #loc,
    })
}
