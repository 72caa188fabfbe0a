"""Shared parts of the Python peers: the kernel source, sizes, statistics, the row schema and
the command line. The rows match bench-harness's JSON rows field for field:
{workload, system, variant, metric, unit, p50, p90, n, params, note}.
"""

import argparse
import bisect
import json
import math
import os
import sys
import time
import traceback

KERNELS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.cu")

# The sizes of the issue (same as `workloads::Sizes::full` in the Rust harness).
SIZES = {
    "w1_kernels": 10_000,
    "w2_nodes": 1_000,
    "w3_layers": 51,
    "w3_branches": 4,
    "w4_kernels": 4_096,
    "w4_widths": [1, 2, 4, 8, 16, 32],
    "w5_nodes": 1_000,
    "w6_replays": 10_000,
    "w6_gated": 64,
    "w6_gate_ns": 50_000_000,
    "w7_nodes": [10, 100, 1_000, 10_000],
    "w8_iterations": [10, 100, 1_000, 10_000],
    # W9: (total MiB, chunk MiB, device buffers, kernel rounds), as `workloads::Sizes::full`.
    "w9": [(64, 4, 3, 2_000), (64, 1, 3, 2_000), (64, 8, 2, 2_000), (64, 4, 3, 6_000)],
    # W11: (layers, width, batch, streams), as `workloads::Sizes::full`; steps per sample as
    # `mlp::STEPS`.
    "w11": [(2, 1024, 64, 2), (8, 4096, 1, 1), (8, 4096, 64, 2)],
    "w11_steps": 20,
    # W12: diamond layers of `spin` kernels, ns each, replays per sample (`decode::Decode`).
    "w12_layers": 40,
    "w12_kernel_ns": 2_000,
    "w12_steps": 10_000,
    # W13: (width of the three layers, one graph per batch size), as `workloads::Sizes::full`.
    "w13": [(1_024, [step * k for k in range(1, 33)]) for step in (8, 256)],
    # W14: W13's step at 8, 16, ..., 256 rows, serving `w14_requests` requests of seeded random
    # sizes per sample (`workloads::Sizes::full`'s `w14`, `W14_REQUESTS`, `W14_SEED`).
    "w14_width": 1_024,
    "w14_batches": [8 * k for k in range(1, 33)],
    "w14_requests": 256,
    "w14_seed": 14,
    # W14's second step: W12's diamond with a batch, 40 layers (`ServedStep::Decode`).
    "w14_decode_layers": 40,
}
MIN_REPS = 30
WARMUP = {"W1": 3, "W2": 5, "W3": 5, "W4": 5, "W5": 3, "W6": 1, "W7": 2, "W9": 2, "W10": 2, "W11": 3,
          "W12": 1, "W13": 1, "W14": 1}
# Samples at most, for workloads whose samples take seconds (`decode::MAX_REPS`).
MAX_REPS = {"W12": 10}


