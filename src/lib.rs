pub use streamgraph_runtime::*;
