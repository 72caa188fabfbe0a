//! W3's diamond as a `pipeline!`, shared by the harness (W3, W6) and `host_overhead`.

use ::streamgraph::{pipeline, Kernel};

pipeline! {
    /// W3's diamond with four branches, exactly `raw.rs`'s DAG: each layer one kernel on the
    /// origin, a fork event the side streams wait for, one kernel on each of the four streams,
    /// and join events the next layer's origin kernel waits for. The pipeline's own end join
    /// stands in for the last layer's waits. Every launch is one block of one thread, as
    /// everywhere in the benches.
    pub pipeline Diamond4(empty: &Kernel, layers: usize) {
        stream main;
        stream s1;
        stream s2;
        stream s3;
        event fork;
        event j1;
        event j2;
        event j3;

        for layer in 0..layers {
            if layer > 0 {
                main: wait j1;
                main: wait j2;
                main: wait j3;
            }
            main: launch empty<<<1, 1>>>();
            main: record fork;
            s1: wait fork;
            s2: wait fork;
            s3: wait fork;
            main: launch empty<<<1, 1>>>();
            s1: launch empty<<<1, 1>>>();
            s2: launch empty<<<1, 1>>>();
            s3: launch empty<<<1, 1>>>();
            s1: record j1;
            s2: record j2;
            s3: record j3;
        }
    }
}
