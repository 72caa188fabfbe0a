#!/usr/bin/env python3
"""PyTorch `torch.distributed` peer of bench-harness's W10: all-reduce (sum, in place,
float32) of 4 KiB, 1 MiB and 64 MiB per rank across the machine's GPUs, one process per GPU
(two when the machine has two or more, else one), NCCL backend; eagerly and as a captured
`torch.cuda.CUDAGraph` replayed. Each sample issues ALL_REDUCES all-reduces back to back after
a barrier and synchronises; host wall time over the count is the latency, as in
benches/harness/collective.rs.

Prints one JSON document (schema of bench-harness) on stdout; progress on stderr.
Exit status: 0 when W10 ran (or was not asked for), 1 otherwise.
"""

import os
import sys
import tempfile

import common as c

SYSTEM = "torch"
BYTES = [4 << 10, 1 << 20, 64 << 20]
ALL_REDUCES = 20


def worker(rank, ranks, init_file, samples, queue):
    """One rank: every size, `samples` (eager µs, replay µs) pairs each; rank 0 reports."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank,
                            world_size=ranks, device_id=torch.device("cuda", rank))
    results, error = {}, None
    try:
        for nbytes in BYTES:
            x = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")
            gx = torch.zeros_like(x)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):  # NCCL's setup, outside the capture
                    dist.all_reduce(gx)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                for _ in range(ALL_REDUCES):
                    dist.all_reduce(gx)
            torch.cuda.synchronize()
            pairs = []
            for _ in range(samples):
                dist.barrier()
                torch.cuda.synchronize()
                t0 = c.now_ns()
                for _ in range(ALL_REDUCES):
                    dist.all_reduce(x)
                torch.cuda.synchronize()
                eager = c.us_since(t0)
                dist.barrier()
                torch.cuda.synchronize()
                t0 = c.now_ns()
                graph.replay()
                torch.cuda.synchronize()
                pairs.append((eager, c.us_since(t0)))
            results[nbytes] = pairs
            del graph
    except Exception as e:  # reported by rank 0's rows
        error = f"{type(e).__name__}: {e}"
    finally:
        dist.destroy_process_group()
    if rank == 0:
        queue.put((results, error))


def measure(us, nbytes, ranks):
    latency = us / ALL_REDUCES
    alg = nbytes / (latency * 1e-6) / 1e9
    return [latency, alg, alg * 2 * (ranks - 1) / ranks]


def main():
    args = c.parse_args(__doc__)
    col = c.Collector(SYSTEM, args)
    if not col.wants("W10"):
        print('{"schema": 1, "meta": {"source": "torch_dist_peer.py"}, "rows": []}')
        return
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as e:
        c.die(f"PyTorch is not importable ({e}); the torch.distributed peer needs torch with CUDA")
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        c.die("torch has no CUDA device or no NCCL backend")
    ranks = 2 if torch.cuda.device_count() >= 2 else 1
    samples = c.WARMUP["W10"] + args.reps
    init_file = os.path.join(tempfile.mkdtemp(prefix="w10-"), "rendezvous")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [ctx.Process(target=worker, args=(r, ranks, init_file, samples, queue)) for r in range(ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    results, error = ({}, "a rank did not report") if queue.empty() else queue.get()
    for p in procs:
        if p.is_alive():
            p.kill()
            error = error or "a rank did not finish in 120 s"
    for nbytes in BYTES:
        params = {"bytes": nbytes, "ranks": ranks, "all_reduces": ALL_REDUCES}
        pairs = iter(results.get(nbytes, []))

        def sample():
            try:
                eager, replay = next(pairs)
            except StopIteration:
                raise c.PeerError(error or "no samples") from None
            return measure(eager, nbytes, ranks) + measure(replay, nbytes, ranks)

        col.run("W10", params, c.W10_METRICS, sample)
    col.finish({
        "source": "torch_dist_peer.py",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "ranks": ranks,
        "reps": args.reps,
        "argv": sys.argv[1:],
    })


if __name__ == "__main__":
    main()