class PeerError(Exception):
    """A peer cannot run: a missing package or API, or a wrong result."""


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def kernel_source():
    try:
        with open(KERNELS_PATH, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        die(f"cannot read the shared kernels at {KERNELS_PATH}: {e}")


def quantile(sorted_samples, q):
    pos = q * (len(sorted_samples) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def summarize(samples):
    """(p50, p90, n) with the Rust harness's interpolation; (None, None, 0) when empty."""
    if not samples or any(math.isnan(s) for s in samples):
        return None, None, 0
    s = sorted(samples)
    return quantile(s, 0.5), quantile(s, 0.9), len(s)


def row(workload, system, variant, metric, unit, samples, params, note=None):
    p50, p90, n = summarize(samples or [])
    if p50 is None and note is None:
        note = "no valid samples"
    return {
        "workload": workload,
        "system": system,
        "variant": variant,
        "metric": metric,
        "unit": unit,
        "p50": p50,
        "p90": p90,
        "n": n,
        "params": params,
        "note": note,
    }


def us_since(t0_ns):
    return (time.perf_counter_ns() - t0_ns) / 1e3


def now_ns():
    return time.perf_counter_ns()


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", help="also write the JSON document to this file")
    p.add_argument("--reps", type=int, default=MIN_REPS, help="samples per measurement (default 30)")
    p.add_argument("--quick", action="store_true", help="smoke run: 5 samples, 1,000 W6 replays")
    p.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W3")
    a = p.parse_args()
    sizes = dict(SIZES)
    if a.quick:
        a.reps = 5
        sizes["w6_replays"] = 1_000
        sizes["w12_steps"] = 1_000
    if a.reps < 1:
        p.error("--reps must be at least 1")
    a.sizes = sizes
    a.only = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    return a


class Collector:
    """Runs one workload's samples and turns them into rows; a failing workload becomes rows
    with a note instead of stopping the other workloads."""

    def __init__(self, system, args):
        self.system = system
        self.args = args
        self.rows = []
        self.failures = 0

    def wants(self, workload):
        return not self.args.only or workload in self.args.only

    def run(self, workload, params, metrics, sample, setup_note=None):
        """`metrics`: [(variant, metric, unit)]; `sample()` returns one value per metric, or
        None for a metric this system cannot measure (then `setup_note` explains why)."""
        label = " ".join(f"{k}={v}" for k, v in params.items())
        reps = min(self.args.reps, MAX_REPS.get(workload, self.args.reps))
        print(f"{self.system}: running {workload} {label} ({reps} reps)", file=sys.stderr)
        columns = [[] for _ in metrics]
        try:
            for _ in range(WARMUP.get(workload, 2)):
                sample()
            for _ in range(reps):
                values = sample()
                if len(values) != len(metrics):
                    raise PeerError(f"sample returned {len(values)} values for {len(metrics)} metrics")
                for col, v in zip(columns, values):
                    if v is not None:
                        col.append(float(v))
        except Exception as e:  # a workload's failure is reported in its rows, not fatal
            self.failures += 1
            why = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
            for variant, metric, unit in metrics:
                self.rows.append(row(workload, self.system, variant, metric, unit, [], params, why))
            return
        for (variant, metric, unit), col in zip(metrics, columns):
            note = None if col else (setup_note or "not measurable in this system")
            self.rows.append(row(workload, self.system, variant, metric, unit, col, params, note))

    def unsupported(self, workload, params, metrics, why):
        for variant, metric, unit in metrics:
            self.rows.append(row(workload, self.system, variant, metric, unit, [], params, why))

    def finish(self, meta):
        doc = {"schema": 1, "meta": meta, "rows": self.rows}
        text = json.dumps(doc, indent=1)
        print(text)
        if self.args.json:
            with open(self.args.json, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        measured = sum(1 for r in self.rows if r["p50"] is not None)
        print(f"{self.system}: {measured} of {len(self.rows)} rows measured, "
              f"{self.failures} workloads failed", file=sys.stderr)
        if measured == 0:
            die(f"{self.system}: nothing was measured")
        sys.exit(1 if self.failures else 0)


# Metric lists, in the Rust harness's order (workloads.rs).
W1_METRICS = [("eager", "host_per_launch", "us"), ("eager", "device_per_launch", "us"),
              ("eager", "event_calls", "count")]
W2_METRICS = [("replay", "device_per_node", "us"), ("replay", "host_launch", "us"),
              ("eager", "device_per_node", "us"), ("eager", "host_per_launch", "us")]
W3_METRICS = [("replay", "device_per_node", "us"), ("replay", "device_total", "us"),
              ("replay", "host_launch", "us"), ("eager", "device_total", "us"),
              ("eager", "host_issue", "us"), ("eager", "event_calls", "count"),
              ("capture", "capture", "us"), ("capture", "instantiate", "us"),
              ("capture", "total", "us")]
W4_METRICS = [("replay", "device_per_kernel", "us"), ("replay", "host_launch", "us")]
W5_METRICS = [("set_params", "host_per_node", "us"), ("set_params", "replay_device_per_node", "us"),
              ("set_params", "instantiations", "count"), ("exec_update", "host_per_node", "us"),
              ("reinstantiate", "host_per_node", "us")]
W6_METRICS = [("replay_loop", "gpu_idle", "%"), ("replay_loop", "wall_per_replay", "us"),
              ("replay_loop", "saturated_replay", "us"), ("replay_loop", "device_per_replay", "us")]
W9_METRICS = [("eager", "end_to_end", "us"), ("eager", "overlap", "x"),
              ("replay", "end_to_end", "us"), ("replay", "overlap", "x"),
              ("bounds", "h2d", "us"), ("bounds", "kernel", "us"), ("bounds", "d2h", "us"),
              ("bounds", "duplex", "us")]
W7_METRICS = [("capture+instantiate", "capture", "us"), ("capture+instantiate", "instantiate", "us"),
              ("capture+instantiate", "total", "us"), ("capture+instantiate", "total_per_node", "us")]
W10_METRICS = [("eager", "latency", "us"), ("eager", "alg_bandwidth", "GB/s"),
               ("eager", "bus_bandwidth", "GB/s"), ("replay", "latency", "us"),
               ("replay", "alg_bandwidth", "GB/s"), ("replay", "bus_bandwidth", "GB/s")]
W11_METRICS = [("replay", "device_per_step", "us"), ("replay", "host_per_step", "us"),
               ("eager", "device_per_step", "us"), ("eager", "host_per_step", "us"),
               ("capture+instantiate", "capture", "us"), ("capture+instantiate", "instantiate", "us"),
               ("capture+instantiate", "total", "us")]
W12_METRICS = [("replay_loop", "steps_per_second", "1/s"), ("replay_loop", "host_per_step", "us"),
               ("replay_loop", "device_per_step", "us"), ("replay_loop", "wall_per_step", "us")]
W13_METRICS = [("capture_all", "host", "ms"), ("memory", "after_instantiate", "MiB"),
               ("memory", "after_replay", "MiB"), ("memory", "after_replay_per_plan_peak", "x"),
               ("pool", "reserved_high", "MiB"), ("pool", "used_high", "MiB"),
               ("plan", "peak_largest", "MiB"), ("plan", "peak_sum", "MiB"), ("ops", "memory", "MiB")]
W14_METRICS = [("capture_all", "host", "ms"), ("memory", "after_first_runs", "MiB"),
               ("pool", "graph_reserved", "MiB"), ("step", "device", "us"), ("step", "wall", "us"),
               ("step", "host_launch", "us"), ("plan", "peak_largest", "MiB")]
W8_METRICS = [("eager", "host_per_iteration", "us"), ("eager", "device_per_iteration", "us"),
              ("host_loop", "host_per_iteration", "us"), ("host_loop", "device_per_iteration", "us"),
              ("device_loop", "host_per_iteration", "us"), ("device_loop", "device_per_iteration", "us"),
              ("signalled_loop", "host_per_iteration", "us"), ("signalled_loop", "device_per_iteration", "us")]


def diamond_event_calls(layers, branches):
    """Record and wait calls of one eager diamond (as in raw.rs)."""
    sides = branches - 1
    return layers * (1 + 3 * sides)


def w12_params(sizes):
    """W12's parameters as the harness reports them."""
    layers = sizes["w12_layers"]
    return {"layers": layers, "kernels_per_step": 5 * layers, "kernel_ns": sizes["w12_kernel_ns"],
            "steps": sizes["w12_steps"]}


def w12_metrics(steps, host_us, wall_us, device_us):
    """One W12 sample's metrics, in W12_METRICS's order."""
    return [steps / (wall_us * 1e-6), host_us / steps, device_us / steps, wall_us / steps]


# W13's step: three layers (`many_shapes::LAYERS`), and the cuBLAS workspace of every system:
# none (`many_shapes::WORKSPACE`). torch reads the variable once, at its first cuBLAS call.
W13_LAYERS = 3
W13_CUBLAS_WORKSPACE_CONFIG = ":0:0"


def w13_params(width, batches):
    """W13's parameters as the harness reports them (serde_json sorts the keys)."""
    return {"batch_max": batches[-1], "batch_min": batches[0], "graphs": len(batches),
            "layers": W13_LAYERS, "width": width}


def w13_plan_bytes(width, batches):
    """(largest, sum): the bytes of the two hidden activations of the largest batch's step,
    and of every batch's summed: `Plan::temp_peak_bytes` of the harness's `StepTemps`."""
    per_row = 2 * width * 4
    return per_row * batches[-1], per_row * sum(batches)


# W14's steps, in the harness's order (`workloads::Sizes::full`'s `w14`).
W14_STEPS = ("mlp", "decode")


def w14_params(sizes, step):
    """W14's parameters of `step` ("mlp" or "decode") as the harness reports them."""
    batches = sizes["w14_batches"]
    layers = W13_LAYERS if step == "mlp" else sizes["w14_decode_layers"]
    return {"batch_max": batches[-1], "batch_min": batches[0], "graphs": len(batches),
            "layers": layers, "requests": sizes["w14_requests"], "seed": sizes["w14_seed"],
            "step": step, "width": sizes["w14_width"]}


def w14_plan_bytes(sizes, step):
    """`Plan::temp_peak_bytes` of the largest batch's step: W13's two activations, or the
    decode step's four branch outputs, all live at once."""
    width, largest = sizes["w14_width"], sizes["w14_batches"][-1]
    if step == "mlp":
        return w13_plan_bytes(width, sizes["w14_batches"])[0]
    return 4 * width * largest * 4


def w14_requests(seed, count, largest):
    """`count` request sizes uniform in 1..=largest from a xorshift64 seeded with `seed`: the
    sequence of the harness's `few_graphs::requests`."""
    mask = (1 << 64) - 1
    s = ((seed * 0x9E3779B97F4A7C15) & mask) | 1
    out = []
    for _ in range(count):
        s ^= (s << 13) & mask
        s ^= s >> 7
        s ^= (s << 17) & mask
        out.append(1 + s % largest)
    return out


# `few_graphs::SELF_TEST_REQUESTS`: both generators must give these.
W14_SELF_TEST_REQUESTS = [118, 192, 7, 43, 109, 31, 117, 227]
if w14_requests(14, 8, 256) != W14_SELF_TEST_REQUESTS:
    raise AssertionError("w14_requests differs from the harness's few_graphs::requests")


def w14_bucket(batches, n):
    """The smallest of the ascending `batches` that holds `n` (`Buckets::bucket_for`)."""
    i = bisect.bisect_left(batches, n)
    if i == len(batches):
        raise PeerError(f"a request of {n} is larger than the largest bucket ({batches[-1]})")
    return batches[i]


def median(samples):
    """p50 with the harness's interpolation."""
    return quantile(sorted(samples), 0.5)


def idle_percent(replays, saturated_us, wall_us):
    return max(0.0, 1.0 - replays * saturated_us / wall_us) * 100.0


def check_gate(queued_us, gated, gate_ns):
    if queued_us * 1e3 > 0.8 * gate_ns:
        raise PeerError(f"queueing {gated} replays took {queued_us:.0f} us, close to the "
                        f"{gate_ns // 1000} us gate: raise w6_gate_ns")


class CoreKernels:
    """The shared kernels compiled with NVRTC through cuda.core's `Program` and launched with
    `cuda.core.launch` (one block of one thread, like the Rust harness)."""

    def __init__(self):
        try:
            import cuda.core as core
            core.Device  # noqa: B018 (probe: 1.x exports the API at the top level)
        except (ImportError, AttributeError):
            try:
                import cuda.core.experimental as core
            except ImportError as e:
                raise PeerError(f"cuda.core is not importable ({e}); install cuda-core 1.x") from e
        self.core = core
        self.dev = core.Device(0)
        self.dev.set_current()
        arch = f"sm_{self.dev.arch}"
        try:
            prog = core.Program(kernel_source(), code_type="c++", options=core.ProgramOptions(arch=arch))
            obj = prog.compile("cubin")
            self.empty = obj.get_kernel("empty")
            self.stamp = obj.get_kernel("stamp")
            self.spin = obj.get_kernel("spin")
            self.work = obj.get_kernel("work")
            self.bias_act = obj.get_kernel("bias_act")
            self.decode_branch = obj.get_kernel("decode_branch")
            self.decode_mix = obj.get_kernel("decode_mix")
        except Exception as e:
            raise PeerError(f"NVRTC (through cuda.core.Program) could not build kernels.cu for {arch}: {e}") from e
        self.config = core.LaunchConfig(grid=1, block=1)
        self.launch = core.launch
        self.arch = arch

    def wrap(self, handle):
        """A cuda.core Stream over a foreign stream handle (an int), e.g. a torch stream."""
        stream_cls = getattr(self.core, "Stream", None)
        if stream_cls is not None and hasattr(stream_cls, "from_handle"):
            return stream_cls.from_handle(int(handle))

        class Foreign:
            def __cuda_stream__(self):
                return (0, int(handle))

        return self.dev.create_stream(Foreign())

    def warm(self, stream, sync, slot_ptr=None):
        """Launches each kernel once outside any capture (module and kernel loading may be
        lazy, and loading during a capture is best avoided), then calls `sync()`."""
        import numpy as np

        self.launch(stream, self.config, self.empty)
        self.launch(stream, self.config, self.spin, np.uint64(0))
        if slot_ptr is not None:
            self.launch(stream, self.config, self.stamp, int(slot_ptr), np.uint32(0))
        sync()
