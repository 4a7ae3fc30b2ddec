"""The targets of the issues "Refresh faster than recompute" and "Deletes and updates at O(delta)":
one PASS / MISS / SKIP line each.

A MISS never fails the run; a SKIP means the case was not measured (a variant whose function is
missing, or a workload left out with --only).
"""
from __future__ import annotations

from .core import mib


def evaluate(records, quick: bool) -> list[str]:
    star, tpch, many = ("200K", "SF0.01", "6 views over 100K") if quick else ("20M", "SF1", "50 views over 5M")
    lines = []

    def find(workload, dataset, source, batch, view, variant=None):
        for r in records:
            if (r["workload"], r["dataset"], r.get("source"), r.get("batch"), r.get("view")) == (workload, dataset, source, batch, view) \
                    and (variant is None or r["variant"] == variant) and r["ratio"] is not None:
                return r
        return None

    cut = {id(r) for r in records if r.get("budget_cut")}

    def line(ok, what, detail, *rs):
        tag = "SKIP" if ok is None else "PASS" if ok else "MISS"
        few = [r for r in rs if r is not None and id(r) in cut]
        note = f" [only {min(r['runs'] for r in few)} runs: time budget]" if few else ""
        lines.append(f"{tag}  {what}: {detail}{note}")

    def speed(r):
        x = f"{1 / r['ratio']:.2f}x faster" if r["ratio"] <= 1 else f"{r['ratio']:.2f}x slower"
        return f"refresh {r['refresh_ms']:.1f} ms, recompute {r['recompute_ms']:.1f} ms ({x})"

    # 1. 20M star, fact and dimensions append-only, a batch with inserts into every dimension
    for source in ("append-only+key", "append-only"):
        for frac, need in (("0.1%", 10.0), ("1%", 3.0)):
            for view in ("agg_dec", "agg_dbl"):
                what = f"star {star} [{source}] dims {frac} {view}: >= {need:g}x faster than recompute"
                r = find("star", star, source, f"dims {frac}", view)
                line(None if r is None else 1 / r["ratio"] >= need, what, "not measured" if r is None else speed(r), r)
        for view in ("agg_dec", "agg_dbl"):
            what = f"star {star} [{source}] dims 10% {view}: >= 1.2x faster, or auto picks full and <= 1.1x of recompute"
            r = find("star", star, source, "dims 10%", view)
            if r is None:
                line(None, what, "not measured")
            else:
                full = "full" in (r.get("mode") or "")
                ok = 1 / r["ratio"] >= 1.2 or (full and r["ratio"] <= 1.1)
                line(ok, what, f"{speed(r)}, mode {r.get('mode') or '-'}", r)

    # 2. a refresh with nothing to do
    for source in ("append-only+key", "append-only", "diff"):
        r = find("star", star, source, "none", "agg_dec")
        what = f"star {star} [{source}] nothing to do: refresh <= 1/50 of the recompute"
        line(None if r is None else r["ratio"] <= 1 / 50, what, "not measured" if r is None else speed(r), r)

    # 3. TPC-H RF1 0.1%, orders and lineitem append-only
    for source in ("append-only+key", "append-only"):
        for qv in ("q3", "q5", "q10"):
            r = find("tpch", tpch, source, "rf1 0.1%", qv)
            what = f"tpch {tpch} [{source}] rf1 0.1% {qv}: >= 5x faster than recompute"
            line(None if r is None else 1 / r["ratio"] >= 5, what, "not measured" if r is None else speed(r), r)

    # 4. exact diff source, one distinct row per fact row: <= 2x a recompute
    bag = [r for r in records if r["workload"] == "star" and r["dataset"] == star and r["source"] == "diff"
           and r["view"].startswith("bag_") and r["ratio"] is not None]
    if not bag:
        line(None, f"star {star} [diff] bag views: refresh <= 2x recompute", "not measured")
    for r in bag:
        what = f"star {star} [diff] {r['batch']} {r['view']}/{r['variant']}: refresh <= 2x recompute"
        line(r["ratio"] <= 2, what, f"ratio {r['ratio']:.2f} (refresh {r['refresh_ms']:.0f} ms, recompute {r['recompute_ms']:.0f} ms), mode {r.get('mode') or '-'}", r)

    # 5. many views over one table
    for source, growth_max, growth_text, refresh_max in (
            ("diff", 1.0, "at most one copy of the read columns", 0.5),
            ("append-only+key", 0.05, "almost nothing (<= 5% of one copy)", 0.2),
            ("append-only", 0.05, "almost nothing (<= 5% of one copy)", 0.2)):
        r = find("manyviews", many, source, "create", "all " + many.split()[0])
        if r is None:
            line(None, f"manyviews [{source}] create", "not measured")
        else:
            g = r["growth_bytes"] / r["copy_bytes"]
            line(g <= growth_max, f"manyviews {many} [{source}] db growth: {growth_text}",
                 f"{mib(r['growth_bytes'])} = {g:.2f} copies ({mib(r['copy_bytes'])} each)")  # one round suffices
            line(r["ratio"] <= 2, f"manyviews {many} [{source}] create <= 2x the time of the recomputes",
                 f"create {r['refresh_ms']:.0f} ms, recomputes {r['recompute_ms']:.0f} ms (ratio {r['ratio']:.2f})", r)
        r = find("manyviews", many, source, "insert 0.1%", "all " + many.split()[0])
        what = f"manyviews {many} [{source}] refresh all after insert 0.1% <= 1/{1 / refresh_max:g} of the recomputes"
        line(None if r is None else r["ratio"] <= refresh_max, what,
             "not measured" if r is None else f"{r['refresh_ms']:.0f} ms vs {r['recompute_ms']:.0f} ms (ratio {r['ratio']:.3f})", r)

    # 6. FK pruning with inserts into every dimension
    pruning = len(lines)
    for source in ("append-only+key", "append-only", "diff"):
        for frac in ("0.1%", "1%", "10%"):
            for m in ("dec", "dbl"):
                on = find("star", star, source, f"dims {frac}", f"agg_{m}")
                off = find("star", star, source, f"dims {frac}", f"agg_{m}_nofk")
                if on is None or off is None:
                    continue
                x = off["refresh_ms"] / on["refresh_ms"]
                line(x >= 3, f"star {star} [{source}] dims {frac} agg_{m}: pruned >= 3x faster than fk_pruning := false",
                     f"pruned {on['refresh_ms']:.1f} ms ({on['terms_run']} terms), unpruned {off['refresh_ms']:.1f} ms "
                     f"({off['terms_run']} terms): {x:.2f}x", on, off)
    if len(lines) == pruning:
        line(None, f"star {star} dims: pruned >= 3x faster than fk_pruning := false", "not measured")
    # 7. deletes and updates through openivm (issue 8)
    r = find("star", star, "append-only+key", "writes 0.1%", "agg_dec")
    line(None if r is None else 1 / r["ratio"] >= 5,
         f"star {star} [append-only+key] writes 0.1% (deletes and updates through openivm) agg_dec: >= 5x faster than recompute",
         "not measured" if r is None else speed(r), r)
    for qv in ("q3", "q5", "q10"):
        r = find("tpch", tpch, "append-only+key", "rf1+rf2-openivm 0.1%", qv)
        line(None if r is None else 1 / r["ratio"] >= 5,
             f"tpch {tpch} [append-only+key] rf1 + rf2 through openivm_delete 0.1% {qv}: >= 5x faster than recompute",
             "not measured" if r is None else speed(r), r)
    for what in ("delete", "update"):
        w = next((x for x in records if x["workload"] == "writes" and x["dataset"] == star and x["statement"] == what), None)
        line(None if w is None else w["ratio"] <= 1.5, f"star {star}: a {what} of 0.1% through openivm <= 1.5x the plain statement",
             "not measured" if w is None else f"through openivm {w['openivm_ms']:.1f} ms, plain {w['plain_ms']:.1f} ms (ratio {w['ratio']:.2f})")
    if quick:
        lines = [l.replace("  ", "  (quick sizes, informational) ", 1) for l in lines]
    return lines
