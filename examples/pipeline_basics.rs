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

fn main() -> Result<(), streamgraph::Error> {
    let mut x = DeviceBuffer::for_planning(256)?; // buffers to plan with, not to run
    let mut y = DeviceBuffer::for_planning(256)?;
    print!("{}", Plan::build(&FillCopy::new(&mut x, &mut y))?); // planned: needs no GPU
    let Ok(gpu) = Stream::on(None, 0).inspect_err(|e| eprintln!("{e}")) else { return Ok(()) };
    let mut x = DeviceBuffer::zeros(&gpu.device(), 256)?; // `gpu`: a stream on GPU 0
    let mut y = DeviceBuffer::zeros(&gpu.device(), 256)?;
    Eager::new(&gpu).run(&FillCopy::new(&mut x, &mut y))?; // eagerly, on two streams
    let graph = capture(&gpu, FillCopy::new(&mut x, &mut y))?; // into a CUDA graph
    graph.verify()?; // whose edges are the plan's, exactly
    graph.instantiate()?.replay(&gpu, 100)?; // replayed 100 times
    println!("y = {:?}…", &y.to_vec_on(&gpu)?[..4]);
    Ok(())
}
