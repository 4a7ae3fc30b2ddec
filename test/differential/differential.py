#!/usr/bin/env python3
"""Randomized differential test of openivm.

Each *scenario* is a fresh in-memory DuckDB database with a random schema of one of five kinds
(star with catalog FKs, star with RELY FKs, chain/snowflake, self-join, generic bag tables), a
few random maintained views over it, and 20-40 *batches* of random DML. After each batch some
(or all) views are refreshed and every refreshed view is compared with a recompute of its query
in both directions of EXCEPT ALL. In scenarios with foreign keys every view exists twice: once
refreshed normally and once always refreshed with `fk_pruning := false`; both must equal the
recompute, which checks that foreign-key pruning is sound.

Deterministic for a given seed: every decision comes from one random.Random(seed), and the
generator only reads the database with ORDER BY. On a failure the full scenario (DDL, data,
view definitions, every batch and every refresh so far) is printed as a SQL script that replays
it in the DuckDB CLI.

Usage: differential.py --extension PATH [--seed N] [--batches N] [--views-per-schema K]
                       [--no-rely] [--continue-on-failure] [--verbose]
The last line is "N passed, M failed"; the exit code is 0 iff nothing failed.
"""

import argparse
import math
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Dict, List, Optional, Tuple

import duckdb

# ----------------------------------------------------------------------------------------------
# SQL helpers


