"""Results: a markdown table, a CSV and one PNG plot per workload."""
from __future__ import annotations

import csv
import os

from .core import fmt_ms, mib

COLUMNS = ["workload", "dataset", "source", "batch", "fraction", "batch_rows", "view", "variant", "runs",
           "refresh_ms", "recompute_ms", "ratio", "mode", "terms_run", "terms_fk_pruned", "terms_total",
           "delta_rows", "capture_ms", "apply_ms", "growth_bytes", "copy_bytes", "budget_cut"]


def speed(ratio) -> str:
    if ratio is None:
        return "-"
    return f"{1 / ratio:.1f}x faster" if ratio < 1 else f"{ratio:.1f}x slower"


def write_csv(records, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})


def markdown(records, header_lines, skipped, failures, target_lines) -> str:
    out = ["# openivm benchmark results", ""] + [f"- {h}" for h in header_lines] + [""]
    out += ["`ratio` = refresh time / recompute time of the same view's query, measured in the same run "
            "(median of the per-run ratios; below 1 the refresh is faster). Times are medians in ms. "
            "Every refresh was compared with the recompute.", "",
            "Where a case refreshes several views over the same tables, the first refresh after each batch "
            "captures it and logs it for the others, which then only read it. The row `(first refresh)` / "
            "`captures` is that first refresh in each run (the views take turns), against the recompute of "
            "its own view's query: about what one view alone over its tables costs, where the per-view rows "
            "are mostly the cheaper reading refreshes. Runs whose first refresh was a `nofk` variant "
            "(which recomputes) are left out of it.", ""]
    if failures:
        out += ["## MISMATCHES", ""] + [f"- {f}" for f in failures] + [""]
    if target_lines:
        out += ["## Targets", "", "```"] + target_lines + ["```", ""]
    writes = [r for r in records if r["workload"] == "writes"]
    records = [r for r in records if r["workload"] != "writes"]
    if writes:
        out += ["## The cost of a write through openivm", "",
                "`ratio` = the write through openivm / the same plain DML statement, measured side by side "
                "(median of the per-run ratios; each statement commits).", "",
                "| dataset | statement | rows | through openivm ms | plain ms | ratio |", "|---|---|---:|---:|---:|---:|"]
        out += [f"| {r['dataset']} | {r['statement']} | {r['rows']:,} | {fmt_ms(r['openivm_ms'])} | "
                f"{fmt_ms(r['plain_ms'])} | {r['ratio']:.2f} |" for r in writes]
        out.append("")
    for wl in dict.fromkeys(r["workload"] for r in records):
        out += [f"## {wl}", "",
                "| dataset | source | batch | rows | view | variant | refresh ms | recompute ms | ratio | "
                "speed | mode | terms run/pruned/total | capture ms | apply ms | db growth |",
                "|---|---|---|---:|---|---|---:|---:|---:|---|---|---|---:|---:|---|"]
        for r in records:
            if r["workload"] != wl:
                continue
            terms = "-" if r.get("terms_total") is None else f"{r['terms_run']}/{r['terms_fk_pruned']}/{r['terms_total']}"
            growth = "" if r.get("growth_bytes") is None else f"{mib(r['growth_bytes'])} (one copy {mib(r['copy_bytes'])})"
            rows = "" if r.get("batch_rows") is None else f"{r['batch_rows']:,}"
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            out.append(
                f"| {r['dataset']} | {r['source']} | {r['batch']} | {rows} | {r['view']} | {r['variant']}"
                f"{' (' + str(r['runs']) + ' runs: time budget)' if r.get('budget_cut') else ''} | "
                f"{fmt_ms(r['refresh_ms'])} | {fmt_ms(r['recompute_ms'])} | {ratio} | {speed(r['ratio'])} | "
                f"{r.get('mode') or '-'} | {terms} | {fmt_ms(r.get('capture_ms'))} | {fmt_ms(r.get('apply_ms'))} | {growth} |")
        out.append("")
    if skipped:
        out += ["## Skipped", ""] + [f"- {s}" for s in skipped] + [""]
    return "\n".join(out)


def plots(records, out_dir) -> list[str]:
    """refresh/recompute ratio against batch size: one PNG per workload, one panel per dataset."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for wl in dict.fromkeys(r["workload"] for r in records):
        rs = [r for r in records if r["workload"] == wl and r.get("fraction") and r["ratio"] is not None]
        datasets = list(dict.fromkeys(r["dataset"] for r in rs))
        if not datasets:
            continue
        fig, axes = plt.subplots(1, len(datasets), figsize=(7 * len(datasets), 5.5), squeeze=False)
        for ax, ds in zip(axes[0], datasets):
            series = {}
            for r in rs:
                if r["dataset"] != ds:
                    continue
                kind = r["batch"].split(" ")[0]
                key = f"{r['source']} {kind} {r['view'].split('_nofk')[0].split('_inc')[0]} {r['variant']}"
                series.setdefault(key, []).append((r["fraction"] * 100, r["ratio"]))
            for key, pts in sorted(series.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=key)
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("batch size, % of the fact table")
            ax.set_ylabel("refresh time / recompute time")
            ax.set_title(f"{wl} {ds}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6, loc="best")
        fig.tight_layout()
        path = os.path.join(out_dir, f"{wl}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_all(records, out_dir, header_lines, skipped, failures, target_lines) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "results.md")
    with open(md, "w") as f:
        f.write(markdown(records, header_lines, skipped, failures, target_lines))
    cs = os.path.join(out_dir, "results.csv")
    write_csv(records, cs)
    return [md, cs] + plots(records, out_dir)
