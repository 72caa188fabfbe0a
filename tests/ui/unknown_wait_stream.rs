use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel) {
        stream main;
        stream side;
        main: wait_stream sied;
    }
}

fn main() {}
