"""Latency distribution (empirical CDF, log time axis) per scenario and pod-ready delay, one line per controller."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"ours": "tab:blue", "upstream": "tab:orange", "floor": "tab:gray"}

report = json.load(open(sys.argv[1]))
runs = [r for r in report["runs"] if r.get("claims") and r["claims"].get("latenciesMs")]
panels = sorted({(r["podReadyDelayMs"], r["scenario"]) for r in runs}, key=lambda p: (p[0], p[1]))
if not panels:
    sys.exit("no claim latencies to plot")
cols = min(4, len(panels))
rows = (len(panels) + cols - 1) // cols
fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
for ax, (delay, scenario) in zip(axes.flat, panels):
    for r in runs:
        if r["podReadyDelayMs"] != delay or r["scenario"] != scenario:
            continue
        lat = sorted(x for x in r["claims"]["latenciesMs"] if x is not None)
        if len(lat) < len(r["claims"]["latenciesMs"]):
            continue  # an early results file lost raw latencies past index ~300 (fixed); no honest CDF
        n = len(lat)
        label = f'{r["controller"]} p50 {r["claims"]["latencyMs"]["p50"]:.0f} / p99 {r["claims"]["latencyMs"]["p99"]:.0f} ms'
        ax.step([max(x, 0.1) for x in lat], [(i + 1) / n for i in range(n)], where="post",
                color=COLORS.get(r["controller"]), label=label)
    ax.set_xscale("log")
    ax.set_title(f"{scenario}, pod-ready delay {delay} ms", fontsize=10)
    ax.set_xlabel("create → Ready (ms)")
    ax.set_ylabel("fraction of claims")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
for ax in list(axes.flat)[len(panels):]:
    ax.axis("off")
fig.suptitle(f'Claim latency, {report["id"]} ({report["environment"]["cpus"]} cores)', fontsize=11)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
