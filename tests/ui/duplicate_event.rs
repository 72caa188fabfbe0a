use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel) {
        stream main;
        event ready;
        event ready;
    }
}

fn main() {}
