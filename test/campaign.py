#!/usr/bin/env python3
"""The long randomized campaign: the differential test and the corpus test, seed after seed,
until a time or batch budget is spent. Prints one line per run and ends with the totals and
"N passed, M failed". Each failing run's whole output is kept in --out (the differential's
output holds a SQL script that replays the failing scenario).

Usage: campaign.py --extension PATH [--minutes 60] [--batches 100000] [--seed 1000]
                   [--python PY] [--no-corpus] [--corpus-data DIR] [--out DIR]
--python runs the suites under another interpreter (e.g. .venv-duckdb2/bin/python for DuckDB
2.0.1; the corpus needs the TPC-H wheel, which exists for DuckDB 1.5.5 only: pass --no-corpus, or
--corpus-data with the tables and queries 1.5.5 exported, `corpus.py --export DIR`).
"""
import argparse
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def last_counts(text):
    m = re.findall(r"^(\d+) passed, (\d+) failed\s*$", text, re.M)
    return (int(m[-1][0]), int(m[-1][1])) if m else (0, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extension", required=True)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--batches", type=int, default=100000, help="stop after this many batches in all")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--corpus-data", help="TPC-H tables and queries exported by corpus.py --export, for a host without the generator")
    ap.add_argument("--out", default=str(ROOT / "test" / "tmp" / "campaign"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.minutes * 60
    totals = {"differential": [0, 0, 0, 0], "corpus-tpch": [0, 0, 0, 0]}  # runs, batches, passed, failed
    seed, run = args.seed, 0
    while time.time() < deadline and sum(t[1] for t in totals.values()) < args.batches:
        corpus = not args.no_corpus and run % 4 == 3
        if corpus:
            name = "corpus-tpch"
            data = ["--data", args.corpus_data] if args.corpus_data else ["--sf", "0.01"]
            cmd = [args.python, "test/corpus/corpus.py", "--extension", args.extension, "--suite", "tpch",
                   *data, "--batches", "12", "--seed", str(seed), "--quiet"]
        else:
            name = "differential"
            cmd = [args.python, "test/differential/differential.py", "--extension", args.extension,
                   "--seed", str(seed), "--batches", "300"]
        started = time.time()
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        passed, failed = last_counts(proc.stdout)
        if proc.returncode != 0 and failed == 0:
            failed = 1
        m = re.findall(r"batches: (\d+)", proc.stdout)
        batches = int(m[-1]) if m else 0
        t = totals[name]
        t[0], t[1], t[2], t[3] = t[0] + 1, t[1] + batches, t[2] + passed, t[3] + failed
        line = f"{name} seed {seed}: {batches} batches, {passed} passed, {failed} failed ({time.time() - started:.0f} s)"
        if failed:
            path = out / f"{name}-seed{seed}.txt"
            path.write_text(proc.stdout)
            line += f"; output in {path}"
        print(line, flush=True)
        seed += 1
        run += 1
    for name, (runs, batches, passed, failed) in totals.items():
        print(f"{name}: {runs} runs, {batches} batches, {passed} passed, {failed} failed")
    print(f"batches in all: {sum(t[1] for t in totals.values())}")
    print(f"{sum(t[2] for t in totals.values())} passed, {sum(t[3] for t in totals.values())} failed")
    sys.exit(1 if any(t[3] for t in totals.values()) else 0)


if __name__ == "__main__":
    main()
