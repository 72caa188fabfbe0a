#!/usr/bin/env python3
"""PyTorch peer of bench-harness: the same workloads with torch streams, torch events and
`torch.cuda.CUDAGraph`, launching the SAME kernels (benches/peers/kernels.cu, compiled with
NVRTC through cuda.core's Program and launched onto torch's streams with cuda.core.launch).

Prints one JSON document (schema of bench-harness) on stdout; progress on stderr.
Exit status: 0 when every workload ran, 1 when any failed or nothing could be measured.
"""

import json
import os
import subprocess
import sys
import tempfile

import common as c

SYSTEM = "torch"


def diamond_issue(ts, cs, fork, joins, layers, launch):
    """W3's diamond on torch streams `ts` (`cs`: the same as cuda.core streams), `launch(cs)`
    for every kernel: per layer one kernel on the origin, `fork` waited on by the side streams,
    one kernel on every stream, and joins that the next layer's origin kernel (or the end)
    waits on. As `raw.rs`'s `DiamondStreams::issue_with`."""
    o = ts[0]
    for layer in range(layers):
        if layer > 0:
            for j in joins[1:]:
                o.wait_event(j)
        launch(cs[0])
        fork.record(o)
        for t in ts[1:]:
            t.wait_event(fork)
        for b in range(len(ts)):
            launch(cs[b])
        for t, j in zip(ts[1:], joins[1:]):
            j.record(t)
    for j in joins[1:]:
        o.wait_event(j)


def child(col, args, workload, params):
    """`workload` (W13 or W14) in a process of its own: it needs CUBLAS_WORKSPACE_CONFIG set
    before torch's first cuBLAS call, which the other workloads make with torch's default
    workspace, and a fresh caching allocator. Its rows join this process's; `params` are the
    workload's parameter sets, for the rows of a child that gave none."""
    metrics = {"W13": c.W13_METRICS, "W14": c.W14_METRICS}[workload]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{workload.lower()}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--only", workload, "--json", path]
        cmd += ["--quick"] if args.quick else ["--reps", str(args.reps)]
        try:
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False).returncode
            with open(path, encoding="utf-8") as f:
                rows = json.load(f)["rows"]
        except (OSError, ValueError, KeyError) as e:
            col.failures += 1
            for p in params:
                col.unsupported(workload, p, metrics, f"{workload}'s own process gave no rows: {e}")
            return
    col.rows.extend(rows)
    if rc != 0:
        col.failures += 1


