//! Event arrays: `event ready[N];`, elements named by a constant (`ready[0]`) or picked by a
//! value at run time (`ready[i % 2]`), in the double-buffering idiom: two slots, the upload of
//! one overlapping the work on the other, each slot's events ordering its own reuse.
use streamgraph::{DeviceBuffer, Kernel, PinnedBuffer};

streamgraph::pipeline! {
    pipeline DoubleBuffer(input: &PinnedBuffer<f32>, slots: &mut [DeviceBuffer<f32>],
                          out: &mut DeviceBuffer<f32>, k: &Kernel, chunks: usize, n: usize) {
        stream upload;
        stream compute;
        event loaded[2];
        event used[2];
        for i in 0..chunks {
            upload: wait used[i % 2];
            upload: copy slots[i % 2] <- input.slice(i * n..(i + 1) * n);
            upload: record loaded[i % 2];
            compute: wait loaded[i % 2];
            compute: launch k<<<1, 1>>>(&mut out, &slots[i % 2]);
            compute: record used[i % 2];
        }
        compute: record loaded[0];
        upload: wait loaded[0];
    }
}

/// The case's program.
pub fn main() {
    let _ = DoubleBuffer::PROGRAM;
}