def lit(v) -> str:
    """A SQL literal for a Python value."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def quote_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


GROUP_STRINGS = ["a", "b", "c", "ab", "B", "it's", "é", ""]
LIKE_PATTERNS = ["a%", "%b", "_", "%", "B%", "it%", "%'%"]


# ----------------------------------------------------------------------------------------------
# Schema model


@dataclass
class Col:
    name: str
    type: str  # INTEGER, BIGINT, DECIMAL(10,2), VARCHAR
    role: str  # pk, fk, jkey, grp, int, big, dec
    parent: Optional[Tuple[str, str]] = None  # for fk columns: (table, column)
    null_rate: float = 0.1


@dataclass
class Table:
    name: str
    cols: List[Col]
    pk: Optional[str] = None
    is_fact: bool = False
    min_rows: int = 5
    max_rows: int = 60
    next_id: int = 1
    deleted_ids: List[int] = field(default_factory=list)

    def col(self, name: str) -> Col:
        return next(c for c in self.cols if c.name == name)


@dataclass
class Edge:
    """A join condition between a leaf of table t1 and a leaf of table t2."""

    t1: str
    c1: str
    t2: str
    c2: str
    op: str = "="  # '=', '<', '<=', '+1=', 'between', '<>'
    c2b: Optional[str] = None  # second column of t2 for 'between'
    fk: bool = False  # t1.c1 references t2.c2 (catalog or RELY)

    def render(self, a1: str, a2: str, rng: random.Random) -> str:
        l, r = f"{a1}.{self.c1}", f"{a2}.{self.c2}"
        if self.op == "=":
            return f"{l} = {r}" if rng.random() < 0.7 else f"{r} = {l}"
        if self.op == "+1=":
            return f"{l} + 1 = {r}"
        if self.op == "between":
            return f"{l} BETWEEN {r} AND {a2}.{self.c2b}"
        return f"{l} {self.op} {r}"

    @property
    def equi(self) -> bool:
        return self.op == "="


@dataclass
class Schema:
    kind: str
    fk_mode: Optional[str]  # 'catalog', 'rely' or None
    tables: Dict[str, Table]
    edges: List[Edge]
    fks: List[Tuple[str, str, str, str]]  # (child, child_col, parent, parent_col)
    ddl: List[str] = field(default_factory=list)
    max_leaves: int = 4
    max_alias_per_table: int = 2

    def children_of(self, parent: str) -> List[Tuple[str, str, str]]:
        return [(c, cc, pc) for (c, cc, p, pc) in self.fks if p == parent]


def table_ddl(t: Table, with_fk: bool) -> str:
    parts = []
    for c in t.cols:
        s = f"{c.name} {c.type}"
        if c.role == "pk":
            s += " PRIMARY KEY"
        if c.parent and with_fk:
            s += f" REFERENCES {c.parent[0]}({c.parent[1]})"
        parts.append(s)
    return f"CREATE TABLE {t.name}({', '.join(parts)})"


def dim_table(rng, name: str, pkname: str, extra_fk: Optional[Tuple[str, str, str]] = None) -> Table:
    cols = [Col(pkname, "INTEGER", "pk", null_rate=0)]
    if extra_fk:
        cols.append(Col(extra_fk[0], "INTEGER", "fk", parent=(extra_fk[1], extra_fk[2]), null_rate=0.1))
    cols.append(Col("name", "VARCHAR", "grp", null_rate=0.1))
    if rng.random() < 0.7:
        cols.append(Col("cat", "VARCHAR", "grp", null_rate=0.2))
    cols.append(Col("w", "INTEGER", "int", null_rate=0.15))
    if rng.random() < 0.7:
        cols.append(Col("p", "DECIMAL(10,2)", "dec", null_rate=0.1))
    return Table(name, cols, pk=pkname, min_rows=3, max_rows=15)


def make_star(rng, fk_mode: str) -> Schema:
    ndims = rng.randint(1, 4)
    named_pk = rng.random() < 0.5  # d1(d1_id) instead of d1(id): allows USING
    tables: Dict[str, Table] = {}
    edges: List[Edge] = []
    fks = []
    fcols = [Col("fid", "INTEGER", "int", null_rate=0.0)]
    for i in range(1, ndims + 1):
        dn = f"d{i}"
        pk = f"{dn}_id" if named_pk else "id"
        tables[dn] = dim_table(rng, dn, pk)
        fcols.append(Col(f"{dn}_id", "INTEGER", "fk", parent=(dn, pk), null_rate=0.08))
        fks.append(("f", f"{dn}_id", dn, pk))
        edges.append(Edge("f", f"{dn}_id", dn, pk, fk=True))
        edges.append(Edge("f", f"{dn}_id", dn, pk, fk=True))  # weight FK joins up
    if rng.random() < 0.35:  # a role-playing second reference to d1
        pk = tables["d1"].pk
        fcols.append(Col("d1b_id", "INTEGER", "fk", parent=("d1", pk), null_rate=0.2))
        fks.append(("f", "d1b_id", "d1", pk))
        edges.append(Edge("f", "d1b_id", "d1", pk, fk=True))
    fcols += [
        Col("g", "VARCHAR", "grp", null_rate=0.1),
        Col("qty", "INTEGER", "int", null_rate=0.1),
        Col("amt", "DECIMAL(10,2)", "dec", null_rate=0.1),
        Col("big", "BIGINT", "big", null_rate=0.1),
        Col("k", "INTEGER", "jkey", null_rate=0.1),
    ]
    f = Table("f", fcols, is_fact=True, min_rows=20, max_rows=150)
    all_tables = dict(tables)
    all_tables["f"] = f
    # A non-key join (duplicates, no FK): fact.k = dim.w, and one non-equi dimension predicate.
    dn = rng.choice(list(tables))
    edges.append(Edge("f", "k", dn, "w"))
    if rng.random() < 0.3:
        edges.append(Edge("f", "qty", dn, "w", op="<="))
    return Schema("star", fk_mode, all_tables, edges, fks, max_leaves=min(5, ndims + 2), max_alias_per_table=2)


def make_chain(rng, fk_mode: str) -> Schema:
    depth = rng.randint(2, 3)  # f -> d1 -> d2 [-> d3]
    named_pk = rng.random() < 0.5
    tables: Dict[str, Table] = {}
    edges, fks = [], []
    for i in range(depth, 0, -1):
        dn = f"d{i}"
        pk = f"{dn}_id" if named_pk else "id"
        extra = None
        if i < depth:
            ppk = tables[f"d{i + 1}"].pk
            extra = (f"d{i + 1}_id", f"d{i + 1}", ppk)
            fks.append((dn, f"d{i + 1}_id", f"d{i + 1}", ppk))
            edges += [Edge(dn, f"d{i + 1}_id", f"d{i + 1}", ppk, fk=True)] * 3
        tables[dn] = dim_table(rng, dn, pk, extra)
    fcols = [
        Col("fid", "INTEGER", "int", null_rate=0.0),
        Col("d1_id", "INTEGER", "fk", parent=("d1", tables["d1"].pk), null_rate=0.08),
    ]
    fks.append(("f", "d1_id", "d1", tables["d1"].pk))
    edges += [Edge("f", "d1_id", "d1", tables["d1"].pk, fk=True)] * 3
    if rng.random() < 0.5:  # a side dimension straight off the fact
        pk = "e_id" if named_pk else "id"
        tables["e"] = dim_table(rng, "e", pk)
        fcols.append(Col("e_id", "INTEGER", "fk", parent=("e", pk), null_rate=0.1))
        fks.append(("f", "e_id", "e", pk))
        edges += [Edge("f", "e_id", "e", pk, fk=True)] * 2
    fcols += [
        Col("g", "VARCHAR", "grp", null_rate=0.1),
        Col("qty", "INTEGER", "int", null_rate=0.1),
        Col("amt", "DECIMAL(10,2)", "dec", null_rate=0.1),
        Col("big", "BIGINT", "big", null_rate=0.1),
    ]
    tables["f"] = Table("f", fcols, is_fact=True, min_rows=20, max_rows=120)
    # A non-key join between two dimensions of the chain.
    edges.append(Edge("d1", "name", "d2", "name"))
    return Schema("chain", fk_mode, tables, edges, fks, max_leaves=min(5, len(tables) + 1), max_alias_per_table=1)


def make_self(rng) -> Schema:
    self_fk = rng.random() < 0.6
    with_dept = rng.random() < 0.5
    cols = [
        Col("id", "INTEGER", "pk", null_rate=0),
        Col("mgr_id", "INTEGER", "fk" if self_fk else "jkey", parent=("emp", "id") if self_fk else None, null_rate=0.2),
        Col("dept", "VARCHAR", "grp", null_rate=0.1),
        Col("salary", "DECIMAL(10,2)", "dec", null_rate=0.1),
        Col("bonus", "INTEGER", "int", null_rate=0.15),
        Col("lvl", "INTEGER", "jkey", null_rate=0.1),
    ]
    tables = {}
    edges = [Edge("emp", "mgr_id", "emp", "id", fk=self_fk)] * 3
    edges.append(Edge("emp", "dept", "emp", "dept"))
    edges.append(Edge("emp", "lvl", "emp", "lvl", op="<"))
    fks = []
    if self_fk:
        fks.append(("emp", "mgr_id", "emp", "id"))
    if with_dept:
        tables["dept"] = Table(
            "dept",
            [Col("dept_id", "INTEGER", "pk", null_rate=0), Col("dname", "VARCHAR", "grp"), Col("budget", "BIGINT", "big")],
            pk="dept_id", min_rows=2, max_rows=10)
        cols.append(Col("dept_id", "INTEGER", "fk", parent=("dept", "dept_id"), null_rate=0.15))
        fks.append(("emp", "dept_id", "dept", "dept_id"))
        edges += [Edge("emp", "dept_id", "dept", "dept_id", fk=True)] * 2
    if not self_fk:
        # Without the self FK, the manager reference is a plain (dangling-allowed) integer.
        cols[1] = Col("mgr_id", "INTEGER", "jkey", null_rate=0.2)
    tables["emp"] = Table("emp", cols, pk="id", min_rows=10, max_rows=60)
    # emp must be created after dept (it references it)
    ordered = {k: tables[k] for k in (["dept"] if with_dept else []) + ["emp"]}
    return Schema("self", "catalog" if fks else None, ordered, edges, fks, max_leaves=3, max_alias_per_table=3)


def make_generic(rng) -> Schema:
    n = rng.randint(2, 4)
    tables = {}
    for i in range(n):
        cols = [
            Col("k", "INTEGER", "jkey", null_rate=0.1),
            Col("j", "INTEGER", "jkey", null_rate=0.1),
            Col("s", "VARCHAR", "grp", null_rate=0.1),
            Col("x", "DECIMAL(10,2)", "dec", null_rate=0.1),
            Col("y", "BIGINT", "big", null_rate=0.1),
            Col("z", "INTEGER", "int", null_rate=0.1),
        ]
        rng.shuffle(cols)
        tables[f"t{i}"] = Table(f"t{i}", cols, min_rows=5, max_rows=35)
    names = list(tables)
    edges = []
    for a in names:
        for b in names:
            if a < b:
                edges += [Edge(a, "k", b, "k"), Edge(a, "k", b, "k"), Edge(a, "j", b, "k"), Edge(a, "s", b, "s")]
                edges.append(Edge(a, "k", b, "j", op=rng.choice(["<", "<=", "+1=", "<>"])))
                edges.append(Edge(a, "z", b, "k", op="between", c2b="j"))
            if a == b:
                edges.append(Edge(a, "k", b, "j"))
    return Schema("generic", None, tables, edges, [], max_leaves=3, max_alias_per_table=2)


# ----------------------------------------------------------------------------------------------
# Data generation


class DataGen:
    def __init__(self, rng: random.Random, schema: Schema, con):
        self.rng = rng
        self.s = schema
        self.con = con

    def q(self, sql: str):
        return self.con.execute(sql).fetchall()

    # --- values
    def value(self, t: Table, c: Col, fresh_pk: bool = True):
        r = self.rng
        if c.role == "pk":
            return self.new_pk(t)
        if c.role == "fk":
            if r.random() < c.null_rate:
                return None
            keys = self.keys(*c.parent)
            return r.choice(keys) if keys else None
        if r.random() < c.null_rate:
            return None
        if c.role == "jkey":
            return r.randint(0, 7)
        if c.role == "grp":
            return r.choice(GROUP_STRINGS)
        if c.role == "int":
            return r.randint(-5, 25) if r.random() < 0.9 else r.choice([0, 1000, -1000])
        if c.role == "big":
            return r.choice([r.randint(-50, 50), r.randint(-10**12, 10**12), 0, 10**12])
        if c.role == "dec":
            return Decimal(r.randint(-10000, 100000)) / 100 if r.random() < 0.9 else r.choice([Decimal("0.00"), Decimal("99999.99")])
        raise ValueError(c.role)

    def new_pk(self, t: Table) -> int:
        existing = set(self.keys(t.name, t.pk))
        if t.deleted_ids and self.rng.random() < 0.3:
            cand = [k for k in t.deleted_ids if k not in existing]
            if cand:
                k = self.rng.choice(cand)
                t.deleted_ids.remove(k)
                return k
        while t.next_id in existing:
            t.next_id += 1
        k = t.next_id
        t.next_id += 1
        return k

    def keys(self, table: str, col: str) -> List:
        return [r[0] for r in self.q(f"SELECT DISTINCT {col} FROM {table} WHERE {col} IS NOT NULL ORDER BY 1")]

    def referenced(self, table: str) -> set:
        out = set()
        for (child, ccol, pcol) in self.s.children_of(table):
            out |= set(self.keys(child, ccol))
        return out

    def count(self, table: str) -> int:
        return self.q(f"SELECT count(*) FROM {table}")[0][0]

    def rows(self, table: str) -> List[tuple]:
        t = self.s.tables[table]
        cols = ", ".join(c.name for c in t.cols)
        return self.q(f"SELECT {cols} FROM {table} ORDER BY ALL NULLS FIRST")

    def is_parent(self, table: str) -> bool:
        return bool(self.s.children_of(table))

    # --- statements
    def insert(self, t: Table, n: int) -> List[str]:
        r = self.rng
        cols = ", ".join(c.name for c in t.cols)
        if t.pk is None and r.random() < 0.25:
            existing = self.rows(t.name)
            if existing:
                # duplicates of existing rows
                rows = [r.choice(existing) for _ in range(n)]
                vals = ", ".join("(" + ", ".join(lit(v) for v in row) + ")" for row in rows)
                return [f"INSERT INTO {t.name} ({cols}) VALUES {vals}"]
        if t.pk is None and r.random() < 0.1:
            c = r.choice([c for c in t.cols if c.role in ("jkey", "grp")])
            v = self.value(t, c)
            cond = f"{c.name} IS NULL" if v is None else f"{c.name} = {lit(v)}"
            return [f"INSERT INTO {t.name} SELECT * FROM {t.name} WHERE {cond}"]
        self_ref = any(c.parent and c.parent[0] == t.name for c in t.cols)
        rows = []
        for _ in range(n):
            row = [self.value(t, c) for c in t.cols]
            rows.append(row)
            if t.pk:  # the fresh key must not be drawn again in this statement
                t.next_id = max(t.next_id, row[[c.name for c in t.cols].index(t.pk)] + 1)
        if t.pk is None and n >= 2 and r.random() < 0.3:
            rows.append(list(rows[0]))  # an in-statement duplicate
        if self_ref:  # a self reference may only point at rows that exist before the statement
            return [f"INSERT INTO {t.name} ({cols}) VALUES (" + ", ".join(lit(v) for v in row) + ")" for row in rows]
        vals = ", ".join("(" + ", ".join(lit(v) for v in row) + ")" for row in rows)
        return [f"INSERT INTO {t.name} ({cols}) VALUES {vals}"]

    def predicate(self, t: Table) -> str:
        """A random WHERE predicate over t, built from values that occur in t."""
        r = self.rng
        c = r.choice(t.cols)
        vals = [row[0] for row in self.q(f"SELECT DISTINCT {c.name} FROM {t.name} ORDER BY 1 NULLS FIRST")]
        if not vals:
            return "true"
        v = r.choice(vals)
        if v is None:
            return f"{c.name} IS NULL"
        choice = r.random()
        if c.role == "grp":
            if choice < 0.7:
                return f"{c.name} = {lit(v)}"
            return f"{c.name} LIKE {lit(r.choice(LIKE_PATTERNS))}"
        if choice < 0.5:
            return f"{c.name} = {lit(v)}"
        v2 = r.choice(vals)
        if v2 is None:
            v2 = v
        lo, hi = min(v, v2), max(v, v2)
        return f"{c.name} BETWEEN {lit(lo)} AND {lit(hi)}"

    def delete(self, t: Table) -> List[str]:
        r = self.rng
        if self.is_parent(t.name):
            refd = self.referenced(t.name)
            free = [k for k in self.keys(t.name, t.pk) if k not in refd]
            if not free:
                return []
            if r.random() < 0.1 and not refd:
                victims = free
                stmt = f"DELETE FROM {t.name}"
            else:
                victims = r.sample(free, r.randint(1, min(3, len(free))))
                stmt = f"DELETE FROM {t.name} WHERE {t.pk} IN ({', '.join(map(str, victims))})"
                if r.random() < 0.3:
                    stmt += f" AND {self.predicate(t)}"
            t.deleted_ids += victims
            return [stmt]
        if r.random() < 0.04:
            return [f"DELETE FROM {t.name}"]
        return [f"DELETE FROM {t.name} WHERE {self.predicate(t)}"]

    def set_clause(self, t: Table, c: Col) -> Optional[str]:
        r = self.rng
        if c.role == "pk":
            return None
        if c.role == "fk":
            keys = self.keys(*c.parent)
            v = r.choice(keys) if keys and r.random() > 0.15 else None
            return f"{c.name} = {lit(v)}"
        x = r.random()
        if x < 0.15:
            return f"{c.name} = NULL"
        if c.role == "int" and x < 0.6:
            return f"{c.name} = {c.name} + {r.randint(-3, 3)}"
        if c.role == "dec" and x < 0.6:
            return f"{c.name} = {c.name} + {Decimal(r.randint(-500, 500)) / 100}"
        if c.role == "big" and x < 0.5:
            return f"{c.name} = {c.name} - {r.randint(1, 9)}"
        if c.role == "grp" and x < 0.3:
            return f"{c.name} = upper({c.name})"
        return f"{c.name} = {lit(self.value(t, c))}"

    def update(self, t: Table) -> List[str]:
        r = self.rng
        if t.pk and self.is_parent(t.name) and r.random() < 0.2:
            # change the key of an unreferenced row
            refd = self.referenced(t.name)
            free = [k for k in self.keys(t.name, t.pk) if k not in refd]
            if not free:
                return []
            k = r.choice(free)
            nk = self.new_pk(t)
            t.deleted_ids.append(k)
            return [f"UPDATE {t.name} SET {t.pk} = {nk} WHERE {t.pk} = {k}"]
        settable = [c for c in t.cols if c.role != "pk"]
        cs = r.sample(settable, r.randint(1, min(2, len(settable))))
        sets = [s for s in (self.set_clause(t, c) for c in cs) if s]
        if not sets:
            return []
        where = "" if r.random() < 0.08 else f" WHERE {self.predicate(t)}"
        stmts = [f"UPDATE {t.name} SET {', '.join(sets)}{where}"]
        return stmts

    def reinsert(self, t: Table) -> List[str]:
        """Delete a row and put it back (identical, or with a changed non-key value)."""
        r = self.rng
        rows = self.rows(t.name)
        if not rows:
            return []
        if t.pk and self.is_parent(t.name):
            refd = self.referenced(t.name)
            pki = [c.name for c in t.cols].index(t.pk)
            rows = [row for row in rows if row[pki] not in refd]
            if not rows:
                return []
        row = list(r.choice(rows))
        conds = " AND ".join(f"{c.name} IS NULL" if v is None else f"{c.name} = {lit(v)}" for c, v in zip(t.cols, row))
        if r.random() < 0.4:
            i = r.randrange(len(t.cols))
            if t.cols[i].role not in ("pk",):
                row[i] = self.value(t, t.cols[i])
        cols = ", ".join(c.name for c in t.cols)
        # Deletes every copy of the row, re-inserts one.
        return [f"DELETE FROM {t.name} WHERE {conds}",
                f"INSERT INTO {t.name} ({cols}) VALUES ({', '.join(lit(v) for v in row)})"]

    def random_op(self, t: Table) -> List[str]:
        r = self.rng
        n = self.count(t.name)
        if n < t.min_rows:
            w_ins, w_del, w_upd, w_re = 6, 1, 2, 1
        elif n > t.max_rows:
            w_ins, w_del, w_upd, w_re = 1, 6, 2, 1
        else:
            w_ins, w_del, w_upd, w_re = 3, 2, 3, 1
        op = r.choices(["ins", "del", "upd", "re"], [w_ins, w_del, w_upd, w_re])[0]
        if op == "ins":
            return self.insert(t, r.randint(1, 6))
        if op == "del":
            return self.delete(t)
        if op == "upd":
            return self.update(t)
        return self.reinsert(t)

    def parents(self) -> List[Table]:
        return [t for t in self.s.tables.values() if self.is_parent(t.name) and t.name != "emp"]


# ----------------------------------------------------------------------------------------------
# View generation


@dataclass
class Leaf:
    alias: str
    table: Table


class ViewGen:
    def __init__(self, rng: random.Random, schema: Schema):
        self.rng = rng
        self.s = schema

    def join(self):
        r = self.rng
        s = self.s
        tables = list(s.tables.values())
        facts = [t for t in tables if t.is_fact]
        root = r.choice(facts) if facts and r.random() < 0.75 else r.choice(tables)
        target = r.choice([1] + list(range(2, s.max_leaves + 1)) * 3)
        leaves = [Leaf("", root)]
        conds: List[Tuple[int, str, Optional[str]]] = []  # (leaf index that introduces it, cond, using col)
        uses: Dict[str, int] = {root.name: 1}
        used_edges = set()
        while len(leaves) < target:
            cands = []
            for li, lf in enumerate(leaves):
                for ei, e in enumerate(s.edges):
                    for (here, there, fwd) in ((e.t1, e.t2, True), (e.t2, e.t1, False)):
                        if here != lf.table.name:
                            continue
                        if (li, ei, fwd) in used_edges:
                            continue
                        nt = s.tables[there]
                        lim = 1 if nt.is_fact else s.max_alias_per_table
                        if uses.get(there, 0) >= lim:
                            continue
                        if e.t1 == e.t2 and not fwd and e.op == "=" and e.c1 == e.c2:
                            continue
                        cands.append((li, ei, fwd))
            if not cands:
                break
            li, ei, fwd = r.choice(cands)
            used_edges.add((li, ei, fwd))
            e = s.edges[ei]
            nt = s.tables[e.t2 if fwd else e.t1]
            uses[nt.name] = uses.get(nt.name, 0) + 1
            leaves.append(Leaf("", nt))
            conds.append((len(leaves) - 1, li, ei, fwd))
        # aliases
        names_used = {}
        for lf in leaves:
            names_used[lf.table.name] = names_used.get(lf.table.name, 0) + 1
        counter = {}
        for i, lf in enumerate(leaves):
            tn = lf.table.name
            if names_used[tn] == 1 and r.random() < 0.3:
                lf.alias = tn
            else:
                counter[tn] = counter.get(tn, 0) + 1
                base = {"emp": "e", "dept": "dp"}.get(tn, tn)
                lf.alias = f"{base}_{counter[tn]}" if r.random() < 0.5 else f"{base}{chr(96 + counter[tn])}x"
        rendered = []
        for (ni, li, ei, fwd) in conds:
            e = s.edges[ei]
            a_from, a_to = leaves[li].alias, leaves[ni].alias
            # e.render(a1 of e.t1, a2 of e.t2)
            if fwd:
                cond = e.render(a_from, a_to, r)
            else:
                cond = e.render(a_to, a_from, r)
            using = None
            if e.equi and e.c1 == e.c2 and e.t1 != e.t2:
                # USING only when the column is unambiguous on the left side
                prev = [lf for lf in leaves[:ni] if any(c.name == e.c1 for c in lf.table.cols)]
                if len(prev) == 1 and prev[0] is leaves[li]:
                    using = e.c1
            rendered.append((ni, cond, using))
        # an extra (cycle) predicate between two joined leaves, sometimes
        extra = []
        if len(leaves) >= 2 and r.random() < 0.2:
            a, b = r.sample(range(len(leaves)), 2)
            for e in s.edges:
                if e.t1 == leaves[a].table.name and e.t2 == leaves[b].table.name and not (e.t1 == e.t2 and e.op == "=" and e.c1 == e.c2):
                    extra.append((max(a, b), e.render(leaves[a].alias, leaves[b].alias, r)))
                    break
        return leaves, rendered, extra

    def from_clause(self, leaves, rendered, extra) -> Tuple[str, List[str]]:
        """Returns the FROM text and the join predicates that go into WHERE."""
        r = self.rng
        style = r.choice(["join", "join", "comma", "mixed"])

        def ref(lf: Leaf) -> str:
            if lf.alias == lf.table.name:
                return lf.table.name
            return f"{lf.table.name} {lf.alias}" if r.random() < 0.5 else f"{lf.table.name} AS {lf.alias}"

        where: List[str] = []
        if style == "comma":
            where = [c for (_, c, _) in rendered] + [c for (_, c) in extra]
            return "FROM " + ", ".join(ref(lf) for lf in leaves), where
        text = "FROM " + ref(leaves[0])
        for (ni, cond, using) in rendered:
            kw = r.choice(["JOIN", "INNER JOIN"])
            ex = [c for (i, c) in extra if i == ni]
            if using and r.random() < 0.4 and not ex:
                text += f" {kw} {ref(leaves[ni])} USING ({using})"
                continue
            if style == "mixed" and r.random() < 0.5:
                # the join predicate in WHERE, the ON clause trivially true... keep ON with the
                # condition but move the extra predicates to WHERE
                where += ex
                ex = []
            text += f" {kw} {ref(leaves[ni])} ON {' AND '.join([cond] + ex)}"
        return text, where

    # --- expressions over the leaves
    def cols(self, leaves, roles=None):
        out = []
        for lf in leaves:
            for c in lf.table.cols:
                if roles is None or c.role in roles:
                    out.append((f"{lf.alias}.{c.name}", c))
        return out

    def atom_filter(self, leaves) -> str:
        r = self.rng
        e, c = r.choice(self.cols(leaves))
        x = r.random()
        if x < 0.08:
            return f"{e} IS NULL"
        if x < 0.16:
            return f"{e} IS NOT NULL"
        if c.role == "grp":
            y = r.random()
            if y < 0.3:
                return f"{e} {r.choice(['=', '<>', '<', '>='])} {lit(r.choice(GROUP_STRINGS))}"
            if y < 0.5:
                return f"{e} {r.choice(['LIKE', 'NOT LIKE'])} {lit(r.choice(LIKE_PATTERNS))}"
            if y < 0.7:
                return f"{e} {r.choice(['IN', 'NOT IN'])} ({', '.join(lit(v) for v in r.sample(GROUP_STRINGS, 3))})"
            if y < 0.8:
                return f"length({e}) {r.choice(['>', '<='])} {r.randint(0, 2)}"
            if y < 0.9:
                return f"upper({e}) = {lit(r.choice(['A', 'B', 'AB', 'IT''S']))}"
            return f"coalesce({e}, 'none') <> 'none'"
        if c.role == "dec":
            y = r.random()
            v = Decimal(r.randint(-2000, 60000)) / 100
            if y < 0.4:
                return f"{e} {r.choice(['<', '>', '<=', '>='])} {v}"
            if y < 0.6:
                return f"{e} BETWEEN {v} AND {v + Decimal(r.randint(0, 50000)) / 100}"
            if y < 0.8:
                return f"CAST({e} AS INTEGER) % 3 = {r.randint(0, 2)}"
            return f"round({e}) > {r.randint(-10, 400)}"
        # integer-like (pk, fk, jkey, int, big)
        if c.role == "big":
            v = r.choice([0, r.randint(-10**12, 10**12)])
        elif c.role in ("pk", "fk"):
            v = r.randint(0, 12)
        else:
            v = r.randint(-2, 10)
        y = r.random()
        if y < 0.3:
            return f"{e} {r.choice(['<', '>', '<=', '>=', '=', '<>'])} {v}"
        if y < 0.45:
            vs = sorted({r.randint(-2, 12) for _ in range(3)})
            return f"{e} {r.choice(['IN', 'IN', 'NOT IN'])} ({', '.join(map(str, vs))})"
        if y < 0.55:
            return f"{e} BETWEEN {v} AND {v + r.randint(0, 10)}"
        if y < 0.65:
            return f"{e} % 2 = {r.randint(0, 1)}"
        if y < 0.72:
            return f"abs({e}) < {abs(v) + 3}"
        if y < 0.8:
            return f"coalesce({e}, 0) > {v}"
        if y < 0.9:
            return f"CASE WHEN {e} > {v} THEN 1 ELSE 0 END = {r.randint(0, 1)}"
        others = self.cols(leaves, ("int", "jkey"))
        if others:
            e2, _ = r.choice(others)
            if c.role != "big":
                return f"{e} + {e2} > {r.randint(-2, 20)}"
        return f"{e} * 2 - 1 <> {v}"

    def filters(self, leaves) -> List[str]:
        r = self.rng
        out = []
        for _ in range(r.choice([0, 0, 1, 1, 1, 2, 3])):
            x = r.random()
            if x < 0.2:
                out.append(f"({self.atom_filter(leaves)} OR {self.atom_filter(leaves)})")
            elif x < 0.3:
                out.append(f"NOT ({self.atom_filter(leaves)})")
            else:
                out.append(self.atom_filter(leaves))
        return out

    def group_expr(self, leaves) -> str:
        r = self.rng
        keyish = self.cols(leaves, ("grp", "jkey", "fk", "pk", "int"))
        e, c = r.choice(keyish)
        x = r.random()
        if x < 0.55:
            return e
        if c.role == "grp":
            return r.choice([f"upper({e})", f"coalesce({e}, 'none')", f"{e} || '-'", f"{e} IS NULL", f"length({e})"])
        return r.choice([
            f"{e} % 3",
            f"CASE WHEN {e} > 5 THEN 'hi' WHEN {e} IS NULL THEN 'null' ELSE 'lo' END",
            f"{e} IS NULL",
            f"{e} + 1",
            f"CAST({e} AS VARCHAR)",
        ])

    def measure(self, leaves, roles=("int", "dec", "big")):
        r = self.rng
        ms = self.cols(leaves, roles)
        return r.choice(ms) if ms else None

    def aggregate(self, leaves) -> Tuple[str, bool]:
        """An aggregate (expression); returns (sql, has_avg_or_double)."""
        r = self.rng
        m = self.measure(leaves)
        x = r.random()
        if m is None or x < 0.15:
            return "COUNT(*)", False
        e, c = m
        if x < 0.3:
            ce, _ = r.choice(self.cols(leaves))
            return f"COUNT({ce})", False
        if x < 0.5:
            return f"SUM({e})", False
        if x < 0.58:
            ints = self.cols(leaves, ("int", "jkey"))
            if ints and c.role != "big":
                e2, _ = r.choice(ints)
                return f"SUM({e} * {e2})", False
            return f"SUM({e})", False
        if x < 0.64:
            return f"SUM(CASE WHEN {self.atom_filter(leaves)} THEN {e} ELSE 0 END)", False
        if x < 0.76:
            return f"AVG({e})", True
        if x < 0.8:
            return f"SUM({e}) + 1", False
        if x < 0.84:
            return f"SUM({e}) / COUNT(*)", True
        if x < 0.87:
            return "COUNT(*) * 2", False
        if x < 0.9:
            m2 = self.measure(leaves, (c.role,))
            return f"SUM({e}) - SUM({m2[0]})", False
        if x < 0.93:
            return f"coalesce(SUM({e}), 0)", False
        if x < 0.96:
            return f"AVG({e}) * 2", True
        return f"COUNT({e}) + SUM({e})", False

    def bag_expr(self, leaves) -> str:
        r = self.rng
        e, c = r.choice(self.cols(leaves))
        x = r.random()
        if x < 0.55:
            return e
        if c.role in ("int", "jkey", "fk", "pk"):
            others = self.cols(leaves, ("int", "jkey"))
            e2 = r.choice(others)[0] if others else "1"
            return r.choice([f"{e} + {e2}", f"{e} * 2", f"CASE WHEN {e} > 3 THEN 'x' ELSE 'y' END", f"abs({e})", f"CAST({e} AS VARCHAR)"])
        if c.role == "dec":
            return r.choice([f"{e} * 2", f"{e} + 0.5", f"CAST({e} AS INTEGER)", f"round({e}, 1)"])
        if c.role == "big":
            return r.choice([f"{e} - 1", f"{e} % 1000"])
        return r.choice([f"upper({e})", f"{e} || '!'", f"coalesce({e}, '?')", "'const'", "42"])

    def view(self) -> Tuple[str, bool]:
        """Returns (sql, has_float) for a random supported view query."""
        r = self.rng
        leaves, rendered, extra = self.join()
        from_text, join_where = self.from_clause(leaves, rendered, extra)
        where = join_where + self.filters(leaves)
        r.shuffle(where)
        shape = r.choices(["grouped", "global", "bag"], [5, 1.5, 3.5])[0]
        has_float = False
        items: List[str] = []
        group_by = ""
        if shape == "bag":
            n = r.randint(1, 5)
            exprs = [self.bag_expr(leaves) for _ in range(n)]
            if r.random() < 0.15:
                exprs.append(exprs[0])
            items = exprs
        else:
            aggs = []
            for _ in range(r.randint(1, 4)):
                a, f = self.aggregate(leaves)
                aggs.append(a)
                has_float |= f
            if shape == "grouped":
                keys = []
                for _ in range(r.randint(1, 3)):
                    k = self.group_expr(leaves)
                    if k not in keys:
                        keys.append(k)
                selected = list(keys)
                hidden = []
                if len(keys) > 1 and r.random() < 0.1:
                    hidden = [selected.pop()]
                items = selected + aggs
                r.shuffle(items)
                if r.random() < 0.2 and not hidden:
                    group_by = " GROUP BY " + ", ".join(str(items.index(k) + 1) for k in keys)
                else:
                    gk = keys[:]
                    r.shuffle(gk)
                    group_by = " GROUP BY " + ", ".join(gk)
            else:
                items = aggs
        sel = []
        names = set()
        for i, it in enumerate(items):
            simple = "." in it and it.replace(".", "").replace("_", "").isalnum()
            colname = it.split(".")[-1] if simple else None
            if simple and colname not in names and r.random() < 0.4:
                names.add(colname)
                sel.append(it)
            else:
                sel.append(f"{it} AS c{i}")
                names.add(f"c{i}")
        sql = "SELECT " + ", ".join(sel) + " " + from_text
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += group_by
        return sql, has_float


# ----------------------------------------------------------------------------------------------
# The runner


class Failure(Exception):
    pass


@dataclass
class ViewDef:
    name: str
    sql: str
    has_float: bool
    n_leaves: int
    copies: List[Tuple[str, bool]]  # (name, fk_pruning)


class Runner:
    def __init__(self, args):
        self.args = args
        self.ext = os.path.abspath(args.extension)
        self.rng = random.Random(args.seed)
        self.passed = 0
        self.failed = 0
        self.fk_pruned_refreshes = 0
        self.fk_scenario_refreshes = 0
        self.refreshes = 0
        self.float_noise = []
        self.noise_max = (0.0, None, None)  # the largest relative float difference accepted  # (scenario, view, detail) where only float noise differed
        self.unsupported = []
        self.kinds_seen: Dict[str, int] = {}
        self.tmpdirs: List[str] = []
        self.loaded = self.private_copy()

    # --- logging of the replay script
    def log(self, sql: str):
        self.script.append(sql.rstrip(";") + ";")

    def comment(self, text: str):
        self.script.append("-- " + text)

    def private_copy(self):
        """Loads a private copy of the extension: a rebuild that rewrites the file in place
        while this process has it mapped would otherwise crash the run (SIGBUS)."""
        d = tempfile.mkdtemp(prefix="openivm_diff_")
        path = os.path.join(d, "openivm.duckdb_extension")
        shutil.copyfile(self.ext, path)
        self.tmpdirs.append(d)
        return path

    def connect(self):
        con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": True})
        try:
            con.execute(f"LOAD '{self.loaded}'")
        except Exception:
            time.sleep(1.0)  # the extension may be being rebuilt: copy it again and retry once
            self.loaded = self.private_copy()
            con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": True})
            con.execute(f"LOAD '{self.loaded}'")
        return con

    def probe_rely(self) -> bool:
        con = self.connect()
        con.execute("CREATE TABLE p(id INTEGER PRIMARY KEY)")
        con.execute("CREATE TABLE c(pid INTEGER)")
        try:
            con.execute("CALL openivm_declare_rely_fk('c', 'pid', 'p', 'id')").fetchall()
            return True
        except Exception as e:
            self.rely_error = str(e).splitlines()[0]
            return False
        finally:
            con.close()

    def fail(self, what: str, detail: str, view: Optional[ViewDef] = None):
        self.failed += 1
        out = []
        out.append("=" * 100)
        out.append(f"FAILURE: {what}")
        out.append(f"seed={self.args.seed} scenario={self.scenario_no} kind={self.schema.kind} "
                   f"fk_mode={self.schema.fk_mode} batch={self.batch_no}")
        if view is not None:
            out.append(f"view {view.name}: {view.sql}")
        out.append("-" * 40 + " detail")
        out.append(detail)
        out.append("-" * 40 + " replay script (DuckDB 1.5.5 CLI, -unsigned)")
        out.append(f"LOAD '{self.ext}';")
        out += self.script
        out.append("=" * 100)
        text = "\n".join(out)
        print(text, flush=True)
        if self.args.repro_dir:
            os.makedirs(self.args.repro_dir, exist_ok=True)
            p = os.path.join(self.args.repro_dir, f"seed{self.args.seed}_s{self.scenario_no}_b{self.batch_no}.sql")
            with open(p, "w") as fh:
                fh.write("-- " + what + "\n" + "\n".join("-- " + l for l in detail.splitlines()) + "\n")
                fh.write(f"LOAD '{self.ext}';\n" + "\n".join(self.script) + "\n")
        if not self.args.continue_on_failure:
            raise Failure(what)

    # --- scenario setup
    def make_schema(self) -> Schema:
        r = self.rng
        kinds = ["star_catalog", "star_rely", "chain", "self", "generic"]
        weights = [3, 2.5 if self.args.rely else 0, 2, 1.5, 2]
        kind = r.choices(kinds, weights)[0]
        if kind == "star_catalog":
            s = make_star(r, "catalog")
        elif kind == "star_rely":
            s = make_star(r, "rely")
        elif kind == "chain":
            s = make_chain(r, "rely" if (self.args.rely and r.random() < 0.35) else "catalog")
        elif kind == "self":
            s = make_self(r)
        else:
            s = make_generic(r)
        self.kinds_seen[kind] = self.kinds_seen.get(kind, 0) + 1
        return s

    def exec_dml(self, sql: str) -> bool:
        try:
            self.con.execute(sql)
            self.log(sql)
            return True
        except duckdb.ConstraintException as e:
            self.comment(f"skipped (constraint error: {str(e).splitlines()[0][:120]}): {sql}")
            return False

    def create_view(self, name: str):
        for _ in range(20):
            sql, has_float = self.vg.view()
            copies = [(name, True)]
            if self.schema.fk_mode:
                copies.append((name + "_nofk", False))
            v = ViewDef(name, sql, has_float, 0, copies)
            ok = True
            for (cn, _) in copies:
                stmt = f"CALL openivm_create({quote_str(cn)}, {quote_str(sql)})"
                try:
                    self.con.execute(stmt).fetchall()
                    self.log(stmt)
                except Exception as e:
                    msg = str(e).splitlines()[0]
                    self.comment(f"failed: {stmt}")
                    self.fail("openivm_create failed", f"{msg}\nquery: {sql}", v)
                    ok = False
                    break
            if not ok:
                continue
            # Schema check: the view's column types equal the query's.
            vt = [r[1] for r in self.con.execute(f"DESCRIBE {name}").fetchall()]
            qt = [r[1] for r in self.con.execute(f"DESCRIBE {sql}").fetchall()]
            if vt != qt:
                self.fail("view column types differ from the query's", f"view: {vt}\nquery: {qt}", v)
            else:
                self.passed += 1
            return v
        return None

    def check(self, v: ViewDef, copy: str) -> bool:
        con = self.con
        q1 = f"FROM {copy} EXCEPT ALL ({v.sql})"
        q2 = f"({v.sql}) EXCEPT ALL FROM {copy}"
        extra = con.execute(f"SELECT count(*) FROM ({q1})").fetchone()[0]
        missing = con.execute(f"SELECT count(*) FROM ({q2})").fetchone()[0]
        if extra == 0 and missing == 0:
            return True
        if v.has_float and self.float_equal(copy, v.sql):
            self.float_noise.append((self.scenario_no, self.batch_no, copy, v.sql))
            if self.args.verbose:
                print(f"  float noise only in {copy}")
            return True
        detail = [f"{copy}: {extra} row(s) in the view but not in the recompute, {missing} row(s) missing"]
        detail.append("rows in the view, not in the recompute (FROM v EXCEPT ALL query):")
        detail += ["  " + repr(r) for r in con.execute(q1 + " LIMIT 30").fetchall()]
        detail.append("rows in the recompute, not in the view (query EXCEPT ALL FROM v):")
        detail += ["  " + repr(r) for r in con.execute(f"SELECT * FROM ({q2}) LIMIT 30").fetchall()]
        self.fail("view differs from recompute", "\n".join(detail), v)
        return False

    def float_equal(self, copy: str, sql: str) -> bool:
        a = self.con.execute(f"FROM {copy}").fetchall()
        b = self.con.execute(sql).fetchall()
        if len(a) != len(b):
            return False

        def split(row):
            exact = tuple((v is None, v) if not isinstance(v, float) else (True, None) for v in row)
            fl = tuple(v if isinstance(v, float) else None for v in row)
            return repr(exact), fl

        ga, gb = {}, {}
        for row in a:
            k, f = split(row)
            ga.setdefault(k, []).append(f)
        for row in b:
            k, f = split(row)
            gb.setdefault(k, []).append(f)
        if ga.keys() != gb.keys():
            return False
        for k in ga:
            la = sorted(ga[k], key=lambda t: tuple(-math.inf if x is None else x for x in t))
            lb = sorted(gb[k], key=lambda t: tuple(-math.inf if x is None else x for x in t))
            if len(la) != len(lb):
                return False
            for ta, tb in zip(la, lb):
                for x, y in zip(ta, tb):
                    if (x is None) != (y is None):
                        return False
                    if x is not None and not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                        return False
                    if x is not None and x != y:
                        rel = abs(x - y) / max(abs(x), abs(y))
                        if rel >= self.noise_max[0]:
                            self.noise_max = (rel, x, y)
        return True

    def refresh_and_check(self, v: ViewDef):
        for (copy, pruning) in v.copies:
            stmt = f"CALL refresh({quote_str(copy)})" if pruning else f"CALL refresh({quote_str(copy)}, fk_pruning := false)"
            explain = None
            if pruning and self.rng.random() < 0.1:
                explain = self.con.execute(
                    f"SELECT count(*), count(*) FILTER (status = 'fk_pruned'), count(*) FILTER (status = 'empty_skipped'), "
                    f"count(*) FILTER (status = 'run') FROM openivm_explain({quote_str(copy)})").fetchone()
            try:
                res = self.con.execute(stmt).fetchall()
                self.log(stmt)
            except Exception as e:
                self.comment(f"failed: {stmt}")
                self.fail("refresh failed", str(e).splitlines()[0], v)
                continue
            self.refreshes += 1
            (_, total, pruned, empty, run, _delta, _ms) = res[0]
            if total != pruned + empty + run:
                self.fail("refresh term counts do not add up", repr(res[0]), v)
                continue
            if not pruning and pruned:
                self.fail("fk_pruning := false still pruned terms", repr(res[0]), v)
                continue
            if not self.schema.fks and pruned:
                self.fail("terms pruned in a schema without foreign keys", repr(res[0]), v)
                continue
            if explain is not None and tuple(explain) != (total, pruned, empty, run):
                self.fail("openivm_explain disagrees with the refresh that follows it",
                          f"explain (total, fk_pruned, empty_skipped, run) = {explain}, refresh = {res[0]}", v)
                continue
            if pruning and self.schema.fk_mode:
                self.fk_scenario_refreshes += 1
                if pruned > 0:
                    self.fk_pruned_refreshes += 1
            if self.check(v, copy):
                self.passed += 1
            if self.args.verbose:
                print(f"    {copy}: total={total} pruned={pruned} empty={empty} run={run} delta={_delta}")

    def check_fk_promise(self):
        """Our own generator's promise: every non-null FK value references an existing key."""
        for (child, ccol, parent, pcol) in self.schema.fks:
            n = self.con.execute(
                f"SELECT count(*) FROM {child} WHERE {ccol} IS NOT NULL AND {ccol} NOT IN (SELECT {pcol} FROM {parent})").fetchone()[0]
            if n:
                raise RuntimeError(f"generator bug: {child}.{ccol} has {n} dangling references to {parent}")

    def batch(self, dg: DataGen):
        r = self.rng
        s = self.schema
        parents = dg.parents()
        tables = list(s.tables.values())
        kinds = ["empty", "mixed", "single", "wipe"]
        weights = [0.6, 5, 2, 0.25]
        if parents:
            kinds += ["dim_insert", "dim_insert_fact", "dim_reinsert"]
            weights += [2, 1.5, 0.6]
        kind = r.choices(kinds, weights)[0]
        stmts: List[str] = []
        self.comment(f"batch {self.batch_no} ({kind})")
        if kind == "empty":
            return kind
        if kind == "dim_insert":
            for t in r.sample(parents, r.randint(1, len(parents))):
                for st in dg.insert(t, r.randint(1, 3)):
                    self.exec_dml(st)
        elif kind == "dim_insert_fact":
            for t in r.sample(parents, r.randint(1, len(parents))):
                for st in dg.insert(t, r.randint(1, 3)):
                    self.exec_dml(st)
            children = [t for t in tables if t.name not in {p.name for p in parents}] or tables
            for _ in range(r.randint(1, 2)):
                t = r.choice(children)
                for st in dg.insert(t, r.randint(1, 5)):
                    self.exec_dml(st)
        elif kind == "dim_reinsert":
            t = r.choice(parents)
            for st in dg.reinsert(t):
                self.exec_dml(st)
        elif kind == "wipe":
            # empty the leaf-most tables; parents only when nothing references them
            order = [t for t in tables if not dg.is_parent(t.name)] + [t for t in tables if dg.is_parent(t.name)]
            for t in order:
                if r.random() < 0.6:
                    if dg.is_parent(t.name):
                        if t.name == "emp":
                            self.exec_dml(f"UPDATE emp SET mgr_id = NULL")
                            self.exec_dml(f"DELETE FROM emp")
                        elif not dg.referenced(t.name):
                            self.exec_dml(f"DELETE FROM {t.name}")
                    else:
                        self.exec_dml(f"DELETE FROM {t.name}")
        else:
            pool = [r.choice(tables)] if kind == "single" else tables
            for _ in range(r.randint(1, 6)):
                t = r.choice(pool)
                for st in dg.random_op(t):
                    self.exec_dml(st)
        return kind

    def scenario(self, n_batches: int):
        r = self.rng
        self.script: List[str] = []
        self.schema = s = self.make_schema()
        self.batch_no = 0
        self.con = self.connect()
        self.comment(f"seed {self.args.seed}, scenario {self.scenario_no}: {s.kind} (fk_mode={s.fk_mode})")
        for t in s.tables.values():
            ddl = table_ddl(t, with_fk=(s.fk_mode == "catalog"))
            self.con.execute(ddl)
            self.log(ddl)
        if s.fk_mode == "rely":
            for (child, ccol, parent, pcol) in s.fks:
                stmt = f"CALL openivm_declare_rely_fk('{child}', '{ccol}', '{parent}', '{pcol}')"
                self.con.execute(stmt).fetchall()
                self.log(stmt)
        dg = DataGen(r, s, self.con)
        self.vg = ViewGen(r, s)
        nviews = self.args.views_per_schema or r.randint(1, 3)
        views: List[ViewDef] = []
        early = r.random() < 0.3  # create the views over empty tables
        if early:
            for i in range(nviews):
                v = self.create_view(f"v{i}")
                if v:
                    views.append(v)
        self.comment("initial data")
        for t in s.tables.values():  # in dependency order (parents first)
            target = r.randint(t.min_rows, (t.min_rows + t.max_rows) // 2)
            while dg.count(t.name) < target:
                for st in dg.insert(t, min(8, target - dg.count(t.name)) if t.name != "emp" else 1):
                    self.exec_dml(st)
        if not early:
            for i in range(nviews):
                v = self.create_view(f"v{i}")
                if v:
                    views.append(v)
        if not views:
            return
        # initial check
        for v in views:
            for (copy, _) in v.copies:
                if self.check(v, copy):
                    self.passed += 1
        lazy = r.random() < 0.4
        next_view = nviews
        for b in range(1, n_batches + 1):
            self.batch_no = b
            kind = self.batch(dg)
            if s.fks:
                self.check_fk_promise()
            if self.args.verbose:
                print(f"  scenario {self.scenario_no} batch {b}: {kind}")
            last = b == n_batches
            for v in views:
                if last or not lazy or r.random() < 0.35:
                    self.refresh_and_check(v)
            # now and then drop a view and create another one in its place
            if not last and r.random() < 0.03 and views:
                v = r.choice(views)
                for (copy, _) in v.copies:
                    stmt = f"CALL openivm_drop({quote_str(copy)})"
                    try:
                        self.con.execute(stmt).fetchall()
                        self.log(stmt)
                    except Exception as e:
                        self.fail("openivm_drop failed", str(e).splitlines()[0], v)
                views.remove(v)
                nv = self.create_view(f"v{next_view}")
                next_view += 1
                if nv:
                    views.append(nv)
                    for (copy, _) in nv.copies:
                        if self.check(nv, copy):
                            self.passed += 1
        self.con.close()

    def run(self) -> int:
        t0 = time.time()
        if self.args.rely:
            if not self.probe_rely():
                print(f"RELY: openivm_declare_rely_fk is not available ({self.rely_error}); "
                      f"RELY scenarios are skipped (pass --no-rely to run without them)", flush=True)
                self.failed += 1
                self.args.rely = False
        remaining = self.args.batches
        self.scenario_no = 0
        try:
            while remaining > 0:
                self.scenario_no += 1
                n = min(remaining, self.rng.randint(20, 40))
                self.schema = None
                self.scenario(n)
                if self.args.verbose:
                    print(f"scenario {self.scenario_no} ({self.schema.kind}) done: {self.passed} passed", flush=True)
                remaining -= n
        except Failure:
            pass
        dt = time.time() - t0
        for d in self.tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        print(f"scenarios: {self.scenario_no} {dict(sorted(self.kinds_seen.items()))}")
        print(f"refreshes: {self.refreshes}; in FK/RELY scenarios (pruning on): {self.fk_scenario_refreshes}, "
              f"of which with terms_fk_pruned > 0: {self.fk_pruned_refreshes}")
        if self.float_noise:
            print(f"FINDING: {len(self.float_noise)} check(s) differed only by floating point noise "
                  f"(AVG or division); they were accepted with a relative tolerance of 1e-9. First: "
                  f"scenario {self.float_noise[0][0]} batch {self.float_noise[0][1]} view {self.float_noise[0][2]}: "
                  f"{self.float_noise[0][3]}; largest relative difference {self.noise_max[0]:.3g} "
                  f"(view {self.noise_max[1]!r} vs recompute {self.noise_max[2]!r})")
        if self.failed == 0 and self.fk_scenario_refreshes >= 100 and self.fk_pruned_refreshes == 0:
            print("FAILURE: foreign-key pruning never happened in FK/RELY scenarios")
            self.failed += 1
        print(f"time: {dt:.1f}s")
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--extension", required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batches", type=int, default=500)
    ap.add_argument("--views-per-schema", type=int, default=None)
    ap.add_argument("--rely", dest="rely", action="store_true", default=True,
                    help="generate star/chain scenarios with RELY foreign keys (default)")
    ap.add_argument("--no-rely", dest="rely", action="store_false")
    ap.add_argument("--stop-on-failure", dest="continue_on_failure", action="store_false", default=False,
                    help="stop at the first failure (default)")
    ap.add_argument("--continue-on-failure", dest="continue_on_failure", action="store_true")
    ap.add_argument("--repro-dir", default=None, help="also write each failure's replay script here")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    sys.exit(Runner(args).run())


if __name__ == "__main__":
    main()
