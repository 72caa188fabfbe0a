pub use streamgraph_runtime::*;

#[doc(inline)]
pub use streamgraph_macros::pipeline;