class ManyShapes:
    """The harness's `many_shapes.rs` step (W13, W14): three layers of `torch.mm` through
    cuBLAS into a new tensor, then the shared `bias_act` kernel in place; the last layer's
    product goes into the first rows of a static `y` with `out=`. Static max-size `x` and `y`,
    each batch on their first `b` rows, on a stream of its own (`self.stream`)."""

    def __init__(self, torch, k, width, batches):
        import numpy as np

        self.torch, self.k, self.np = torch, k, np
        torch.backends.cuda.matmul.allow_tf32 = False  # f32 GEMMs, as the harness's
        self.width, self.batches, self.bmax = width, batches, batches[-1]
        gen = torch.Generator().manual_seed(13)
        bound = (6.0 / width) ** 0.5
        # W is [in x out], as the harness's (row-major x @ W).
        self.ws = [((torch.rand(width, width, generator=gen) * 2 - 1) * bound).cuda()
                   for _ in range(c.W13_LAYERS)]
        self.bs = [((torch.rand(width, generator=gen) * 2 - 1) * 0.1).cuda() for _ in range(c.W13_LAYERS)]
        self.x = (torch.rand(self.bmax, width, generator=gen) * 2 - 1).cuda()
        self.y = torch.zeros(self.bmax, width, device="cuda")
        self.stream = torch.cuda.Stream()
        self.cs = k.wrap(self.stream.cuda_stream)
        self.configs = {b: k.core.LaunchConfig(grid=(b * width + 255) // 256, block=256) for b in batches}
        want = self.x.double()
        for i in range(c.W13_LAYERS):
            want = want @ self.ws[i].double() + self.bs[i].double()
            if i + 1 < c.W13_LAYERS:
                want = torch.relu(want)
        self.want = want

    def bias_act(self, t, bias, b, relu):
        np = self.np
        self.k.launch(self.cs, self.configs[b], self.k.bias_act, int(t.data_ptr()), int(bias.data_ptr()),
                      np.uint32(b * self.width), np.uint32(self.width), np.uint32(relu))

    def step(self, b):
        torch = self.torch
        h = torch.mm(self.x[:b], self.ws[0])
        self.bias_act(h, self.bs[0], b, 1)
        h = torch.mm(h, self.ws[1])  # the first activation is freed here: two live at most
        self.bias_act(h, self.bs[1], b, 1)
        out = self.y[:b]
        torch.mm(h, self.ws[2], out=out)
        self.bias_act(out, self.bs[2], b, 0)

    def warm(self):
        """Every batch's step once: cuBLAS's handle and kernels load here, before any baseline."""
        with self.torch.cuda.stream(self.stream):
            for b in self.batches:
                self.step(b)
        self.torch.cuda.synchronize()

    def capture_all(self):
        """One `CUDAGraph` per batch size, all in one pool, largest first (capture_end also
        instantiates): ({batch: graph}, host ms)."""
        torch = self.torch
        pool = torch.cuda.graph_pool_handle()
        graphs = {}
        t0 = c.now_ns()
        for b in reversed(self.batches):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.stream(self.stream):
                g.capture_begin(pool=pool, capture_error_mode="thread_local")
                try:
                    self.step(b)
                finally:
                    g.capture_end()
            graphs[b] = g
        return graphs, c.us_since(t0) / 1e3

    def check(self, workload, run):
        """For the smallest and the largest batch: `y` poisoned with NaN, `run(b)` on the stream,
        every row of the batch against the f64 reference, row `b` untouched."""
        torch = self.torch
        for b in (self.batches[0], self.bmax):
            self.y.fill_(float("nan"))
            torch.cuda.synchronize()
            with torch.cuda.stream(self.stream):
                run(b)
            torch.cuda.synchronize()
            err = (self.y[:b].double() - self.want[:b]).abs().max().item()
            if not err <= 1e-3 * max(1.0, self.want[:b].abs().max().item()):
                raise c.PeerError(f"{workload}: the graph of batch {b} is off the f64 reference by {err}")
            if b < self.bmax and not torch.isnan(self.y[b]).all().item():
                raise c.PeerError(f"{workload}: the graph of batch {b} wrote row {b}, past its batch")

    def release(self):
        del self.x, self.y, self.ws, self.bs, self.want
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class DecodeShapes(ManyShapes):
    """The harness's `decode_shapes.rs` step (W14's second): the state `y` starts as a copy of
    `x`, then `layers` layers of W12's diamond over four torch streams (`wait_stream` forks and
    joins): `decode_branch` on each stream into one of four tensors allocated at the step's
    start (the harness's temporaries), then `decode_mix` on the origin. Static max-size `x` and
    `y`, each batch on their first `b` rows; `check`, `capture_all` and `warm` as `ManyShapes`."""

    SLOPE = (0.25, 0.375, 0.5, 0.625)

    def __init__(self, torch, k, width, batches, layers):
        import numpy as np

        self.torch, self.k, self.np = torch, k, np
        self.width, self.batches, self.bmax, self.layers = width, batches, batches[-1], layers
        gen = torch.Generator().manual_seed(14)
        self.x = (torch.rand(self.bmax, width, generator=gen) * 2 - 1).cuda()
        self.y = torch.zeros(self.bmax, width, device="cuda")
        self.stream = torch.cuda.Stream()
        self.sides = [torch.cuda.Stream() for _ in range(3)]
        self.cs = k.wrap(self.stream.cuda_stream)
        self.side_cs = [k.wrap(t.cuda_stream) for t in self.sides]
        self.configs = {b: k.core.LaunchConfig(grid=(b * width + 255) // 256, block=256) for b in batches}
        want = self.x.double()
        for layer in range(layers):
            total = sum(torch.relu(self.SLOPE[j] * want + self.offset(layer, j)) for j in range(4))
            want = 0.5 * want + 0.25 * total
        self.want = want

    @staticmethod
    def offset(layer, j):
        """`c` of branch `j` in `layer`, as `decode_shapes::offset` (rounded to f32 there too)."""
        import numpy as np

        return float(np.float32(0.02) * np.float32((layer + j) % 5) - np.float32(0.03))

    def step(self, b):
        torch, np, k = self.torch, self.np, self.k
        n = b * self.width
        cfg, nn = self.configs[b], np.uint32(n)
        y = self.y[:b]
        y.copy_(self.x[:b])
        hs = [torch.empty(n, device="cuda") for _ in range(4)]
        launch_on = [self.cs] + self.side_cs
        for layer in range(self.layers):
            for t in self.sides:
                t.wait_stream(self.stream)
            for j in range(4):
                k.launch(launch_on[j], cfg, k.decode_branch, int(hs[j].data_ptr()), int(y.data_ptr()), nn,
                         np.float32(self.SLOPE[j]), np.float32(self.offset(layer, j)))
            for t in self.sides:
                self.stream.wait_stream(t)
            k.launch(self.cs, cfg, k.decode_mix, int(y.data_ptr()), *[int(h.data_ptr()) for h in hs], nn)

    def release(self):
        del self.x, self.y, self.want
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class Baseline:
    """The device memory in use when a cycle starts (`mem_get_info`, after `empty_cache`), and
    the caching allocator's reserved and allocated bytes then."""

    def __init__(self, torch):
        self.torch = torch
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        self.used = total - free
        self.reserved = torch.cuda.memory_reserved()
        self.allocated = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()

    def over(self):
        """Bytes in use over the baseline, after a synchronization."""
        self.torch.cuda.synchronize()
        free, total = self.torch.cuda.mem_get_info()
        return total - free - self.used

    def end(self):
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


def w13(torch, k, col, width, batches):
    """W13: the `ManyShapes` step captured as one `torch.cuda.CUDAGraph` per batch size into one
    pool (`torch.cuda.graph_pool_handle()`), largest batch first, as vLLM does. Each sample is
    one cycle: baseline (`mem_get_info`, after `empty_cache`), every capture (capture_end also
    instantiates), memory in use over the baseline, every graph replayed once smallest first,
    memory again, `memory_reserved` and `max_memory_allocated` over theirs; then the graphs
    are deleted and the cache emptied."""
    params = c.w13_params(width, batches)
    mib = float(1 << 20)
    peak_largest, peak_sum = c.w13_plan_bytes(width, batches)
    m = ManyShapes(torch, k, width, batches)

    def cycle(checked):
        base = Baseline(torch)
        graphs, capture_ms = m.capture_all()
        after_instantiate = base.over()
        with torch.cuda.stream(m.stream):
            for b in batches:
                graphs[b].replay()
        after_replay = base.over()
        reserved = torch.cuda.memory_reserved() - base.reserved
        used_high = torch.cuda.max_memory_allocated() - base.allocated
        if checked:
            m.check("W13", lambda b: graphs[b].replay())
        del graphs
        base.end()
        return [capture_ms, after_instantiate / mib, after_replay / mib, after_replay / peak_largest,
                reserved / mib, used_high / mib, peak_largest / mib, peak_sum / mib, None]

    try:
        m.warm()
        cycle(True)
    except Exception as e:  # reported in the rows, like a failed sample
        col.failures += 1
        col.unsupported("W13", params, c.W13_METRICS, f"{type(e).__name__}: {e}")
        return
    col.run("W13", params, c.W13_METRICS, lambda: cycle(False),
            setup_note="torch's cuBLAS handle is made by the warm-up, before every baseline: "
                       "not measured apart")
    m.release()


def w14(torch, k, col, sz, step):
    """W14 over `step` ("mlp": W13's `ManyShapes`; "decode": `DecodeShapes`): the 32 graphs in
    one pool (largest first) serving requests of seeded random sizes,
    each padded to its bucket (the smallest batch size that holds it) and that bucket's graph
    replayed. Each sample is one cycle: baseline; every capture (host ms, capture_end also
    instantiates); every graph replayed once, smallest first; memory in use over the baseline and
    `memory_reserved` over its baseline (the caching allocator's segments, the graphs' pool among
    them); then every request alone: the start event, bucket lookup and `replay()` (host µs), the
    end event, `end.synchronize()` (wall µs from the call), device µs between the events; the
    medians over the requests. Then the graphs are deleted and the cache emptied."""
    batches, width = sz["w14_batches"], sz["w14_width"]
    params = c.w14_params(sz, step)
    mib = float(1 << 20)
    peak_largest = c.w14_plan_bytes(sz, step)
    requests = c.w14_requests(sz["w14_seed"], sz["w14_requests"], batches[-1])
    if step == "mlp":
        m = ManyShapes(torch, k, width, batches)
    else:
        m = DecodeShapes(torch, k, width, batches, sz["w14_decode_layers"])
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def serve(graphs):
        device, wall, host = [], [], []
        s = m.stream
        with torch.cuda.stream(s):
            for n in requests:
                start.record(s)
                t0 = c.now_ns()
                graphs[c.w14_bucket(batches, n)].replay()
                host.append(c.us_since(t0))
                end.record(s)
                end.synchronize()
                wall.append(c.us_since(t0))
                device.append(start.elapsed_time(end) * 1e3)
        return c.median(device), c.median(wall), c.median(host)

    def cycle(checked):
        base = Baseline(torch)
        graphs, capture_ms = m.capture_all()
        with torch.cuda.stream(m.stream):
            for b in batches:
                graphs[b].replay()
        after = base.over()
        reserved = torch.cuda.memory_reserved() - base.reserved
        if checked:
            m.check("W14", lambda b: graphs[b].replay())
        device, wall, host = serve(graphs)
        del graphs
        base.end()
        return [capture_ms, after / mib, reserved / mib, device, wall, host, peak_largest / mib]

    try:
        m.warm()
        cycle(True)
    except Exception as e:  # reported in the rows, like a failed sample
        col.failures += 1
        col.unsupported("W14", params, c.W14_METRICS, f"{type(e).__name__}: {e}")
        return
    col.run("W14", params, c.W14_METRICS, lambda: cycle(False))
    m.release()


def main():
    args = c.parse_args(__doc__)
    # W13 or W14 alone: no cuBLAS workspace (as the harness's GEMM ops), set before torch
    # loads cuBLAS; with other workloads each runs in a process of its own (`child`).
    alone = len(args.only) == 1 and args.only[0] in ("W13", "W14")
    if alone:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = c.W13_CUBLAS_WORKSPACE_CONFIG
    try:
        import torch
    except ImportError as e:
        c.die(f"PyTorch is not importable ({e}); the torch peer needs torch with CUDA")
    if not torch.cuda.is_available():
        c.die("torch.cuda.is_available() is False: no usable CUDA device for the torch peer")
    for api in ("CUDAGraph", "Stream", "Event"):
        if not hasattr(torch.cuda, api):
            c.die(f"torch.cuda.{api} is missing in torch {torch.__version__}")
    torch.cuda.init()
    try:
        k = c.CoreKernels()
    except c.PeerError as e:
        c.die(str(e))
    warm_stream = torch.cuda.Stream()
    warm_slot = torch.zeros(1, dtype=torch.int32, device="cuda")
    k.warm(k.wrap(warm_stream.cuda_stream), torch.cuda.synchronize, warm_slot.data_ptr())
    sz = args.sizes
    col = c.Collector(SYSTEM, args)

    def timing_event():
        return torch.cuda.Event(enable_timing=True)

    def edge_event():
        return torch.cuda.Event()  # timing disabled: the cheap kind, as in raw.rs

    def launch_empty(cs):
        k.launch(cs, k.config, k.empty)

    def capture(origin, issue):
        """Captures `issue()` on torch stream `origin`; returns (graph, capture µs) where the
        time covers capture_begin..capture_end, which also instantiates (torch does not split
        the two)."""
        g = torch.cuda.CUDAGraph()
        t0 = c.now_ns()
        with torch.cuda.stream(origin):
            g.capture_begin(capture_error_mode="thread_local")
            try:
                issue()
            finally:
                g.capture_end()
        return g, c.us_since(t0)

    def replay(g, origin, start, end):
        with torch.cuda.stream(origin):
            start.record(origin)
            t0 = c.now_ns()
            g.replay()
            host = c.us_since(t0)
            end.record(origin)
        end.synchronize()
        return start.elapsed_time(end) * 1e3, host

    # W1 ------------------------------------------------------------------------------------
    if col.wants("W1"):
        n = sz["w1_kernels"]
        s = torch.cuda.Stream()
        cs = k.wrap(s.cuda_stream)
        start, end = timing_event(), timing_event()

        def w1():
            start.record(s)
            t0 = c.now_ns()
            for _ in range(n):
                launch_empty(cs)
            host = c.us_since(t0)
            end.record(s)
            end.synchronize()
            return [host / n, start.elapsed_time(end) * 1e3 / n, 0]

        col.run("W1", {"kernels": n}, c.W1_METRICS, w1)

    # W2 ------------------------------------------------------------------------------------
    if col.wants("W2"):
        n = sz["w2_nodes"]
        s = torch.cuda.Stream()
        cs = k.wrap(s.cuda_stream)
        start, end = timing_event(), timing_event()

        def chain():
            for _ in range(n):
                launch_empty(cs)

        g, _ = capture(s, chain)

        def w2():
            dev, host = replay(g, s, start, end)
            start.record(s)
            t0 = c.now_ns()
            chain()
            eager_host = c.us_since(t0)
            end.record(s)
            end.synchronize()
            return [dev / n, host, start.elapsed_time(end) * 1e3 / n, eager_host / n]

        col.run("W2", {"nodes": n}, c.W2_METRICS, w2)

        # Context only: torch's own elementwise kernel instead of the shared one.
        x = torch.zeros(1, device="cuda")

        def native_chain():
            for _ in range(n):
                x.add_(1.0)

        with torch.cuda.stream(s):
            native_chain()  # warm the op up outside capture
        s.synchronize()
        gn, _ = capture(s, native_chain)

        def w2_native():
            dev, host = replay(gn, s, start, end)
            return [dev / n, host]

        col.run("W2", {"nodes": n}, [("replay_native_add", "device_per_node", "us"),
                                     ("replay_native_add", "host_launch", "us")], w2_native)

    # W3 and W6: the diamond -------------------------------------------------------------------
    layers, branches = sz["w3_layers"], sz["w3_branches"]
    kernels = layers * (1 + branches)
    need_diamond = col.wants("W3") or col.wants("W6")
    if need_diamond:
        ts = [torch.cuda.Stream() for _ in range(branches)]
        cs = [k.wrap(t.cuda_stream) for t in ts]
        fork = edge_event()
        joins = [edge_event() for _ in range(branches)]

        def diamond():
            diamond_issue(ts, cs, fork, joins, layers, launch_empty)

        gd, _ = capture(ts[0], diamond)

    if col.wants("W3"):
        start, end = timing_event(), timing_event()
        calls = c.diamond_event_calls(layers, branches)

        def w3():
            dev, host = replay(gd, ts[0], start, end)
            start.record(ts[0])
            t0 = c.now_ns()
            diamond()
            eager_host = c.us_since(t0)
            end.record(ts[0])
            end.synchronize()
            eager_dev = start.elapsed_time(end) * 1e3
            g, total = capture(ts[0], diamond)
            del g
            return [dev / kernels, dev, host, eager_dev, eager_host, calls, None, None, total]

        col.run("W3", {"layers": layers, "branches": branches, "kernels": kernels}, c.W3_METRICS, w3,
                setup_note="torch.cuda.CUDAGraph.capture_end instantiates: only the total is measurable")

    # W4 ------------------------------------------------------------------------------------
    if col.wants("W4"):
        n = sz["w4_kernels"]
        for width in sz["w4_widths"]:
            ts4 = [torch.cuda.Stream() for _ in range(width)]
            cs4 = [k.wrap(t.cuda_stream) for t in ts4]
            fork4 = edge_event()
            joins4 = [edge_event() for _ in range(width)]

            def spread(ts4=ts4, cs4=cs4, fork4=fork4, joins4=joins4, width=width):
                fork4.record(ts4[0])
                for t in ts4[1:]:
                    t.wait_event(fork4)
                for i in range(n):
                    launch_empty(cs4[i % width])
                for t, j in zip(ts4[1:], joins4[1:]):
                    j.record(t)
                    ts4[0].wait_event(j)

            g4, _ = capture(ts4[0], spread)
            start, end = timing_event(), timing_event()

            def w4(g4=g4, o=ts4[0], start=start, end=end):
                dev, host = replay(g4, o, start, end)
                return [dev / n, host]

            col.run("W4", {"kernels": n, "width": width}, c.W4_METRICS, w4)

    # W5 ------------------------------------------------------------------------------------
    if col.wants("W5"):
        col.unsupported("W5", {"nodes": sz["w5_nodes"]}, c.W5_METRICS,
                        "torch.cuda.CUDAGraph has no way to change a captured kernel's arguments "
                        "(torch code copies new values into static buffers instead)")

    # W6 ------------------------------------------------------------------------------------
    if col.wants("W6"):
        replays, gated, gate_ns = sz["w6_replays"], sz["w6_gated"], sz["w6_gate_ns"]
        o = ts[0]
        ev = [timing_event() for _ in range(4)]
        import numpy as np

        def w6():
            with torch.cuda.stream(o):
                k.launch(cs[0], k.config, k.spin, np.uint64(gate_ns))
                ev[0].record(o)
                t0 = c.now_ns()
                for _ in range(gated):
                    gd.replay()
                queued = c.us_since(t0)
                ev[1].record(o)
                ev[1].synchronize()
                c.check_gate(queued, gated, gate_ns)
                saturated = ev[0].elapsed_time(ev[1]) * 1e3 / gated
                t0 = c.now_ns()
                ev[2].record(o)
                for _ in range(replays):
                    gd.replay()
                ev[3].record(o)
                ev[3].synchronize()
                wall = c.us_since(t0)
            dev = ev[2].elapsed_time(ev[3]) * 1e3
            return [c.idle_percent(replays, saturated, wall), wall / replays, saturated, dev / replays]

        col.run("W6", {"replays": replays, "kernels_per_replay": kernels}, c.W6_METRICS, w6)

    # W12: W3's diamond of `spin` kernels, replayed back to back ------------------------------
    if col.wants("W12"):
        import numpy as np
        layers12, ns12, steps12 = sz["w12_layers"], sz["w12_kernel_ns"], sz["w12_steps"]
        ts12 = [torch.cuda.Stream() for _ in range(4)]
        cs12 = [k.wrap(t.cuda_stream) for t in ts12]
        fork12 = edge_event()
        joins12 = [edge_event() for _ in range(4)]

        def spin12(cs):
            k.launch(cs, k.config, k.spin, np.uint64(ns12))

        def decode():
            diamond_issue(ts12, cs12, fork12, joins12, layers12, spin12)

        g12, _ = capture(ts12[0], decode)
        start12, end12 = timing_event(), timing_event()

        def w12():
            o = ts12[0]
            with torch.cuda.stream(o):
                t0 = c.now_ns()
                start12.record(o)
                for _ in range(steps12):
                    g12.replay()
                host = c.us_since(t0)
                end12.record(o)
                end12.synchronize()
                wall = c.us_since(t0)
            return c.w12_metrics(steps12, host, wall, start12.elapsed_time(end12) * 1e3)

        col.run("W12", c.w12_params(sz), c.W12_METRICS, w12)

    # W7 ------------------------------------------------------------------------------------
    if col.wants("W7"):
        s7 = torch.cuda.Stream()
        cs7 = k.wrap(s7.cuda_stream)
        for nodes in sz["w7_nodes"]:

            def w7(nodes=nodes):
                def chain():
                    for _ in range(nodes):
                        launch_empty(cs7)

                g, total = capture(s7, chain)
                del g
                return [None, None, total, total / nodes]

            col.run("W7", {"nodes": nodes}, c.W7_METRICS, w7,
                    setup_note="torch.cuda.CUDAGraph.capture_end instantiates: only the total is measurable")

    # W9 ------------------------------------------------------------------------------------
    # Chunked H2D (pinned, non_blocking) -> the same `work` kernel -> D2H over three torch
    # streams with events, as overlap.rs; eager and replayed through a CUDA graph; the bounds
    # (all H2D, all kernels, all D2H, each alone on one stream, and all H2D on one stream while
    # all D2H run on another from buffers of their own: the duplex bound) measured in the same
    # process.
    if col.wants("W9"):
        import numpy as np

        for total_mib, chunk_mib, buffers, iters in sz["w9"]:
            floats = (chunk_mib << 20) // 4
            chunks = total_mib // chunk_mib
            ins = [torch.arange(floats, dtype=torch.float32).remainder_(1024).pin_memory() for _ in range(chunks)]
            outs = [torch.empty(floats, dtype=torch.float32).pin_memory() for _ in range(chunks)]
            dev = [torch.empty(floats, dtype=torch.float32, device="cuda") for _ in range(buffers)]
            dev_out = [torch.zeros(floats, dtype=torch.float32, device="cuda") for _ in range(buffers)]
            s_in, s_k, s_out = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
            wcfg = k.core.LaunchConfig(grid=(floats + 255) // 256, block=256)
            kernel_args = [(int(d.data_ptr()), np.uint32(floats), np.uint32(iters)) for d in dev]

            def run_kernel(cs, b):
                k.launch(cs, wcfg, k.work, *kernel_args[b])

            cs_k = k.wrap(s_k.cuda_stream)

            loaded = [edge_event() for _ in range(buffers)]
            done = [edge_event() for _ in range(buffers)]
            freed = [edge_event() for _ in range(buffers)]

            def pipeline():
                origin = torch.cuda.current_stream()
                s_in.wait_stream(origin)
                s_k.wait_stream(origin)
                s_out.wait_stream(origin)
                for ch in range(chunks):
                    b = ch % buffers
                    with torch.cuda.stream(s_in):
                        if ch >= buffers:
                            s_in.wait_event(freed[b])
                        dev[b].copy_(ins[ch], non_blocking=True)
                        loaded[b].record(s_in)
                    s_k.wait_event(loaded[b])
                    run_kernel(cs_k, b)
                    done[b].record(s_k)
                    with torch.cuda.stream(s_out):
                        s_out.wait_event(done[b])
                        outs[ch].copy_(dev[b], non_blocking=True)
                        freed[b].record(s_out)
                for s in (s_in, s_k, s_out):
                    origin.wait_stream(s)

            o9 = torch.cuda.Stream()
            cs_o9 = k.wrap(o9.cuda_stream)
            with torch.cuda.stream(o9):
                pipeline()
            torch.cuda.synchronize()
            g9 = torch.cuda.CUDAGraph()
            with torch.cuda.stream(o9):
                g9.capture_begin(capture_error_mode="thread_local")
                try:
                    pipeline()
                finally:
                    g9.capture_end()
            start, end = timing_event(), timing_event()

            def timed(fn):
                with torch.cuda.stream(o9):
                    start.record(o9)
                    fn()
                    end.record(o9)
                end.synchronize()
                return start.elapsed_time(end) * 1e3

            def w9():
                eager = timed(pipeline)
                replay = timed(g9.replay)
                h2d = timed(lambda: [dev[ch % buffers].copy_(ins[ch], non_blocking=True) for ch in range(chunks)])
                kern = timed(lambda: [run_kernel(cs_o9, ch % buffers) for ch in range(chunks)])
                d2h = timed(lambda: [outs[ch].copy_(dev[ch % buffers], non_blocking=True) for ch in range(chunks)])

                def both_ways():
                    origin = torch.cuda.current_stream()
                    s_in.wait_stream(origin)
                    s_out.wait_stream(origin)
                    for ch in range(chunks):
                        with torch.cuda.stream(s_in):
                            dev[ch % buffers].copy_(ins[ch], non_blocking=True)
                        with torch.cuda.stream(s_out):
                            outs[ch].copy_(dev_out[ch % buffers], non_blocking=True)
                    origin.wait_stream(s_in)
                    origin.wait_stream(s_out)

                duplex = timed(both_ways)
                bound = max(h2d, kern, d2h)
                return [eager, eager / bound, replay, replay / bound, h2d, kern, d2h, duplex]

            col.run("W9", {"total_mib": total_mib, "chunk_mib": chunk_mib, "buffers": buffers, "iters": iters},
                    c.W9_METRICS, w9)
            del g9

    # W11 -----------------------------------------------------------------------------------
    # The MLP step of mlp.rs: per layer `torch.nn.functional.linear` (x @ W^T + b, f32, TF32
    # off) and ReLU on all but the last layer; with two streams the batch's halves run on two
    # torch streams forked from and joined into the origin. Eager steps and replays of a
    # `torch.cuda.CUDAGraph` of one step, STEPS of each per sample; a fresh capture per sample
    # (capture_end also instantiates: only the total is measurable).
    if col.wants("W11"):
        import torch.nn.functional as F

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        steps = sz["w11_steps"]
        for layers, width, batch, streams in sz["w11"]:
            gen = torch.Generator().manual_seed(11)
            bound = (6.0 / width) ** 0.5
            # F.linear takes W as [out x in]; the harness's W is [in x out] (row-major x @ W).
            ws = [((torch.rand(width, width, generator=gen) * 2 - 1) * bound).cuda() for _ in range(layers)]
            bs = [((torch.rand(width, generator=gen) * 2 - 1) * 0.1).cuda() for _ in range(layers)]
            x = (torch.rand(batch, width, generator=gen) * 2 - 1).cuda()
            rows = batch // streams
            halves = [x[i * rows:(i + 1) * rows].contiguous() for i in range(streams)]
            o11 = torch.cuda.Stream()
            lanes = [o11] + [torch.cuda.Stream() for _ in range(streams - 1)]

            def lane(a):
                for i in range(layers):
                    a = F.linear(a, ws[i], bs[i])
                    if i + 1 < layers:
                        a = torch.relu(a)
                return a

            def step():
                origin = torch.cuda.current_stream()
                outs = []
                for s_, h in zip(lanes, halves):
                    s_.wait_stream(origin)
                    with torch.cuda.stream(s_):
                        outs.append(lane(h))
                for s_ in lanes[1:]:
                    origin.wait_stream(s_)
                return outs

            params = {"batch": batch, "layers": layers, "steps_per_sample": steps, "streams": streams,
                      "width": width}
            try:
                with torch.cuda.stream(o11):
                    eager_out = step()  # warms cuBLAS(Lt) up outside any capture
                torch.cuda.synchronize()
                want = x.double()
                for i in range(layers):
                    want = want @ ws[i].double().T + bs[i].double()
                    if i + 1 < layers:
                        want = torch.relu(want)
                err = (torch.cat(eager_out).double() - want).abs().max().item()
                if not err <= 1e-3 * max(1.0, want.abs().max().item()):
                    raise c.PeerError(f"W11: off the f64 reference by {err}")
                g11, _ = capture(o11, step)
            except Exception as e:  # reported in the rows, like a failed sample
                col.failures += 1
                col.unsupported("W11", params, c.W11_METRICS, f"{type(e).__name__}: {e}")
                continue
            start, end = timing_event(), timing_event()

            def timed(fn):
                with torch.cuda.stream(o11):
                    start.record(o11)
                    t0 = c.now_ns()
                    fn()
                    host = c.us_since(t0)
                    end.record(o11)
                end.synchronize()
                return start.elapsed_time(end) * 1e3, host

            def w11(g11=g11, timed=timed, step=step):
                replay_dev, replay_host = timed(lambda: [g11.replay() for _ in range(steps)])
                eager_dev, eager_host = timed(lambda: [step() for _ in range(steps)])
                torch.cuda.synchronize()
                g, total = capture(o11, step)
                del g
                return [replay_dev / steps, replay_host / steps, eager_dev / steps, eager_host / steps,
                        None, None, total]

            col.run("W11", params, c.W11_METRICS, w11,
                    setup_note="torch.cuda.CUDAGraph.capture_end instantiates: only the total is measurable")
            del g11

    # W13 ----------------------------------------------------------------------------------
    if col.wants("W13"):
        if alone:
            for width, batches in sz["w13"]:
                w13(torch, k, col, width, batches)
        else:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # this process holds still while the child measures
            child(col, args, "W13", [c.w13_params(width, batches) for width, batches in sz["w13"]])

    # W14 ----------------------------------------------------------------------------------
    if col.wants("W14"):
        if alone:
            for step in c.W14_STEPS:
                w14(torch, k, col, sz, step)
        else:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            child(col, args, "W14", [c.w14_params(sz, step) for step in c.W14_STEPS])

    torch.cuda.synchronize()
    col.finish({
        "source": "torch_peer.py",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "kernel_compiler": f"cuda.core Program (NVRTC) {k.arch}",
        "reps": args.reps,
        "argv": sys.argv[1:],
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "w13_cublas_workspace_config": c.W13_CUBLAS_WORKSPACE_CONFIG if col.wants("W13") else None,
        "w14_cublas_workspace_config": c.W13_CUBLAS_WORKSPACE_CONFIG if col.wants("W14") else None,
    })


if __name__ == "__main__":
    main()
