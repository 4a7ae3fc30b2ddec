#!/usr/bin/env python3
"""Checks the layer rule of src/: imports run one way, and no files import each other.

The layers, top to bottom (docs/architecture.md): shell, execute, declare, capture, front,
render, plan, store, then the files at the top of src/ (ast, ir, db, sql, error, ...). A file
may refer to its own folder and to the folders below it; a reference up the list, or a cycle of
files, fails the check. References are read from `crate::` and `super::` paths outside the
unit tests (`#[cfg(test)] mod tests` at the end of a file, or a file or folder declared
`#[cfg(test)] mod x;`), which may use any layer.

Usage: python3 tools/layers.py [--graph]   (exit status 1 when the rule is broken)
"""

import re
import sys
from pathlib import Path

LAYERS = ["shell", "execute", "declare", "capture", "front", "render", "plan", "store", "base"]
SRC = Path(__file__).resolve().parent.parent / "src"


def module_of(path: Path) -> list:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def layer_of(path: Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else "base"


def file_of(parts: list):
    """The file that defines the longest prefix of a module path, if any."""
    for n in range(len(parts), 0, -1):
        p = SRC.joinpath(*parts[:n])
        for f in (p.with_suffix(".rs"), p / "mod.rs"):
            if f.is_file():
                return f
    return None


def code_of(text: str) -> str:
    """The file without its unit tests and comments."""
    m = re.search(r"^#\[cfg\(test\)\]\s*\n\s*(pub(\(crate\))? )?mod tests\b", text, re.M)
    if m:
        text = text[: m.start()]
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def paths_in(code: str):
    """Every `crate::a::b` and `super::a::b` path, braces of `use` expanded one level."""
    for m in re.finditer(r"\b(crate|super)::\{([^}]*)\}", code):
        for item in m.group(2).split(","):
            item = item.strip().split(" as ")[0]
            if item and item != "self":
                yield m.group(1), item.split("::")
    for m in re.finditer(r"\b(crate|super)::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)", code):
        yield m.group(1), m.group(2).split("::")


def edges():
    out = {}
    test_files = set()
    for m in list(SRC.rglob("mod.rs")) + [SRC / "lib.rs"]:
        for name in re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))? )?mod (\w+);", m.read_text()):
            test_files.add(m.parent / f"{name}.rs")
            test_files.update((m.parent / name).rglob("*.rs"))  # a folder of tests: all its files
    for f in sorted(SRC.rglob("*.rs")):
        if f in test_files:
            continue  # unit tests in a file of their own, like a file's own tests
        here = module_of(f)
        parent = here if f.name == "mod.rs" else here[:-1]
        targets = set()
        code = code_of(f.read_text())
        if f.name == "mod.rs":
            # A folder's mod.rs names its own files by bare paths (`cache::Cache`).
            for child in sorted({c.stem for c in f.parent.glob("*.rs")} | {d.name for d in f.parent.iterdir() if d.is_dir()}):
                if child != "mod" and re.search(r"(?<![:\w])" + child + r"::", code):
                    t = file_of(here + [child])
                    if t:
                        targets.add(t)
        for root, parts in paths_in(code):
            full = parts if root == "crate" else parent[:-1] + parts if f.name == "mod.rs" else parent + parts
            t = file_of(full)
            if t and t != f:
                targets.add(t)
        out[f] = targets
    return out


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def main():
    graph = edges()
    rel = lambda f: str(f.relative_to(SRC.parent))
    problems = []
    for f, targets in graph.items():
        for t in sorted(targets):
            a, b = layer_of(f), layer_of(t)
            if LAYERS.index(a) > LAYERS.index(b):
                problems.append(f"{rel(f)} ({a}) imports {rel(t)} ({b}), a layer above it")
    for comp in cycles(graph):
        problems.append("a cycle of imports: " + ", ".join(sorted(rel(f) for f in comp)))
    if "--graph" in sys.argv:
        for f, targets in graph.items():
            print(rel(f), "->", ", ".join(sorted(rel(t) for t in targets)))
    arrows = sum(len(t) for t in graph.values())
    if problems:
        print("\n".join(problems))
        print(f"layers: {len(problems)} problem(s) in {len(graph)} files, {arrows} imports")
        sys.exit(1)
    print(f"layers: ok ({len(graph)} files, {arrows} imports, one way, no cycle)")


if __name__ == "__main__":
    main()
