"""Latency distribution (empirical CDF, log time axis) per scenario and pod-ready delay, one line per controller;
for a soak run, its time series instead (RSS, p50/p99 per window, live objects); for a router run (bench/data-plane/router.ts),
throughput per case for direct, ours and upstream's Go router, and each router's CPU per 1,000 requests."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"ours": "tab:blue", "upstream": "tab:orange", "floor": "tab:gray"}


def plot_soak(report, soaks, out):
    """RSS every sample, claim p50/p99 per window, and live vs expected objects, one row per soak run."""
    fig, axes = plt.subplots(len(soaks), 3, figsize=(15, 3.8 * len(soaks)), squeeze=False)
    for (rss_ax, lat_ax, obj_ax), r in zip(axes, soaks):
        s = r["soak"]
        t = [x["t"] / 60 for x in s["samples"]]
        rss_ax.plot(t, [x["rssMiB"] for x in s["samples"]], color=COLORS.get(r["controller"]))
        rss_ax.set_title(f'{r["controller"]}: RSS every {s["options"]["sampleS"]} s (peak {s["rss"]["peakMiB"]:.0f} MiB)', fontsize=10)
        rss_ax.set_ylabel("MiB")
        rss_ax.set_ylim(bottom=0)
        rss_ax.axvline(s["options"]["durationS"] / 60, color="gray", linestyle=":", label="load ends")
        rss_ax.legend(fontsize=7)
        mid = [(w["from"] + w["to"]) / 120 for w in s["windows"]]
        for q, style in (("p50", "o-"), ("p99", "s-")):
            # A window with no claim Ready has no percentile: a gap, not a zero.
            lat_ax.plot(mid, [w["latencyMs"][q] if w["latencyMs"]["n"] else float("nan") for w in s["windows"]], style, label=q)
        lat_ax.set_yscale("log")
        lat_ax.set_title(f'claim create → Ready per {s["options"]["windowS"]} s window', fontsize=10)
        lat_ax.set_ylabel("ms")
        lat_ax.legend(fontsize=8)
        for key, color in (("claims", "tab:blue"), ("sandboxes", "tab:green")):
            obj_ax.plot(mid, [w["live"][key] for w in s["windows"]], "o-", color=color, label=f"{key} live")
            obj_ax.plot(mid, [w["expected"][key] for w in s["windows"]], "--", color=color, label=f"{key} expected")
        obj_ax.plot(mid, [w["live"]["pods"] for w in s["windows"]], "o-", color="tab:red", label="pods live")
        obj_ax.set_title(f'objects at each window end; leaks at the end: {s["leaks"]["total"]}', fontsize=10)
        obj_ax.legend(fontsize=7)
        for ax in (rss_ax, lat_ax, obj_ax):
            ax.set_xlabel("minutes into the load")
            ax.grid(True, which="both", alpha=0.3)
    o = soaks[0]["soak"]["options"]
    fig.suptitle(f'Soak {report["id"]}: {o["rate"]} claims/s for {o["durationS"] / 60:.0f} min, TTL {o["ttlS"]} s '
                 f'({report["environment"]["cpus"]} cores, shared)', fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_router(report, out):
    """Requests/s per case and path (log scale), and router CPU ms per 1,000 requests, ours vs upstream."""
    cases = [(s["name"], s["concurrency"]) for s in report["summary"]]
    labels = [f"{n}\nc={c}" for n, c in cases]
    fig, (tput, cpu) = plt.subplots(1, 2, figsize=(16, 5.2))
    width = 0.27
    colors = {"direct": COLORS["floor"], "ours": COLORS["ours"], "upstream": COLORS["upstream"]}
    for i, via in enumerate(("direct", "ours", "upstream")):
        rows = [next(x for x in report["cases"] if x["name"] == n and x["concurrency"] == c and x["via"] == via) for n, c in cases]
        xs = [k + (i - 1) * width for k in range(len(cases))]
        tput.bar(xs, [r["requestsPerSecond"] or float("nan") for r in rows], width, color=colors[via], label=via)
        if via != "direct":
            per1k = [(r["routerCpuSeconds"] * 1e6 / r["requests"]) if r["requests"] else float("nan") for r in rows]
            cpu.bar([k + (i - 1.5) * width for k in range(len(cases))], per1k, width, color=colors[via], label=via)
    for ax, title, unit in ((tput, "throughput (log scale)", "requests or messages / s"), (cpu, "router CPU per 1,000 requests", "ms")):
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    tput.set_yscale("log")
    rss = report["rss"]
    fig.suptitle(f'Router benchmark {report["id"]} ({report["environment"]["cpus"]} cores; peak RSS ours {rss["oursPeakMiB"]:.0f} MiB, '
                 f'upstream {rss["upstreamPeakMiB"]:.0f} MiB; upstream carries no gRPC)', fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


report = json.load(open(sys.argv[1]))
if report["id"].startswith("router-"):
    plot_router(report, sys.argv[2])
    sys.exit(0)
soaks = [r for r in report["runs"] if r.get("soak")]
if soaks:
    plot_soak(report, soaks, sys.argv[2])
    sys.exit(0)
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
