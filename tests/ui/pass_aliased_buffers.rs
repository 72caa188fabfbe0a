//! Buffers under other names (renamed imports, aliases, slices of either, device flags): what
//! a parameter's type is, the compiler says through the traits, not the macro from the type's
//! name; planned without a GPU.
#![deny(warnings)]

use streamgraph::DeviceBuffer as Device;
use streamgraph::{DeviceFlag, Kernel, PinnedBuffer, Plan};

type Buf = Device<u32>;
type Host = PinnedBuffer<u32>;
type Hosts = [Host];

streamgraph::pipeline! {
    pipeline Aliased(
        x: &mut Buf,
        xs: &mut [Buf],
        hs: &Hosts,
        h: &Host,
        flags: &mut [DeviceFlag],
        k: &Kernel,
    ) {
        stream main;
        main: copy xs[0] <- hs[1];
        main: copy x <- h;
        main: fill flags[1] = 1u32;
        main: launch k<<<1, 32>>>(&mut xs[1], &x, &flags[0]);
    }
}

/// The case's program.
pub fn main() -> streamgraph::Result<()> {
    let k = Kernel::for_planning("k");
    let mut x = Device::<u32>::for_planning(8)?;
    let mut xs = vec![Device::for_planning(8)?, Device::for_planning(8)?];
    let hs = vec![
        PinnedBuffer::for_planning(8)?,
        PinnedBuffer::for_planning(8)?,
    ];
    let h = PinnedBuffer::for_planning(8)?;
    let mut flags = vec![DeviceFlag::for_planning()?, DeviceFlag::for_planning()?];
    let pipeline = Aliased::new(&mut x, &mut xs, &hs, &h, &mut flags, &k);
    let plan = Plan::build(&pipeline)?;
    assert_eq!(plan.len(), 4);
    plan.check_races()?;
    Ok(())
}
