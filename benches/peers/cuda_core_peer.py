#!/usr/bin/env python3
"""cuda.core peer of bench-harness: the same workloads with cuda.core 1.x streams, events,
`launch` and its graph builder (`Stream.create_graph_builder`, `begin_building`, `split`,
`join`, `end_building`, `complete`, `Graph.launch`, `Graph.update`), with the SAME kernels
(benches/peers/kernels.cu, compiled with NVRTC through cuda.core's Program).

In graphs, fan-outs use the builder's own `split`/`join` (its idiom: each `split` makes fresh
streams, a cost that shows in capture times); the DAG is the harness's. Eager runs use
long-lived streams and events, as raw.rs does.

Prints one JSON document (schema of bench-harness) on stdout; progress on stderr.
Exit status: 0 when every workload ran, 1 when any failed or nothing could be measured.
"""

import sys

import common as c

SYSTEM = "cuda.core"


def main():
    args = c.parse_args(__doc__)
    try:
        import numpy as np
    except ImportError as e:
        c.die(f"numpy is not importable ({e}); cuda.core's kernel arguments need it")
    try:
        k = c.CoreKernels()
    except c.PeerError as e:
        c.die(str(e))
    core, dev = k.core, k.dev
    for api in ("create_stream", "create_event"):
        if not hasattr(dev, api):
            c.die(f"cuda.core Device has no {api}(); this peer needs cuda.core 1.x")
    warm_stream = dev.create_stream()
    k.warm(warm_stream, warm_stream.sync)
    sz = args.sizes
    col = c.Collector(SYSTEM, args)

    def event(timing):
        for kw in ("timing_enabled", "enable_timing"):
            try:
                return dev.create_event(options=core.EventOptions(**{kw: timing}))
            except TypeError:
                continue
        raise c.PeerError("cuda.core EventOptions takes neither timing_enabled nor enable_timing")

    def elapsed_us(start, end):
        end.sync()
        return (end - start) * 1e3

    def launch_empty(target):
        k.launch(target, k.config, k.empty)

    def builder(stream):
        if not hasattr(stream, "create_graph_builder"):
            raise c.PeerError("cuda.core Stream.create_graph_builder is missing: need cuda.core 1.x")
        return stream.create_graph_builder().begin_building("thread_local")

    def build(stream, issue):
        """Captures `issue(gb)` into a graph: (graph, capture µs, instantiate µs)."""
        t0 = c.now_ns()
        gb = builder(stream)
        gb = issue(gb) or gb
        gb.end_building()
        cap = c.us_since(t0)
        t1 = c.now_ns()
        graph = gb.complete()
        inst = c.us_since(t1)
        return graph, cap, inst, gb

    def replay(graph, stream, start, end):
        stream.record(start)
        t0 = c.now_ns()
        graph.launch(stream)
        host = c.us_since(t0)
        stream.record(end)
        return elapsed_us(start, end), host

    def chain_issue(nodes):
        def issue(gb):
            for _ in range(nodes):
                launch_empty(gb)
        return issue

    def close(*objs):
        for o in objs:
            if o is not None and hasattr(o, "close"):
                o.close()

    # W1 ------------------------------------------------------------------------------------
    if col.wants("W1"):
        n = sz["w1_kernels"]
        s = dev.create_stream()
        start, end = event(True), event(True)

        def w1():
            s.record(start)
            t0 = c.now_ns()
            for _ in range(n):
                launch_empty(s)
            host = c.us_since(t0)
            s.record(end)
            return [host / n, elapsed_us(start, end) / n, 0]

        col.run("W1", {"kernels": n}, c.W1_METRICS, w1)

    # W2 ------------------------------------------------------------------------------------
    if col.wants("W2"):
        n = sz["w2_nodes"]
        s = dev.create_stream()
        start, end = event(True), event(True)
        g2, _, _, _ = build(s, chain_issue(n))
        g2.upload(s)

        def w2():
            d, host = replay(g2, s, start, end)
            s.record(start)
            t0 = c.now_ns()
            for _ in range(n):
                launch_empty(s)
            eager_host = c.us_since(t0)
            s.record(end)
            return [d / n, host, elapsed_us(start, end) / n, eager_host / n]

        col.run("W2", {"nodes": n}, c.W2_METRICS, w2)

    # W3 and W6: the diamond -------------------------------------------------------------------
    layers, branches = sz["w3_layers"], sz["w3_branches"]
    kernels = layers * (1 + branches)

    def diamond_builder(layers, branches, launch):
        """W3's diamond through the graph builder, `launch(target)` for every kernel."""
        def issue(gb):
            for _ in range(layers):
                launch(gb)
                parts = gb.split(branches)
                for p in parts:
                    launch(p)
                gb = type(gb).join(*parts)
            return gb
        return issue

    diamond_build = diamond_builder(layers, branches, launch_empty)

    if col.wants("W3") or col.wants("W6"):
        ss = [dev.create_stream() for _ in range(branches)]
        gd, _, _, _ = build(ss[0], diamond_build)
        gd.upload(ss[0])

    if col.wants("W3"):
        fork = event(False)
        joins = [event(False) for _ in range(branches)]
        start, end = event(True), event(True)
        calls = c.diamond_event_calls(layers, branches)

        def diamond_eager():
            o = ss[0]
            for layer in range(layers):
                if layer > 0:
                    for j in joins[1:]:
                        o.wait(j)
                launch_empty(o)
                o.record(fork)
                for s in ss[1:]:
                    s.wait(fork)
                for s in ss:
                    launch_empty(s)
                for s, j in zip(ss[1:], joins[1:]):
                    s.record(j)
            for j in joins[1:]:
                o.wait(j)

        def w3():
            d, host = replay(gd, ss[0], start, end)
            ss[0].record(start)
            t0 = c.now_ns()
            diamond_eager()
            eager_host = c.us_since(t0)
            ss[0].record(end)
            eager_dev = elapsed_us(start, end)
            g, cap, inst, gb = build(ss[0], diamond_build)
            close(g, gb)
            return [d / kernels, d, host, eager_dev, eager_host, calls, cap, inst, cap + inst]

        col.run("W3", {"layers": layers, "branches": branches, "kernels": kernels}, c.W3_METRICS, w3)

    # W4 ------------------------------------------------------------------------------------
    if col.wants("W4"):
        n = sz["w4_kernels"]
        s4 = dev.create_stream()
        for width in sz["w4_widths"]:

            def spread(gb, width=width):
                parts = gb.split(width) if width > 1 else (gb,)
                for i in range(n):
                    launch_empty(parts[i % width])
                return type(gb).join(*parts) if width > 1 else gb

            g4, _, _, _ = build(s4, spread)
            g4.upload(s4)
            start, end = event(True), event(True)

            def w4(g4=g4, start=start, end=end):
                d, host = replay(g4, s4, start, end)
                return [d / n, host]

            col.run("W4", {"kernels": n, "width": width}, c.W4_METRICS, w4)

    # W5 ------------------------------------------------------------------------------------
    if col.wants("W5"):
        n = sz["w5_nodes"]
        try:
            from cuda.bindings import driver as cbd
        except ImportError as e:
            c.die(f"cuda.bindings is not importable ({e}); W5 reads its result through it")
        err, slot = cbd.cuMemAlloc(4)
        if int(err) != 0:
            c.die(f"cuMemAlloc failed with {err}")
        slot_ptr = int(slot)
        s5 = dev.create_stream()
        k.warm(s5, s5.sync, slot_ptr)
        start, end = event(True), event(True)
        state = {"iteration": 0}

        def stamps(base):
            def issue(gb):
                for i in range(n):
                    k.launch(gb, k.config, k.stamp, slot_ptr, np.uint32((base + i) & 0xFFFFFFFF))
            return issue

        g5, _, _, _ = build(s5, stamps(0))
        if not hasattr(g5, "update"):
            c.die("cuda.core Graph.update is missing: need cuda.core 1.x")

        def read_slot():
            host = np.zeros(1, dtype=np.uint32)
            (err,) = cbd.cuMemcpyDtoH(host.ctypes.data, slot_ptr, 4)
            if int(err) != 0:
                raise c.PeerError(f"cuMemcpyDtoH failed with {err}")
            return int(host[0])

        def w5():
            state["iteration"] += 1
            base = (state["iteration"] * 2 * n) & 0xFFFFFFFF
            t0 = c.now_ns()
            gb = builder(s5)
            stamps(base)(gb)
            gb.end_building()
            g5.update(gb)
            close(gb)  # destroyed in the timed region, as in raw and streamgraph
            exec_update = c.us_since(t0)
            g, cap, inst, gb2 = build(s5, stamps(base))
            close(g, gb2)
            d, _ = replay(g5, s5, start, end)
            s5.sync()
            got, want = read_slot(), (base + n - 1) & 0xFFFFFFFF
            if got != want:
                raise c.PeerError(f"last node stored {got}, expected {want}")
            return [None, d / n, 0, exec_update / n, (cap + inst) / n]

        col.run("W5", {"nodes": n}, c.W5_METRICS, w5,
                setup_note="cuda.core has no per-kernel-node argument update; "
                           "exec_update is Graph.update from a new builder")

    # W6 ------------------------------------------------------------------------------------
    if col.wants("W6"):
        replays, gated, gate_ns = sz["w6_replays"], sz["w6_gated"], sz["w6_gate_ns"]
        # Launches of this graph block once a few replays wait behind a stalled GPU (on the
        # H200, 64 gated replays took 57 ms behind a 50 ms gate): gate only a few.
        gated = min(gated, 8)
        o = ss[0]
        ev = [event(True) for _ in range(4)]

        def w6():
            k.launch(o, k.config, k.spin, np.uint64(gate_ns))
            o.record(ev[0])
            t0 = c.now_ns()
            for _ in range(gated):
                gd.launch(o)
            queued = c.us_since(t0)
            o.record(ev[1])
            saturated = elapsed_us(ev[0], ev[1]) / gated
            c.check_gate(queued, gated, gate_ns)
            t0 = c.now_ns()
            o.record(ev[2])
            for _ in range(replays):
                gd.launch(o)
            o.record(ev[3])
            ev[3].sync()
            wall = c.us_since(t0)
            d = elapsed_us(ev[2], ev[3])
            return [c.idle_percent(replays, saturated, wall), wall / replays, saturated, d / replays]

        col.run("W6", {"replays": replays, "kernels_per_replay": kernels}, c.W6_METRICS, w6)

    # W12: W3's diamond of `spin` kernels, replayed back to back ------------------------------
    if col.wants("W12"):
        layers12, ns12, steps12 = sz["w12_layers"], sz["w12_kernel_ns"], sz["w12_steps"]

        decode_build = diamond_builder(
            layers12, 4, lambda target: k.launch(target, k.config, k.spin, np.uint64(ns12)))

        s12 = dev.create_stream()
        g12, _, _, _ = build(s12, decode_build)
        g12.upload(s12)
        start12, end12 = event(True), event(True)

        def w12():
            t0 = c.now_ns()
            s12.record(start12)
            for _ in range(steps12):
                g12.launch(s12)
            host = c.us_since(t0)
            s12.record(end12)
            end12.sync()
            wall = c.us_since(t0)
            return c.w12_metrics(steps12, host, wall, elapsed_us(start12, end12))

        col.run("W12", c.w12_params(sz), c.W12_METRICS, w12)

    # W7 ------------------------------------------------------------------------------------
    if col.wants("W7"):
        s7 = dev.create_stream()
        for nodes in sz["w7_nodes"]:

            def w7(nodes=nodes):
                g, cap, inst, gb = build(s7, chain_issue(nodes))
                close(g, gb)
                total = cap + inst
                return [cap, inst, total, total / nodes]

            col.run("W7", {"nodes": nodes}, c.W7_METRICS, w7)

    # W8 ------------------------------------------------------------------------------------
    # The loop as one graph with cuda.core's conditional WHILE (its graph builder's
    # `while_loop` and a condition from `create_condition`/`create_conditional_handle`): each
    # iteration the same 4 + 3 + 3 `empty` kernels on three split branches, `countdown`, and a
    # kernel that sets the condition from `go`. Only the device loop is cuda.core's to measure;
    # an API this cuda.core lacks is reported as unavailable, not a crash.
    if col.wants("W8"):
        note = "cuda.core: only the device loop (conditional WHILE) is measured"
        try:
            w8 = make_w8(c, k, core, dev, builder, event, elapsed_us, launch_empty)
        except Exception as e:  # an API this version lacks: rows that say so
            why = f"cuda.core conditional WHILE unavailable: {type(e).__name__}: {e}"
            print(why, file=sys.stderr)
            for iterations in sz["w8_iterations"]:
                col.unsupported("W8", {"iterations": iterations, "kernels_per_iteration": 11},
                                c.W8_METRICS, why)
        else:
            for iterations in sz["w8_iterations"]:
                params = {"iterations": iterations, "kernels_per_iteration": 11}
                try:
                    sample = w8(iterations)
                except Exception as e:  # building the loop failed: say so in the rows
                    why = f"cuda.core conditional WHILE unavailable: {type(e).__name__}: {e}"
                    print(why, file=sys.stderr)
                    col.unsupported("W8", params, c.W8_METRICS, why)
                    continue
                col.run("W8", params, c.W8_METRICS, sample, setup_note=note)

    getattr(dev, "sync", lambda: None)()
    col.finish({
        "source": "cuda_core_peer.py",
        "device": getattr(dev, "name", "unknown"),
        "cuda_core": getattr(core, "__version__", "unknown"),
        "kernel_compiler": f"cuda.core Program (NVRTC) {k.arch}",
        "reps": args.reps,
        "argv": sys.argv[1:],
    })


