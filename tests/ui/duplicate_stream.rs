use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel) {
        stream main;
        stream side;
        stream side;
    }
}

fn main() {}
