use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel) {
        stream main;
        stream side;
        side: wait_stream side;
    }
}

fn main() {}
