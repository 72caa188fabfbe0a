use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel) {
        stream main;
        stream side;
        event ready;
        main: record redy;
    }
}

fn main() {}
