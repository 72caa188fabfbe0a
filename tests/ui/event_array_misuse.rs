use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(k: &Kernel, i: usize) {
        stream main;
        stream side;
        event ready[2];
        event done;
        event none[0];
        main: launch k<<<1, 1>>>();
        main: record ready[2];
        main: record ready;
        side: wait done[i];
        side: wait ready[i];
    }
}

fn main() {}
