#!/usr/bin/env python3
"""Plots from merged.json (written by merge.py):

  w7_capture_scaling.png  capture + instantiate time against node count, log-log, per system
  replay_per_node.png     replay device time per node (W2 chain, W3 diamond, W4 per width)
  w8_loop.png             W8: host and device time per loop iteration against K, per way
  w9_overlap.png          W9: end to end over the bound max(H2D, kernel, D2H), per case

    python3 benches/plot.py OUT_DIR/merged.json OUT_DIR
"""

import json
import os
import sys

SYSTEMS = ["raw", "streamgraph", "torch", "cuda.core"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit(f"plot: matplotlib is not importable ({e}); no plots made")
    with open(sys.argv[1], encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    present = [s for s in SYSTEMS if any(r["system"] == s and r["p50"] is not None for r in rows)]
    present += sorted({r["system"] for r in rows if r["p50"] is not None} - set(present))
    made = 0

    # W7: log-log capture scaling.
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for s in present:
        pts = sorted((r["params"]["nodes"], r["p50"], r["p90"]) for r in rows
                     if r["system"] == s and r["workload"] == "W7" and r["metric"] == "total"
                     and r["p50"] is not None)
        if not pts:
            continue
        slope = next((r["p50"] for r in rows if r["system"] == s and r["workload"] == "W7"
                      and r["metric"] == "log_log_slope" and r["p50"] is not None), None)
        label = s if slope is None else f"{s} (slope {slope:.3f})"
        xs = [p[0] for p in pts]
        ax.errorbar(xs, [p[1] for p in pts], yerr=[[0] * len(pts), [p[2] - p[1] for p in pts]],
                    marker="o", capsize=3, label=label)
    if ax.lines or ax.collections:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes (chain of empty kernels)")
        ax.set_ylabel("capture + instantiate, µs (p50, bar to p90)")
        ax.set_title("W7: capture + instantiate scaling")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "w7_capture_scaling.png"), dpi=120)
        made += 1
    plt.close(fig)

    # Replay µs per node by system.
    groups = [("W2 chain", "W2", "device_per_node", {}), ("W3 diamond", "W3", "device_per_node", {})]
    widths = sorted({r["params"]["width"] for r in rows if r["workload"] == "W4" and "width" in r["params"]})
    groups += [(f"W4 w={w}", "W4", "device_per_kernel", {"width": w}) for w in widths]

    def value(system, workload, metric, params):
        for r in rows:
            if (r["system"], r["workload"], r["variant"], r["metric"]) == (system, workload, "replay", metric) \
                    and all(r["params"].get(k) == v for k, v in params.items()):
                return r["p50"]
        return None

    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(groups) + 2), 4.5))
    bar = 0.8 / max(1, len(present))
    any_bar = False
    for i, s in enumerate(present):
        xs, ys = [], []
        for g, (_, wl, metric, params) in enumerate(groups):
            v = value(s, wl, metric, params)
            if v is not None:
                xs.append(g + i * bar - 0.4 + bar / 2)
                ys.append(v)
        if xs:
            any_bar = True
            ax.bar(xs, ys, width=bar, label=s)
    if any_bar:
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([g[0] for g in groups], rotation=30, ha="right")
        ax.set_ylabel("replay device time per node, µs (p50)")
        ax.set_title("Graph replay cost per node")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "replay_per_node.png"), dpi=120)
        made += 1
    plt.close(fig)
    # W8: per-iteration time of each way of running the loop, against the iteration count.
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    drawn = False
    for ax, metric, label in ((axes[0], "host_per_iteration", "host µs per iteration"),
                              (axes[1], "device_per_iteration", "device µs per iteration")):
        for s in present:
            for way in ("eager", "host_loop", "device_loop"):
                pts = sorted((r["params"]["iterations"], r["p50"]) for r in rows
                             if r["system"] == s and r["workload"] == "W8" and r["variant"] == way
                             and r["metric"] == metric and r["p50"] is not None
                             and "iterations" in r["params"])
                if pts:
                    drawn = True
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=f"{s} {way.replace('_', ' ')}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iterations K")
        ax.set_ylabel(f"{label} (p50)")
        ax.grid(True, which="both", alpha=0.3)
    if drawn:
        axes[0].set_title("W8: host time per iteration")
        axes[1].set_title("W8: device time per iteration")
        axes[1].legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "w8_loop.png"), dpi=120)
        made += 1
    plt.close(fig)

    # W9: achieved overlap (end to end / bound; 1 is perfect) per case, eager and replayed.
    cases = sorted({(r["params"].get("chunk_mib"), r["params"].get("buffers"),
                     r["params"].get("iters"))
                    for r in rows if r["workload"] == "W9" and r["metric"] == "overlap"},
                   key=lambda c: (c[2] or 0, c[0] or 0, c[1] or 0))
    series = [(s, v) for s in present for v in ("eager", "replay")
              if any(r["system"] == s and r["workload"] == "W9" and r["variant"] == v
                     and r["metric"] == "overlap" and r["p50"] is not None for r in rows)]
    if cases and series:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases) + 2), 4.5))
        bar = 0.8 / len(series)
        for i, (s, v) in enumerate(series):
            xs, ys = [], []
            for c, (chunk, buffers, iters) in enumerate(cases):
                val = next((r["p50"] for r in rows
                            if r["system"] == s and r["workload"] == "W9" and r["variant"] == v
                            and r["metric"] == "overlap" and r["p50"] is not None
                            and r["params"].get("chunk_mib") == chunk
                            and r["params"].get("buffers") == buffers
                            and r["params"].get("iters") == iters), None)
                if val is not None:
                    xs.append(c + i * bar - 0.4 + bar / 2)
                    ys.append(val)
            ax.bar(xs, ys, width=bar, label=f"{s} {v}")
        ax.axhline(1.1, color="gray", linestyle="--", linewidth=1, label="goal 1.1")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{c} MiB × {b}\n{i} rounds" for c, b, i in cases])
        ax.set_ylabel("end to end / max(H2D, kernel, D2H) (p50)")
        ax.set_title("W9: copy/compute overlap")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "w9_overlap.png"), dpi=120)
        made += 1
        plt.close(fig)
    print(f"plot: {made} plots in {out}", file=sys.stderr)
    if made == 0:
        sys.exit("plot: no data to plot")


if __name__ == "__main__":
    main()
