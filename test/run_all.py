#!/usr/bin/env python3
"""Runs every test suite of openivm and ends with one line: 'N passed, M failed'.

Suites: the layer rule of src/ (tools/layers.py), the Rust unit tests (cargo test), the sqllogictest files (test/sql), the randomized
differential test, the Python integration tests (test/python) and the TPC-H corpus test
(test/corpus), on DuckDB 1.5.5 and, with --duckdb2, again on DuckDB 2.0.1 (where the PRAGMA tests
of test/python/test_pragma.py run too), plus the process-exit check on 2.0. Each suite's own
output is shown as it runs.
"""
import argparse
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(name, cmd, parse):
    print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
    started = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    proc.wait()
    passed, failed = parse("".join(lines))
    if proc.returncode != 0 and failed == 0:
        failed = 1  # a suite that crashed counts as a failure even if it reported none
    print(f"=== {name}: {passed} passed, {failed} failed ({time.time() - started:.0f} s)", flush=True)
    return passed, failed


def summary_line(text):
    m = re.findall(r"^(\d+) passed, (\d+) failed\s*$", text, re.M)
    return (int(m[-1][0]), int(m[-1][1])) if m else (0, 1)


def cargo_counts(text):
    results = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed", text)
    if not results:
        return 0, 1
    return sum(int(p) for p, _ in results), sum(int(f) for _, f in results)


def layer_counts(text):
    return (1, 0) if re.search(r"^layers: ok", text, re.M) else (0, 1)


def unittest_counts(text):
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    if not ran:
        return 0, 1
    total = int(ran.group(1))
    bad = re.search(r"FAILED \((.*)\)", text)
    failed = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", bad.group(1))) if bad else 0
    skipped = sum(int(n) for n in re.findall(r"skipped=(\d+)", text.splitlines()[-1] if text.strip() else ""))
    return total - failed - skipped, failed  # a test skipped on this host passed nothing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extension", required=True)
    ap.add_argument("--seed", default="42")
    ap.add_argument("--batches", default="500")
    ap.add_argument("--duckdb2", help="python of a DuckDB 2.0 environment for the compatibility check")
    args = ap.parse_args()
    py = sys.executable
    suites = [
        # the layer rule of src/ (docs/architecture.md): imports one way, no cycle
        ("layers", [py, "tools/layers.py"], layer_counts),
        ("unit", ["cargo", "test", "--release", "--lib"], cargo_counts),
        # the compile_fail example of src/sql.rs: a fixed query called with a wrong parameter count
        ("doc", ["cargo", "test", "--release", "--doc"], cargo_counts),
        ("sqllogictest", [py, "test/runner/sqllogictest.py", "--extension", args.extension], summary_line),
        ("python", [py, "-m", "unittest", "discover", "-s", "test/python", "-v"], unittest_counts),
        ("differential", [py, "test/differential/differential.py", "--extension", args.extension,
                          "--seed", args.seed, "--batches", args.batches], summary_line),
        ("corpus-tpch", [py, "test/corpus/corpus.py", "--extension", args.extension, "--suite", "tpch",
                         "--sf", "0.01", "--batches", "4", "--seeds", "2", "--seed", args.seed, "--quiet"], summary_line),
    ]
    if args.duckdb2:
        # The same suites on DuckDB 2.0.1 (its Python package). The TPC-H generator's wheel exists
        # for 1.5.5 only: the corpus reads the tables and queries 1.5.5 exported as Parquet.
        py2 = args.duckdb2
        data = str(ROOT / "test" / "tmp" / "tpch-sf0.01")
        suites += [
            ("tpch-export", [py, "test/corpus/corpus.py", "--extension", args.extension, "--suite", "tpch",
                             "--sf", "0.01", "--export", data], lambda text: (1, 0)),
            ("duckdb2-sqllogictest", [py2, "test/runner/sqllogictest.py", "--extension", args.extension], summary_line),
            ("duckdb2-python", ["env", f"OPENIVM_EXTENSION={args.extension}", py2, "-m", "unittest", "discover",
                                "-s", "test/python", "-v"], unittest_counts),
            ("duckdb2-differential", [py2, "test/differential/differential.py", "--extension", args.extension,
                                      "--seed", args.seed, "--batches", str(max(1, int(args.batches) // 2))], summary_line),
            ("duckdb2-corpus-tpch", [py2, "test/corpus/corpus.py", "--extension", args.extension, "--suite", "tpch",
                                     "--data", data, "--batches", "4", "--seeds", "2", "--seed", args.seed, "--quiet"],
             summary_line),
            ("duckdb2-compat", [py2, "test/python/compat_check.py", args.extension], summary_line),
        ]
    total_passed = total_failed = 0
    report = []
    for name, cmd, parse in suites:
        p, f = run(name, cmd, parse)
        total_passed += p
        total_failed += f
        report.append(f"  {name:14} {p:6} passed, {f} failed")
    print("\n=== summary")
    print("\n".join(report))
    print(f"{total_passed} passed, {total_failed} failed")
    sys.exit(1 if total_failed else 0)


if __name__ == "__main__":
    main()
