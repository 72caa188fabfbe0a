//! Shared by the `plan_*` tests: issuing hand-made programs into a `Planner`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use streamgraph::__private::{arg_value, fill};
use streamgraph::{
    AccessMode, DeviceMemory, DeviceMemoryMut, DeviceRange, Dim3, Error, Issuer, Kernel, KernelArg,
    LaunchConfig, Program, StatementKind,
};
use streamgraph::{Plan, Planner};

/// Memory with a chosen address range, to make exact overlaps.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    pub device: i32,
    pub ptr: u64,
    pub bytes: usize,
}

impl Region {
    pub fn new(ptr: u64, bytes: usize) -> Region {
        Region {
            device: DeviceRange::PLANNING,
            ptr,
            bytes,
        }
    }
}

// SAFETY: a `Region` names an address range on a made-up device and is only ever issued into
// a `Planner` (the `plan_*` tests), which records the range and never hands it to the driver
// or dereferences it; `u8` elements make any length whole.
unsafe impl DeviceMemory for Region {
    type Elem = u8;
    fn range(&self) -> DeviceRange {
        DeviceRange {
            device: self.device,
            ptr: self.ptr,
            bytes: self.bytes,
        }
    }
}

// SAFETY: as for `DeviceMemory`: nothing ever writes the range, the planner only records it.
unsafe impl DeviceMemoryMut for Region {}

pub fn config() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(32),
        shared_mem_bytes: 0,
    }
}

/// Issues statement `id` of `program` into `issuer`; buffers are looked up by name in
/// `regions`, or get a distinct 1 KiB range of their own.
pub fn issue<I: Issuer + ?Sized>(
    issuer: &mut I,
    program: &'static Program,
    id: usize,
    regions: &HashMap<&str, Region>,
) -> Result<(), Error> {
    let stmt = &program.statements[id];
    let region = |name: &str| {
        regions.get(name).copied().unwrap_or_else(|| {
            let index = program
                .statements
                .iter()
                .flat_map(|s| s.accesses.iter())
                .position(|a| a.buffer == name)
                .unwrap_or(0) as u64;
            Region::new(0x7000_0000 + index * 0x1_0000, 1024)
        })
    };
    match stmt.kind {
        StatementKind::Launch { kernel } => {
            let mut buffers: Vec<Region> = stmt.accesses.iter().map(|a| region(a.buffer)).collect();
            let n = 7u32;
            let mut args: Vec<_> = stmt
                .accesses
                .iter()
                .zip(&mut buffers)
                .map(|(a, r)| match a.mode {
                    AccessMode::Read => KernelArg::read::<Region>(r),
                    AccessMode::Write => KernelArg::write(r),
                })
                .collect();
            args.push(arg_value(&n));
            issuer.launch(stmt, &Kernel::for_planning(kernel), config(), &args)
        }
        StatementKind::Fill => {
            let mut target = region(stmt.accesses[0].buffer);
            fill(issuer, stmt, &&mut target, 0u8)
        }
        StatementKind::Host => issuer.host(stmt, Arc::new(|| {})),
        StatementKind::Copy => {
            panic!("copies need CopySource/CopyTarget memory; see the unit tests")
        }
        StatementKind::Call { .. } => {
            panic!("calls need an op; see tests/call_statements.rs")
        }
        StatementKind::Record { .. } => issuer.record(stmt),
        StatementKind::Wait { .. } => issuer.wait(stmt),
        StatementKind::WaitStream { .. } => issuer.wait_stream(stmt),
        StatementKind::While { .. } | StatementKind::If { .. } | StatementKind::Switch { .. } => {
            panic!("device blocks are issued with their bodies; see tests/device_blocks.rs")
        }
        StatementKind::Collective { .. } => {
            panic!("collectives are issued with every participant; see tests/plan_collectives.rs")
        }
        StatementKind::Alloc { .. } | StatementKind::Free { .. } => {
            panic!("temporaries are allocated and freed in a scope; see tests/temporaries.rs")
        }
    }
}

/// The plan of issuing `script` (statement ids, repeated for loops) with `regions`.
pub fn plan_with(
    program: &'static Program,
    script: &[usize],
    regions: &HashMap<&str, Region>,
) -> Plan {
    let mut planner = Planner::new(program);
    for &id in script {
        issue(&mut planner, program, id, regions).unwrap();
    }
    planner.finish()
}

/// The plan of issuing `script`, every buffer name its own memory.
pub fn plan(program: &'static Program, script: &[usize]) -> Plan {
    plan_with(program, script, &HashMap::new())
}

/// The plan of issuing every statement once, in order.
pub fn plan_all(program: &'static Program) -> Plan {
    let script: Vec<usize> = (0..program.statements.len()).collect();
    plan(program, &script)
}