W8_SOURCE = r"""
#include <cuda_device_runtime_api.h>
extern "C" __global__ void countdown(unsigned int *left, unsigned int *go) {
    unsigned int v = *left - 1u;
    *left = v;
    *go = v != 0u ? 1u : 0u;
}
extern "C" __global__ void set_handle(cudaGraphConditionalHandle handle, const unsigned int *go) {
    cudaGraphSetConditional(handle, *go != 0u ? 1u : 0u);
}
extern "C" __global__ void stamp(unsigned int *slot, unsigned int value) { *slot = value; }
extern "C" __global__ void countdown_signal(unsigned int *left, unsigned int *go,
                                            cudaGraphConditionalHandle handle) {
    unsigned int v = *left - 1u;
    *left = v;
    *go = v != 0u ? 1u : 0u;
    cudaGraphSetConditional(handle, v != 0u ? 1u : 0u);
}
"""


def make_w8(c, k, core, dev, builder, event, elapsed_us, launch_empty):
    """Returns `w8(iterations)`, which builds the loop's graph and returns its sample
    function; raises when this cuda.core has no conditional nodes."""
    import numpy as np
    from cuda.bindings import driver as cbd

    include = [p for p in ("/usr/local/cuda/include",) if __import__("os").path.isdir(p)]
    options = core.ProgramOptions(arch=k.arch, include_path=include, relocatable_device_code=True)
    obj = core.Program(W8_SOURCE, code_type="c++", options=options).compile("ptx")
    countdown, set_handle, stamp, countdown_signal = (
        obj.get_kernel(n) for n in ("countdown", "set_handle", "stamp", "countdown_signal"))
    words = []
    for _ in range(2):
        err, ptr = cbd.cuMemAlloc(4)
        if int(err) != 0:
            raise c.PeerError(f"cuMemAlloc failed with {err}")
        words.append(int(ptr))
    left, go = words

    def condition(gb):
        for name in ("create_condition", "create_conditional_handle"):
            make = getattr(gb, name, None)
            if make is None:
                continue
            for kwargs in ({"default_value": 1}, {"default_value": True}, {}):
                try:
                    return make(**kwargs)
                except TypeError:
                    continue
        raise c.PeerError("the graph builder has neither create_condition nor create_conditional_handle")

    def handle_arg(cond):
        h = getattr(cond, "handle", cond)
        return np.uint64(int(h))

    def read(ptr):
        host = np.zeros(1, dtype=np.uint32)
        (err,) = cbd.cuMemcpyDtoH(host.ctypes.data, ptr, 4)
        if int(err) != 0:
            raise c.PeerError(f"cuMemcpyDtoH failed with {err}")
        return int(host[0])

    def build(stream, iterations, signalled):
        """The loop's graph: `stamp`, then WHILE { 4 + 3 + 3 `empty` on three split branches,
        joined; `countdown` and `set_handle`, or with `signalled` `countdown_signal` alone,
        which sets the condition itself (the shape of streamgraph's signalled loop) }."""
        gb = builder(stream)
        k.launch(gb, k.config, stamp, left, np.uint32(iterations))
        cond = condition(gb)
        if not hasattr(gb, "while_loop"):
            raise c.PeerError("the graph builder has no while_loop")
        body = gb.while_loop(cond)
        if hasattr(body, "begin_building") and not getattr(body, "is_building", False):
            body = body.begin_building("thread_local") or body
        parts = body.split(3)
        for part, n in zip(parts, (4, 3, 3)):
            for _ in range(n):
                launch_empty(part)
        body = type(body).join(*parts)
        if signalled:
            k.launch(body, k.config, countdown_signal, left, go, handle_arg(cond))
        else:
            k.launch(body, k.config, countdown, left, go)
            k.launch(body, k.config, set_handle, handle_arg(cond), go)
        body.end_building()
        gb.end_building()
        graph = gb.complete()
        # One launch to check it loops exactly `iterations` times.
        graph.launch(stream)
        stream.sync()
        if read(left) != 0:
            raise c.PeerError(f"the WHILE loop left {read(left)} iterations undone")
        return graph

    def w8(iterations):
        stream = dev.create_stream()
        graphs = [build(stream, iterations, False)]
        try:
            graphs.append(build(stream, iterations, True))
        except Exception as e:  # the signalled shape alone failed: its metrics stay empty
            print(f"cuda.core W8 signalled loop unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        start, end = event(True), event(True)

        def timed(graph):
            stream.record(start)
            t0 = c.now_ns()
            graph.launch(stream)
            host = c.us_since(t0)
            stream.record(end)
            dev_us = elapsed_us(start, end)
            return host / iterations, dev_us / iterations

        def sample():
            row = [None, None, None, None, *timed(graphs[0])]
            row += list(timed(graphs[1])) if len(graphs) > 1 else [None, None]
            return row

        return sample

    return w8


if __name__ == "__main__":
    main()
