//! The README's first pipeline ("A first pipeline"), as its Setup runs it:
//! `cargo run --example pipeline_basics`. Without a GPU it prints the pipeline's plan and says why
//! it stops there; with one it also runs the pipeline eagerly, captures it into a CUDA graph,
//! checks the graph against the plan, replays it 100 times and prints the result.

use streamgraph::{capture, pipeline, DeviceBuffer, Eager, Plan, Stream};

pipeline! {
    pipeline FillCopy(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>) {
        stream main; stream side; // the first one declared is the origin
        side: fill x = 2.0f32;
        main: wait_stream side; // what `side` has issued so far happens before what follows
        main: copy y <- x;
    }
}

fn run() -> streamgraph::Result<()> {
    let mut x = DeviceBuffer::for_planning(256)?; // buffers for planning only
    let mut y = DeviceBuffer::for_planning(256)?;
    print!("{}", Plan::build(&FillCopy::new(&mut x, &mut y))?); // planned: needs no GPU
    let stream = Stream::on(None, 0)?; // a stream on the first GPU
    let mut x = DeviceBuffer::zeros(&stream.device(), 256)?;
    let mut y = DeviceBuffer::zeros(&stream.device(), 256)?;
    Eager::new(&stream).run(&FillCopy::new(&mut x, &mut y))?; // eagerly, on two streams
    let graph = capture(&stream, FillCopy::new(&mut x, &mut y))?; // into a CUDA graph
    graph.verify()?; // whose edges are the plan's, exactly
    graph.instantiate()?.replay(&stream, 100)?; // replayed 100 times
    println!("y = {:?}…", &y.to_vec_on(&stream)?[..4]);
    Ok(())
}

fn main() -> std::process::ExitCode {
    let Err(e) = run() else { return 0.into() };
    eprintln!("{e}"); // without a GPU, the plan above is all that runs: not a failure
    u8::from(!e.is_unavailable()).into()
}
