#!/usr/bin/env python3
"""openivm benchmark: incremental refresh against recompute, measured in the same run.

usage: run.py [--extension PATH] [--quick] [--only star,tpch,manyviews] [--runs N] [--out DIR]

Workloads (see bench/README.md): a star schema at 2M and 20M fact rows, TPC-H SF1 with views shaped
like Q3/Q5/Q10 and RF1-like batches, and 50 views over one 5M-row table. --quick runs the same code
at small sizes (200K, SF 0.01, 6 views over 100K, 3 runs) and asserts correctness only.
Every refresh is compared with the recompute; a mismatch stops the run with exit status 1
(--keep-going records it and goes on, still exiting 1).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time

import duckdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from openivm_bench import manyviews, report, star, targets, tpch  # noqa: E402
from openivm_bench.core import Config, Features, Mismatch, Recorder  # noqa: E402

WORKLOADS = {"star": star, "tpch": tpch, "manyviews": manyviews}
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def tpch_extension() -> str | None:
    spec = importlib.util.find_spec("duckdb_extension_tpch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "extensions", f"v{duckdb.__version__}",
                        "tpch.duckdb_extension")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--extension", default=os.path.join(ROOT, "build/release/openivm.duckdb_extension"))
    ap.add_argument("--tpch-extension", default=None, help="default: from the duckdb-extension-tpch package")
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 runs: a correctness smoke test")
    ap.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads: " + ", ".join(WORKLOADS))
    ap.add_argument("--runs", type=int, default=None, help="runs per case (default 5; 3 with --quick)")
    ap.add_argument("--out", default=None, help="results directory (default bench/results, bench/results/quick with --quick)")
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "build/bench/data"),
                    help="generated base databases, reused across runs (default build/bench/data)")
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "build/bench/work"))
    ap.add_argument("--star-rows", default=None, help="comma-separated fact sizes of the star (default 2000000,20000000)")
    ap.add_argument("--case-budget", type=float, default=None,
                    help="seconds per case: stop its runs early when the next would exceed this "
                         "(default 90; 0 = never; ignored with --quick)")
    ap.add_argument("--match", default=None,
                    help='run only the cases whose "<source> <batch>" contains this, e.g. "append-only+key dims"')
    ap.add_argument("--keep-going", action="store_true", help="record mismatches and go on (exit status still 1)")
    ap.add_argument("--replot", action="store_true",
                    help="only draw the plots again from the results.csv in --out (default bench/results)")
    args = ap.parse_args()
    if args.replot:
        out = os.path.abspath(args.out or os.path.join(HERE, "results", "quick" if args.quick else ""))
        files = report.plots(report.read_csv(os.path.join(out, "results.csv")), out)
        print("written: " + ", ".join(os.path.relpath(f, ROOT) for f in files))
        return 0

    only = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    extension = os.path.abspath(args.extension)
    if not os.path.exists(extension):
        ap.error(f"extension not found: {extension} (run `make release`)")
    cfg = Config(
        extension=extension,
        tpch_extension=os.path.abspath(args.tpch_extension) if args.tpch_extension else tpch_extension(),
        runs=args.runs or (3 if args.quick else 5),
        quick=args.quick,
        data_dir=os.path.abspath(args.data_dir),
        work_dir=os.path.abspath(args.work_dir),
        out_dir=os.path.abspath(args.out or os.path.join(HERE, "results", "quick" if args.quick else "")),
        keep_going=args.keep_going,
        star_rows=[int(x) for x in args.star_rows.split(",")] if args.star_rows else None,
        match=args.match,
        case_budget_s=0 if args.quick else (90 if args.case_budget is None else args.case_budget),
    )
    for d in (cfg.data_dir, cfg.work_dir, cfg.out_dir):
        os.makedirs(d, exist_ok=True)

    feats = Features.detect(extension)
    header = [
        f"{'quick' if cfg.quick else 'full'} run, {time.strftime('%Y-%m-%d %H:%M:%S')}, workloads: {', '.join(only)}, "
        f"{cfg.runs} runs per case" + (f" (time budget {cfg.case_budget_s:g} s per case)" if cfg.case_budget_s else ""),
        f"DuckDB {duckdb.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average at start {os.getloadavg()[0]:.2f}",
        f"extension {os.path.relpath(extension, ROOT)}; features: {feats.describe()}",
    ]
    for h in header:
        print(h, flush=True)
    rec = Recorder()
    status = 0
    target_lines = []
    files = []
    for name in only:
        try:
            WORKLOADS[name].run(cfg, feats, rec)
        except Mismatch:
            status = 1
            break
        finally:
            files = report.write_all(rec.records, cfg.out_dir, header, rec.skipped, rec.failures, target_lines)
    if rec.failures:
        status = 1
    if status == 0:
        target_lines = targets.evaluate(rec.records, cfg.quick)
        print("\nTargets" + (" (quick sizes: informational only)" if cfg.quick else "") + ":")
        for line in target_lines:
            print("  " + line)
        files = report.write_all(rec.records, cfg.out_dir, header, rec.skipped, rec.failures, target_lines)
    print(f"\n{len(rec.records)} cases in {rec.elapsed()}; written: " + ", ".join(os.path.relpath(f, ROOT) for f in files))
    if rec.failures:
        print(f"FAILED: {len(rec.failures)} mismatch(es) between a refreshed view and its recompute", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
