//! What a random program may hold: [`RandomOptions`].

/// What [`RandomProgram::with_options`](super::RandomProgram::with_options) may generate.
///
/// The defaults generate every kind of statement and control structure; each `bool` turns one
/// feature off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomOptions {
    /// Fewest and most streams (both inclusive, at least 1).
    pub streams: (usize, usize),
    /// Fewest and most events (both inclusive).
    pub events: (usize, usize),
    /// Most statements (at least 1 is generated).
    pub max_statements: usize,
    /// How many device buffers the program touches (at least 1).
    pub buffers: usize,
    /// Elements (`u32`) in each device buffer (at least 1).
    pub buffer_len: usize,
    /// How many pinned host buffers host copies use (none: no host copies).
    pub pinned: usize,
    /// Elements (`u32`) in each pinned buffer (at least 1, at most `buffer_len`).
    pub pinned_len: usize,
    /// How many kernels launches choose from (at least 1).
    pub kernels: usize,
    /// Whether to generate `fill` statements.
    pub fills: bool,
    /// Whether to generate device-to-device `copy` statements.
    pub copies: bool,
    /// Whether to generate copies from pinned buffers to device memory and back.
    pub host_copies: bool,
    /// Whether to generate `host` statements (host functions).
    pub host_fns: bool,
    /// Whether fills and device-to-device copies may touch sub-ranges of buffers, and host
    /// copies any range of a device buffer (otherwise fills and device copies touch whole
    /// buffers and host copies the first `pinned_len` elements).
    pub sub_ranges: bool,
    /// Whether blocks of statements may form `for` loops, issued two or three times.
    pub loops: bool,
    /// Whether blocks of statements may sit in `if`s, issued or never issued.
    pub conditionals: bool,
    /// Whether a `wait` may name an event not recorded earlier (a no-op by the rules).
    pub waits_on_unrecorded: bool,
    /// Whether blocks of statements may form device `while` loops and device `if`/`else`s
    /// (conditional nodes when captured). Off by default.
    pub device_blocks: bool,
    /// With `device_blocks`: whether the bodies of device blocks are made to exercise their
    /// fork and join: a statement inside a body is on the block's stream half the time; a
    /// `wait` inside a body names an event recorded earlier in the same body three times in
    /// four when there is one (a wait on one recorded outside orders nothing there), and is
    /// then the block's stream's half the time; statements group into blocks of up to 24
    /// statements instead of 12; and device blocks nest one level deeper. So bodies hold
    /// streams that only wait, events recorded on one stream and waited for by the block's
    /// stream before it issues more, and blocks inside blocks inside blocks. Off by default (a
    /// seed's program stays what it was).
    pub body_orderings: bool,
    /// With `device_blocks`: whether blocks of statements may also form device `switch`es of
    /// one to four arms, their values distinct, out of order and with gaps (0 to 7), a last
    /// `_` arm half the time, the index fixed per program (0 to 9, so at times no arm takes
    /// it). Off by default (a seed's program stays what it was).
    pub switches: bool,
    /// With `device_blocks`: whether a device `while` is a signalled loop half the time
    /// (`while FLAG, signalled`, no limit). No statement writes a random program's flags, so
    /// such a loop never ends once entered: only captures, verified and never launched, may
    /// issue these programs. Off by default (a seed's program stays what it was).
    pub signalled_loops: bool,
    /// Whether to generate `call` statements: `call op(&mut bD, &bS)` of two different
    /// buffers, which [`RandomProgram::replay`](super::RandomProgram::replay) issues through
    /// [`RandomCallOp`](super::RandomCallOp) (a memset and two launches). Off by default (a
    /// seed's program stays what it was).
    pub calls: bool,
    /// Fewest and most temporaries (both inclusive; `(0, 0)`, the default: none, and a seed's
    /// program stays what it was). Each is a `u32` temporary allocated at the top level before
    /// a statement, on a random stream, and filled whole right there (whatever `fills` says),
    /// so that nothing reads it unwritten; statements then use it in place of a device buffer
    /// (launches, fills, copies and `call`s, in loops, `if`s and device blocks' bodies too)
    /// only where the program orders the use after every earlier write of it (a write: after
    /// every earlier use), so that temporaries never race; it is released after its last use
    /// on a stream that follows every use, or on the origin after `wait_stream`s on the streams
    /// that used it. The choices draw on numbers of their own: with temporaries, a seed's
    /// program is the one without, some operands swapped for temporaries and the temporaries'
    /// statements added.
    pub temps: (usize, usize),
    /// Fewest and most elements of a temporary (both inclusive, at least 1). Without
    /// `sub_ranges` a temporary of another length than the buffers is copied to and from
    /// temporaries of its own length only.
    pub temp_len: (usize, usize),
}

impl Default for RandomOptions {
    /// 2–6 streams, 1–4 events, up to 64 statements over 4 device buffers of 16 elements,
    /// 2 pinned buffers of 4 elements and 1 kernel; every statement kind, sub-ranges, loops,
    /// conditionals and waits on never-recorded events; no temporaries (1–32 elements when
    /// turned on).
    fn default() -> Self {
        RandomOptions {
            streams: (2, 6),
            events: (1, 4),
            max_statements: 64,
            buffers: 4,
            buffer_len: 16,
            pinned: 2,
            pinned_len: 4,
            kernels: 1,
            fills: true,
            copies: true,
            host_copies: true,
            host_fns: true,
            sub_ranges: true,
            loops: true,
            conditionals: true,
            waits_on_unrecorded: true,
            device_blocks: false,
            body_orderings: false,
            switches: false,
            signalled_loops: false,
            calls: false,
            temps: (0, 0),
            temp_len: (1, 32),
        }
    }
}
