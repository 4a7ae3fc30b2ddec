"""Results: a markdown table, a CSV and one PNG plot per workload."""
from __future__ import annotations

import csv
import os

from .core import fmt_ms, mib

COLUMNS = ["workload", "dataset", "source", "batch", "fraction", "batch_rows", "view", "variant", "runs",
           "refresh_ms", "recompute_ms", "ratio", "mode", "terms_run", "terms_fk_pruned", "terms_total",
           "delta_rows", "capture_ms", "apply_ms", "growth_bytes", "copy_bytes", "budget_cut", "first_refresh_ms"]


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


# The plots show the default refresh (`auto`) of each view and the first refresh after a batch;
# the other variants (`nofk`, forced `incremental`) are in the tables.
PLOTTED_VARIANTS = ("auto", "captures", "refresh_all")
RATIO_TICKS = [x * 10.0 ** e for e in range(-3, 3) for x in (1, 2, 5)]
KIND_STYLES = {"insert": "-", "rf1": "-", "dims": "--", "rf1+rf2": "--", "rf1+rf2-openivm": "-.",
               "mixed": ":", "writes": "-."}


def plots(records, out_dir) -> list[str]:
    """refresh/recompute ratio against batch size: one PNG per workload, one panel per dataset and
    source (one per dataset for many views, whose sources are its series), one colour per view
    and one line style per kind of batch."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        return []
    written = []
    for wl in dict.fromkeys(r["workload"] for r in records):
        rs = [r for r in records if r["workload"] == wl and r.get("fraction") and r["ratio"] is not None
              and r["variant"] in PLOTTED_VARIANTS]
        if not rs:
            continue
        by_source = wl != "manyviews"
        panels = list(dict.fromkeys((r["dataset"], r["source"] if by_source else None) for r in rs))
        cols = min(3, len(panels))
        rows = (len(panels) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.8 * rows), squeeze=False)
        # a series is a view within a panel of one source; for many views, a source
        name_of = (lambda r: r["view"]) if by_source else (lambda r: r["source"])
        names = list(dict.fromkeys(name_of(r) for r in rs))
        colours = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(names)}
        for ax, (ds, source) in zip(axes.flat, panels):
            series = {}
            for r in rs:
                if r["dataset"] != ds or (by_source and r["source"] != source):
                    continue
                kind = r["batch"].split(" ")[0]
                series.setdefault((name_of(r), kind), []).append((r["fraction"] * 100, r["ratio"]))
            for (name, kind), pts in sorted(series.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colours[name],
                        linestyle=KIND_STYLES.get(kind, "-"), label=f"{kind}: {name}")
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            # plain numbers on both axes: 0.1, 0.2, 0.5, 1, 2, 5 ...
            ax.yaxis.set_major_locator(ticker.FixedLocator(RATIO_TICKS))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel("batch size, % of the table")
            ax.set_ylabel("refresh / recompute (below 1: refresh faster)")
            ax.set_title(f"{wl} {ds}" + (f" [{source}]" if source else ""))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="best")
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        what = ("refreshing every view against recomputing every view" if not by_source else
                "the default refresh of each view and the first refresh after a batch")
        fig.suptitle(f"{wl}: {what}\n(other variants: results.md)", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{wl}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def read_csv(path) -> list[dict]:
    """The records of a results.csv, with the numbers the plots read as numbers."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("fraction", "ratio"):
            r[k] = float(r[k]) if r.get(k) not in (None, "") else None
    return rows


def write_all(records, out_dir, header_lines, skipped, failures, target_lines) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "results.md")
    with open(md, "w") as f:
        f.write(markdown(records, header_lines, skipped, failures, target_lines))
    cs = os.path.join(out_dir, "results.csv")
    write_csv(records, cs)
    return [md, cs] + plots(records, out_dir)
