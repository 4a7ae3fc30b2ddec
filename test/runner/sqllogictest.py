#!/usr/bin/env python3
"""sqllogictest runner for the openivm DuckDB extension.

Runs DuckDB-dialect ``.test`` files (see duckdb/test/sqlite) against the
``duckdb`` Python package with the extension loaded, one fresh database per
file, each file in its own subprocess (so a crash or a hang in the extension
fails that file only).

Usage:
    python test/runner/sqllogictest.py --extension build/release/openivm.duckdb_extension \
        [--verbose] [--summary-only] [--fail-fast] [--jobs N] [paths or globs ...]

``--extension none`` runs without loading any extension (runner self-test).
``restart`` opens a new database instance: DuckDB 2's Python client hands out an instance again
while the extension's own connection still holds it, so the runner reopens until it gets a new one.
Default paths: ``test/sql/**/*.test`` (relative to the project root).
Set ``SLT_FAIL_FAST=1`` (or pass ``--fail-fast``) to stop a file at its first
failed record.  The last output line is always ``N passed, M failed`` (counted
in records); the exit code is 0 iff M == 0.

Supported dialect: statement ok|error|maybe [connection], query <types>
[nosort|rowsort|sort|valuesort|<connection>] [label], ----, <REGEX>: / <!REGEX>:,
"N values hashing to <md5>", loop / foreach / concurrentloop /
concurrentforeach (run sequentially) ... endloop with ${var} substitution,
skipif / onlyif <system> (duckdb, or duckdb<version> such as duckdb1.5 or duckdb2 for one
host's records), mode skip|unskip (other modes: output_result prints
results), halt, require, require-env, load [path [readonly]], restart,
reconnect, sleep, set ignore_error_messages|always_fail_error_messages,
hash-threshold (ignored), __TEST_DIR__ / __WORKING_DIRECTORY__ /
__BUILD_DIRECTORY__ keywords.

Values are rendered like DuckDB's runner (CAST(value AS VARCHAR)): NULL,
(empty), true/false, decimals with their scale, FLOAT with float32 shortest
digits, nested types with DuckDB's quoting.  Values are fetched through
Python, so a few types are lossy (INTERVAL months become 30 days and hours are
folded into days, TIMESTAMP_NS is truncated to microseconds): cast those to
VARCHAR in the test query when exact text matters.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import decimal
import faulthandler
import gc
import glob
import hashlib
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

SCRIPT_PATH = os.path.abspath(__file__)
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(SCRIPT_PATH)))
DEFAULT_EXTENSION = os.path.join("build", "release", "openivm.duckdb_extension")
DEFAULT_GLOB = os.path.join("test", "sql", "**", "*.test")
DEFAULT_FILE_TIMEOUT = 300.0
DEFAULT_RESTART_TIMEOUT = 20.0
RELEASE_TIMEOUT = 10.0
INSTANCE_MARKER = "slt_open_instance"
FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12
MAX_SHOWN_LINES = 100
EXTENSION_NAME = "openivm"


# ---------------------------------------------------------------------------
# value rendering (mimics DuckDB's CAST(x AS VARCHAR) + sqllogictest rules)
# ---------------------------------------------------------------------------

# characters that make a string child of a LIST/STRUCT/MAP get quoted when the
# container is cast to VARCHAR (measured against duckdb 1.5.5)
_NESTED_SPECIAL = frozenset("\"'(),:=[]{}")
_C_SPACE = frozenset(" \t\n\v\f\r")
_NESTED_IDS = frozenset(("list", "array", "struct", "map", "union"))
_INT_IDS = frozenset(
    (
        "tinyint", "smallint", "integer", "bigint", "hugeint",
        "utinyint", "usmallint", "uinteger", "ubigint", "uhugeint", "bignum",
    )
)
_FLOAT_IDS = frozenset(("float", "double"))


def _type_id(t):
    if t is None:
        return None
    try:
        return t.id
    except Exception:
        return None


def _type_children(t):
    try:
        return list(t.children)
    except Exception:
        return []


def _child_type(t, name=None, index=0):
    children = [c for c in _type_children(t) if not isinstance(c[1], int)]
    if name is not None:
        for cname, ctype in children:
            if cname == name:
                return ctype
    if 0 <= index < len(children):
        return children[index][1]
    return None


def _column_kind(t):
    tid = _type_id(t)
    if tid in _INT_IDS:
        return "int"
    if tid == "decimal":
        return "decimal"
    if tid in _FLOAT_IDS:
        return "float"
    if tid == "boolean":
        return "bool"
    return None


def _float32_str(v):
    if math.isnan(v) or math.isinf(v):
        return repr(v)
    try:
        for digits in range(1, 10):
            s = "%.*g" % (digits, v)
            if struct.unpack("<f", struct.pack("<f", float(s)))[0] == v:
                return repr(float(s))
    except (OverflowError, struct.error):
        pass
    return repr(v)


def _time_str(h, m, s, us):
    out = "%02d:%02d:%02d" % (h, m, s)
    if us:
        out += "." + ("%06d" % us).rstrip("0")
    return out


def _offset_str(off):
    total = int(round(off.total_seconds()))
    sign = "+" if total >= 0 else "-"
    total = abs(total)
    hh, rem = divmod(total, 3600)
    mm, ss = divmod(rem, 60)
    out = "%s%02d" % (sign, hh)
    if mm or ss:
        out += ":%02d" % mm
    if ss:
        out += ":%02d" % ss
    return out


def _interval_str(td):
    total_us = (td.days * 86400 + td.seconds) * 1000000 + td.microseconds
    if total_us == 0:
        return "00:00:00"
    sign = "-" if total_us < 0 else ""
    total_us = abs(total_us)
    days, rem = divmod(total_us, 86400 * 1000000)
    parts = []
    if days:
        parts.append("%s%d day%s" % (sign, days, "" if days == 1 else "s"))
    if rem:
        secs, us = divmod(rem, 1000000)
        h, secs = divmod(secs, 3600)
        m, s = divmod(secs, 60)
        parts.append(sign + _time_str(h, m, s, us))
    return " ".join(parts)


def _blob_str(b):
    out = []
    for byte in bytes(b):
        if byte < 32 or byte >= 127 or byte in (34, 39, 92):
            out.append("\\x%02X" % byte)
        else:
            out.append(chr(byte))
    return "".join(out)


def _nested_quote(s):
    if s == "":
        return "''"
    needs = (
        s[0] in _C_SPACE
        or (len(s) >= 2 and s[-1] in _C_SPACE)
        or s.lower() == "null"
        or any(c in _NESTED_SPECIAL for c in s)
    )
    if not needs:
        return s
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _struct_key(name):
    return "'" + str(name).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _is_nested(v, t):
    tid = _type_id(t)
    if tid is not None:
        return tid in _NESTED_IDS
    return isinstance(v, (list, tuple, dict))


def _nested_child(v, t):
    if v is None:
        return "NULL"
    if _is_nested(v, t):
        return to_varchar(v, t)
    return _nested_quote(to_varchar(v, t))


def to_varchar(v, t=None):
    """DuckDB-like VARCHAR rendering of a non-NULL fetched value of type t."""
    tid = _type_id(t)
    if tid == "union":
        t, tid = None, None
    if isinstance(v, (list, tuple)) and tid in ("list", "array", None) and not (
        tid is None and isinstance(v, tuple)
    ):
        child = _child_type(t)
        return "[" + ", ".join(_nested_child(e, child) for e in v) + "]"
    if tid == "map" and isinstance(v, dict):
        kt, vt = _child_type(t, "key", 0), _child_type(t, "value", 1)
        return "{" + ", ".join(
            _nested_child(k, kt) + "=" + _nested_child(val, vt) for k, val in v.items()
        ) + "}"
    if isinstance(v, tuple):
        # unnamed struct (ROW): (a, b)
        parts = [_nested_child(e, _child_type(t, index=i)) for i, e in enumerate(v)]
        return "(" + ", ".join(parts) + ")"
    if isinstance(v, dict):
        parts = []
        for i, (k, val) in enumerate(v.items()):
            parts.append(_struct_key(k) + ": " + _nested_child(val, _child_type(t, k, i)))
        return "{" + ", ".join(parts) + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if tid == "float":
            return _float32_str(v)
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, decimal.Decimal):
        s = format(v, "f")
        if v == 0 and s.startswith("-"):
            s = s[1:]
        return s
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return _blob_str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            if v == datetime.datetime.max:
                return "infinity"
            if v == datetime.datetime.min:
                return "-infinity"
        out = "%s %s" % (v.date().isoformat(), _time_str(v.hour, v.minute, v.second, v.microsecond))
        off = v.utcoffset()
        if off is not None:
            out += _offset_str(off)
        return out
    if isinstance(v, datetime.date):
        if v == datetime.date.max:
            return "infinity"
        if v == datetime.date.min:
            return "-infinity"
        return v.isoformat()
    if isinstance(v, datetime.time):
        out = _time_str(v.hour, v.minute, v.second, v.microsecond)
        off = v.utcoffset()
        if off is not None:
            out += _offset_str(off)
        return out
    if isinstance(v, datetime.timedelta):
        return _interval_str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    return str(v)


def render_value(v, t=None):
    """Top-level sqllogictest rendering of one result value."""
    if v is None:
        return "NULL"
    s = to_varchar(v, t)
    if s == "":
        return "(empty)"
    return s.replace("\0", "\\0")


def _install_pytz_shim():
    """duckdb needs pytz to fetch TIMESTAMPTZ; emulate the tiny part it uses."""
    try:
        import pytz  # noqa: F401
        return
    except ImportError:
        pass
    import types
    import zoneinfo

    class _Zone(zoneinfo.ZoneInfo):
        def localize(self, dt, is_dst=False):
            return dt.replace(tzinfo=self)

        def normalize(self, dt):
            return dt.astimezone(self)

        @property
        def zone(self):
            return self.key

    class _FixedUTC(datetime.tzinfo):
        zone = "UTC"

        def utcoffset(self, dt):
            return datetime.timedelta(0)

        def dst(self, dt):
            return datetime.timedelta(0)

        def tzname(self, dt):
            return "UTC"

        def localize(self, dt, is_dst=False):
            return dt.replace(tzinfo=self)

        def normalize(self, dt):
            return dt.astimezone(self)

    fixed_utc = _FixedUTC()

    def timezone(name):
        try:
            return _Zone(name)
        except Exception:
            if str(name).upper() in ("UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "UCT", "ZULU"):
                return fixed_utc
            raise

    mod = types.ModuleType("pytz")
    mod.timezone = timezone
    mod.utc = mod.UTC = timezone("UTC")
    sys.modules["pytz"] = mod


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------


class ParseError(Exception):
    def __init__(self, line, msg):
        super().__init__(msg)
        self.line = line
        self.msg = msg


class Record:
    kind = "record"

    def __init__(self, line, header):
        self.line = line
        self.header = header


class Statement(Record):
    kind = "statement"

    def __init__(self, line, header, expect, sql, expected_error, conn):
        super().__init__(line, header)
        self.expect = expect
        self.sql = sql
        self.expected_error = expected_error
        self.conn = conn


class Query(Record):
    kind = "query"

    def __init__(self, line, header, types, sort, label, conn, sql, expected, has_sep):
        super().__init__(line, header)
        self.types = types
        self.sort = sort
        self.label = label
        self.conn = conn
        self.sql = sql
        self.expected = expected
        self.has_sep = has_sep


class Loop(Record):
    kind = "loop"

    def __init__(self, line, header, names, iterations):
        super().__init__(line, header)
        self.names = names
        self.iterations = iterations
        self.body = []


class Command(Record):
    """restart / reconnect / load / sleep / mode"""

    def __init__(self, line, header, kind, **kw):
        super().__init__(line, header)
        self.kind = kind
        self.__dict__.update(kw)


SORT_STYLES = {"nosort": "none", "rowsort": "row", "sort": "row", "valuesort": "value"}
SINGLE_LINE = frozenset(
    (
        "hash-threshold", "halt", "mode", "set", "loop", "foreach", "concurrentloop",
        "concurrentforeach", "endloop", "require", "require-env", "load", "restart",
        "reconnect", "sleep",
    )
)
KNOWN_COMMANDS = SINGLE_LINE | {"skipif", "onlyif", "statement", "query"}
HASH_RE = re.compile(r"^[0-9]+ values hashing to [0-9a-z]{32}$")

_FOREACH_GROUPS = {
    "<signed>": ["tinyint", "smallint", "integer", "bigint", "hugeint"],
    "<unsigned>": ["utinyint", "usmallint", "uinteger", "ubigint", "uhugeint"],
}
_FOREACH_GROUPS["<integral>"] = _FOREACH_GROUPS["<signed>"] + _FOREACH_GROUPS["<unsigned>"]
_FOREACH_GROUPS["<numeric>"] = _FOREACH_GROUPS["<integral>"] + ["float", "double"]
_FOREACH_GROUPS["<alltypes>"] = _FOREACH_GROUPS["<numeric>"] + ["bool", "interval", "varchar"]
_FOREACH_GROUPS["<compression>"] = [
    "none", "uncompressed", "rle", "bitpacking", "dictionary", "fsst", "alp", "alprd",
]


def _is_this_host(tag):
    """`duckdb` is every host; `duckdb<version>` the hosts whose DuckDB version starts with it
    (`duckdb1.5`, `duckdb2`, `duckdb2.0.1`), for records about a host's own behaviour."""
    tag = tag.lower()
    if tag == "duckdb":
        return True
    if not tag.startswith("duckdb"):
        return False
    import duckdb

    want = tag[len("duckdb"):].split(".")
    have = duckdb.__version__.split(".")
    return have[: len(want)] == want


def _blank(line):
    return line.strip() == ""


def _blank_or_comment(line):
    return _blank(line) or line.startswith("#")


class Parser:
    def __init__(self, lines, ctx):
        self.lines = [l.rstrip("\r\n").replace("\r", "") for l in lines]
        self.ctx = ctx  # FileRunner: replace_keywords(), check_require(), env vars

    def _extract_sql(self, i):
        out = []
        while i < len(self.lines) and not _blank_or_comment(self.lines[i]):
            if self.lines[i].rstrip() == "----":
                break
            out.append(self.lines[i])
            i += 1
        return "\n".join(out), i

    def _extract_until_blank(self, i):
        out = []
        while i < len(self.lines) and not _blank(self.lines[i]):
            out.append(self.lines[i])
            i += 1
        return out, i

    def parse(self):
        """Return (commands, skip_reason)."""
        lines = self.lines
        n = len(lines)
        top = []
        stack = []
        skip_level = 0
        i = 0
        seen = False
        while True:
            if seen:
                while i < n and not _blank_or_comment(lines[i]):
                    i += 1
            seen = True
            while i < n and _blank_or_comment(lines[i]):
                i += 1
            if i >= n:
                break
            tokens = lines[i].split()
            cmd, params = tokens[0], tokens[1:]
            if cmd not in KNOWN_COMMANDS:
                raise ParseError(i + 1, "unrecognized command %r" % cmd)
            if cmd in SINGLE_LINE and i + 1 < n and not _blank_or_comment(lines[i + 1]):
                raise ParseError(i + 1, "all test statements need to be separated by an empty line")
            skip = False
            while cmd in ("skipif", "onlyif"):
                if not params:
                    raise ParseError(i + 1, "skipif/onlyif requires a parameter (e.g. skipif duckdb)")
                ours = _is_this_host(params[0])
                if ours == (cmd == "skipif"):
                    skip = True
                    break
                i += 1
                if i >= n or _blank_or_comment(lines[i]):
                    raise ParseError(i, "%s must be followed by a command" % cmd)
                tokens = lines[i].split()
                cmd, params = tokens[0], tokens[1:]
                if cmd not in KNOWN_COMMANDS:
                    raise ParseError(i + 1, "unrecognized command %r" % cmd)
            if skip:
                continue
            if skip_level > 0 and cmd != "mode":
                continue
            target = stack[-1].body if stack else top
            line_no = i + 1
            header = lines[i].strip()

            if cmd == "statement":
                if not params or params[0] not in ("ok", "error", "maybe"):
                    raise ParseError(line_no, "statement needs 'ok', 'error' or 'maybe'")
                sql, i = self._extract_sql(i + 1)
                if not sql.strip():
                    raise ParseError(line_no, "unexpected empty statement text")
                expected_error = None
                if i < n and lines[i].rstrip() == "----":
                    if params[0] == "ok":
                        raise ParseError(
                            line_no,
                            "only 'statement error' can have an expected error message, not 'statement ok'",
                        )
                    err_lines, i = self._extract_until_blank(i + 1)
                    expected_error = "\n".join(err_lines)
                conn = params[1] if len(params) > 1 else None
                target.append(
                    Statement(line_no, header, params[0], self.ctx.replace_keywords(sql), expected_error, conn)
                )
            elif cmd == "query":
                if not params:
                    raise ParseError(line_no, "query requires the column types (e.g. query II)")
                types = params[0]
                if not types.isalpha():
                    raise ParseError(line_no, "invalid query column types %r" % types)
                sort, conn, label = "none", None, None
                if len(params) > 1:
                    if params[1] in SORT_STYLES:
                        sort = SORT_STYLES[params[1]]
                    else:
                        conn = params[1]
                if len(params) > 2:
                    label = params[2]
                sql, i = self._extract_sql(i + 1)
                if not sql.strip():
                    raise ParseError(line_no, "unexpected empty query text")
                expected, has_sep = [], False
                if i < n and lines[i].rstrip() == "----":
                    has_sep = True
                    expected, i = self._extract_until_blank(i + 1)
                target.append(
                    Query(line_no, header, types, sort, label, conn, self.ctx.replace_keywords(sql), expected, has_sep)
                )
            elif cmd in ("loop", "concurrentloop"):
                if len(params) != 3:
                    raise ParseError(line_no, "expected: loop <name> <start> <end>")
                try:
                    start, end = int(params[1]), int(params[2])
                except ValueError:
                    raise ParseError(line_no, "loop start and end must be integers")
                loop = Loop(line_no, header, [params[0]], [[str(k)] for k in range(start, end)])
                target.append(loop)
                stack.append(loop)
            elif cmd in ("foreach", "concurrentforeach"):
                if len(params) < 2:
                    raise ParseError(line_no, "expected: foreach <name> <value> [<value> ...]")
                names = params[0].split(",")
                values = []
                for p in params[1:]:
                    values.extend(_FOREACH_GROUPS.get(p.strip().lower(), [p]))
                iterations = []
                for v in values:
                    parts = v.split(",") if len(names) > 1 else [v]
                    if len(parts) != len(names):
                        raise ParseError(line_no, "foreach value %r does not match names %r" % (v, params[0]))
                    iterations.append(parts)
                loop = Loop(line_no, header, names, iterations)
                target.append(loop)
                stack.append(loop)
            elif cmd == "endloop":
                if not stack:
                    raise ParseError(line_no, "endloop without active loop")
                stack.pop()
            elif cmd == "halt":
                break
            elif cmd == "mode":
                if len(params) != 1:
                    raise ParseError(line_no, "mode requires one parameter")
                if params[0] == "skip":
                    skip_level += 1
                elif params[0] == "unskip":
                    skip_level = max(0, skip_level - 1)
                else:
                    target.append(Command(line_no, header, "mode", mode=params[0]))
            elif cmd == "require":
                if not params:
                    raise ParseError(line_no, "require needs a parameter")
                reason = self.ctx.check_require(params)
                if reason:
                    return top, reason
            elif cmd == "require-env":
                if len(params) not in (1, 2):
                    raise ParseError(line_no, "require-env <name> [value]")
                value = os.environ.get(params[0])
                if value is None:
                    return top, "require-env %s" % params[0]
                if len(params) == 2 and value != params[1]:
                    return top, "require-env %s %s" % (params[0], params[1])
                self.ctx.env_vars[params[0]] = value
            elif cmd == "load":
                if stack:
                    raise ParseError(line_no, "load cannot be used in a loop")
                path = self.ctx.replace_keywords(params[0]) if params else None
                readonly = len(params) > 1 and params[1] == "readonly"
                target.append(Command(line_no, header, "load", path=path, readonly=readonly))
            elif cmd == "restart":
                target.append(Command(line_no, header, "restart"))
            elif cmd == "reconnect":
                target.append(Command(line_no, header, "reconnect"))
            elif cmd == "sleep":
                if len(params) != 2:
                    raise ParseError(line_no, "sleep requires two parameters (e.g. sleep 1 second)")
                unit = params[1].lower().rstrip("s")
                scale = {"second": 1.0, "millisecond": 1e-3, "microsecond": 1e-6, "nanosecond": 1e-9}.get(unit)
                if scale is None:
                    raise ParseError(line_no, "unknown sleep unit %r" % params[1])
                target.append(Command(line_no, header, "sleep", seconds=float(params[0]) * scale))
            elif cmd == "set":
                if not params or params[0] not in ("ignore_error_messages", "always_fail_error_messages"):
                    raise ParseError(line_no, "unrecognized set parameter")
                values = {s.strip() for s in " ".join(params[1:]).split(",")} - {""}
                if params[0] == "ignore_error_messages":
                    self.ctx.ignore_error_messages = values
                else:
                    self.ctx.always_fail_error_messages = values
            elif cmd == "hash-threshold":
                if len(params) != 1 or not params[0].lstrip("-").isdigit():
                    raise ParseError(line_no, "hash-threshold requires a number")
        if stack:
            raise ParseError(stack[-1].line, "missing endloop")
        return top, None


def _contains_restart(commands):
    for c in commands:
        if c.kind == "restart":
            return True
        if c.kind == "loop" and _contains_restart(c.body):
            return True
    return False


# ---------------------------------------------------------------------------
# executing one file (runs inside the --single subprocess)
# ---------------------------------------------------------------------------


class _StopFile(Exception):
    pass


class _SkipFile(Exception):
    pass


def _indent(text, prefix="    "):
    return "\n".join(prefix + l for l in str(text).split("\n"))


def _limit(lines):
    if len(lines) <= MAX_SHOWN_LINES:
        return lines
    return lines[:MAX_SHOWN_LINES] + ["... (%d more lines)" % (len(lines) - MAX_SHOWN_LINES)]


class FileRunner:
    def __init__(self, path, display, extension, tmpdir, events, fail_fast, verbose, restart_timeout):
        self.path = path
        self.display = display
        self.extension = extension  # absolute path or None
        self.tmpdir = tmpdir
        self.events = events
        self.fail_fast = fail_fast
        self.verbose = verbose
        self.restart_timeout = restart_timeout
        self.env_vars = {}
        self.ignore_error_messages = set()
        self.always_fail_error_messages = {"INTERNAL Error", "differs from original result!"}
        self.passed = 0
        self.failed = 0
        self.root = None
        self.default_con = None
        self.named = {}
        self.db_path = ":memory:"
        self.readonly = False
        self.output_result = False
        self._builtin_extensions = None

    # -- events / output ---------------------------------------------------
    def emit(self, **ev):
        self.events.write(json.dumps(ev) + "\n")
        self.events.flush()

    def out(self, text=""):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    # -- keywords / requires -------------------------------------------------
    def replace_keywords(self, text):
        for name, value in self.env_vars.items():
            text = text.replace("${%s}" % name, value)
        text = text.replace("__TEST_DIR__", self.tmpdir)
        text = text.replace("__WORKING_DIRECTORY__", os.getcwd())
        build_dir = os.path.dirname(self.extension) if self.extension else os.path.join(PROJECT_ROOT, "build")
        text = text.replace("__BUILD_DIRECTORY__", build_dir)
        return text

    def check_require(self, params):
        name = params[0].lower()
        if name == EXTENSION_NAME:
            return None if self.extension else "require %s (running with --extension none)" % name
        present = {"notwindows", "notmingw", "64bit", "skip_reload", "noforcestorage", "nothreadsan",
                   "strinline", "noalternativeverify", "no_vector_verification",
                   "no_extension_autoloading", "longdouble"}
        missing = {"windows", "mingw"}
        if name in present:
            return None
        # `require duckdb2`: a file about one host's features (DuckDB 2.0's triggers)
        if name.startswith("duckdb") and name != "duckdb":
            return None if _is_this_host(name) else "require %s" % name
        if name in missing:
            return "require %s" % name
        if name in ("vector_size", "exact_vector_size"):
            try:
                size = int(params[1])
            except (IndexError, ValueError):
                return "require %s (bad parameter)" % name
            ok = 2048 >= size if name == "vector_size" else size == 2048
            return None if ok else "require %s %d" % (name, size)
        if name == "block_size":
            try:
                return None if int(params[1]) == 262144 else "require block_size %s" % params[1]
            except (IndexError, ValueError):
                return "require block_size (bad parameter)"
        if self._builtin_extensions is None:
            try:
                import duckdb

                with duckdb.connect() as con:
                    self._builtin_extensions = {
                        r[0] for r in con.execute(
                            "SELECT extension_name FROM duckdb_extensions() WHERE loaded"
                        ).fetchall()
                    }
            except Exception:
                self._builtin_extensions = set()
        if name in self._builtin_extensions:
            return None
        return "require %s" % name

    # -- database handling ------------------------------------------------------
    def _open(self):
        import duckdb

        root = duckdb.connect(self.db_path, read_only=self.readonly,
                              config={"allow_unsigned_extensions": True})
        try:
            if self.extension:
                root.execute("LOAD '%s'" % self.extension.replace("'", "''"))
            con = root.cursor()
        except BaseException:
            root.close()
            raise
        self.root, self.default_con, self.named = root, con, {}

    def _close(self):
        cons = list(self.named.values()) + [self.default_con, self.root]
        self.root, self.default_con, self.named = None, None, {}
        first_error = None
        for c in cons:
            if c is None:
                continue
            try:
                c.close()
            except Exception as e:  # keep closing the rest
                first_error = first_error or e
        del cons
        gc.collect()
        if first_error is not None:
            raise first_error

    def _mark_instance(self):
        """Attaches an in-memory marker database to the open instance (False if it cannot)."""
        if self.root is None:
            return False
        try:
            self.root.execute("ATTACH IF NOT EXISTS ':memory:' AS %s" % INSTANCE_MARKER)
            return True
        except Exception:
            return False

    def _instance_marked(self):
        rows = self.root.execute(
            "SELECT count(*) FROM duckdb_databases() WHERE database_name = '%s'" % INSTANCE_MARKER).fetchall()
        return rows[0][0] > 0

    def _reopen_with_watchdog(self, what, line):
        """close + open + LOAD in a thread; a hang fails the file and exits."""
        box = {}

        def work():
            try:
                marked = self._mark_instance()
                self._close()
                self._open()
                # DuckDB 2's Python client hands out the open instance again while the
                # extension's own connection still holds it (the extension's watchdog releases it
                # within its poll interval): reopen until the instance is a new one.
                deadline = time.monotonic() + RELEASE_TIMEOUT
                while marked and self._instance_marked():
                    if time.monotonic() > deadline:
                        raise RuntimeError("the database instance was not released after closing it")
                    self._close()
                    time.sleep(0.05)
                    self._open()
            except BaseException as e:  # noqa: BLE001
                box["error"] = e

        t = threading.Thread(target=work, name="slt-%s" % what, daemon=True)
        t.start()
        t.join(self.restart_timeout)
        if t.is_alive():
            msg = "%s hung (closing/reopening the database took more than %g s)" % (what, self.restart_timeout)
            self.failed += 1
            self.out("  %s:%d: %s" % (self.display, line, msg))
            self.emit(ev="rec", ok=False, line=line)
            self.emit(ev="fatal", msg=msg, line=line)
            self.emit(ev="done", passed=self.passed, failed=self.failed)
            self.events.close()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(3)
        if "error" in box:
            raise box["error"]

    def con(self, name):
        if not name:
            return self.default_con
        if name not in self.named:
            self.named[name] = self.root.cursor()
        return self.named[name]

    # -- main entry ---------------------------------------------------------
    def run(self):
        try:
            with open(self.path, "r", encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
        except OSError as e:
            return self._fatal(0, "cannot read file: %s" % e)
        try:
            commands, skip_reason = Parser(lines, self).parse()
        except ParseError as e:
            return self._fatal(e.line, "parse error: %s" % e.msg)
        if skip_reason:
            self.emit(ev="skip", reason=skip_reason)
            return
        if _contains_restart(commands):
            self.db_path = os.path.join(self.tmpdir, "test.db")
        try:
            self._open()
        except Exception as e:
            return self._fatal(0, "could not open the database / load the extension:\n%s" % self._err(e))
        try:
            self.exec_list(commands, [])
        except _StopFile:
            pass
        except _SkipFile as e:
            self.emit(ev="skip", reason=str(e))
            return
        try:
            self._close()
        except Exception as e:
            self.failed += 1
            self.out("%s: closing the database failed: %s" % (self.display, self._err(e)))
        self.emit(ev="done", passed=self.passed, failed=self.failed)

    def _fatal(self, line, msg):
        self.failed += 1
        where = "%s:%d" % (self.display, line) if line else self.display
        self.out(_indent("%s: %s" % (where, msg), "  "))
        self.emit(ev="rec", ok=False, line=line)
        self.emit(ev="done", passed=self.passed, failed=self.failed)

    @staticmethod
    def _err(e):
        import duckdb

        if isinstance(e, duckdb.Error):
            return str(e)
        return "%s: %s" % (type(e).__name__, e)

    @staticmethod
    def _loop_replace(text, loopvars):
        for name, value in loopvars:
            text = text.replace("${%s}" % name, value)
        return text

    def exec_list(self, commands, loopvars):
        for c in commands:
            if c.kind == "loop":
                for values in c.iterations:
                    self.exec_list(c.body, loopvars + list(zip(c.names, values)))
            elif c.kind == "statement":
                self.exec_statement(c, loopvars)
            elif c.kind == "query":
                self.exec_query(c, loopvars)
            elif c.kind == "restart":
                if self.db_path == ":memory:":
                    self._record_failure(c, loopvars, None, "cannot restart an in-memory database "
                                         "(a preceding 'load' without a path switched to memory)")
                    raise _StopFile()
                self._run_reopen(c, "restart", loopvars)
            elif c.kind == "reconnect":
                try:
                    self.default_con.close()
                    self.default_con = self.root.cursor()
                except Exception as e:
                    self._record_failure(c, loopvars, None, "reconnect failed: %s" % self._err(e))
                    raise _StopFile()
            elif c.kind == "load":
                path = c.path
                if path and not os.path.isabs(path):
                    # keep database files out of the source tree
                    path = os.path.join(self.tmpdir, path)
                if path and not c.readonly:
                    for suffix in ("", ".wal"):
                        try:
                            os.remove(path + suffix)
                        except OSError:
                            pass
                self.db_path = path or ":memory:"
                self.readonly = c.readonly
                self._run_reopen(c, "load", loopvars)
            elif c.kind == "sleep":
                time.sleep(c.seconds)
            elif c.kind == "mode":
                if c.mode == "output_result":
                    self.output_result = True
                elif c.mode in ("no_output", "output_hash", "debug"):
                    self.output_result = False

    def _run_reopen(self, c, what, loopvars):
        self.emit(ev="start", line=c.line, sql=c.header)
        try:
            self._reopen_with_watchdog(what, c.line)
        except Exception as e:
            self._record_failure(c, loopvars, None, "%s failed: %s" % (what, self._err(e)))
            raise _StopFile()
        if self.verbose:
            suffix = "  [%s]" % ", ".join("%s=%s" % kv for kv in loopvars) if loopvars else ""
            self.out("  ok    %s:%d  %s%s" % (self.display, c.line, c.header, suffix))

    # -- records ----------------------------------------------------------------
    def _record_pass(self, rec, loopvars):
        self.passed += 1
        self.emit(ev="rec", ok=True, line=rec.line)
        if self.verbose:
            suffix = "  [%s]" % ", ".join("%s=%s" % kv for kv in loopvars) if loopvars else ""
            self.out("  ok    %s:%d  %s%s" % (self.display, rec.line, rec.header, suffix))

    def _record_failure(self, rec, loopvars, sql, message, expected=None, actual=None):
        self.failed += 1
        self.emit(ev="rec", ok=False, line=rec.line)
        bar = "-" * 72
        out = [bar, "FAILED %s:%d  (%s)" % (self.display, rec.line, rec.header)]
        if loopvars:
            out.append("loop: " + ", ".join("%s=%s" % kv for kv in loopvars))
        if sql is not None:
            out.append("SQL:")
            out.append(_indent(sql))
        out.append(message)
        for title, lines in (("Expected:", expected), ("Actual:", actual)):
            if lines is None:
                continue
            out.append(title)
            if lines:
                out.extend(_indent(l) for l in _limit(lines))
            else:
                out.append("    (no rows)")
        out.append(bar)
        self.out(_indent("\n".join(out), "  "))
        if self.fail_fast:
            raise _StopFile()

    def _check_ignored(self, msg):
        for m in self.ignore_error_messages:
            if m in msg:
                raise _SkipFile("error matched ignore_error_messages %r" % m)

    @staticmethod
    def _run_sql(con, sql):
        cur = con.execute(sql)
        desc = cur.description
        rows = cur.fetchall() if desc is not None else []
        return desc, rows

    def exec_statement(self, st, loopvars):
        sql = self._loop_replace(st.sql, loopvars)
        self.emit(ev="start", line=st.line, sql=sql)
        err = None
        try:
            self._run_sql(self.con(st.conn), sql)
        except Exception as e:
            err = self._err(e)
        if err is not None and st.expect == "ok":
            self._check_ignored(err)
            return self._record_failure(st, loopvars, sql, "Statement failed unexpectedly:\n" + _indent(err))
        if err is None and st.expect == "error":
            return self._record_failure(st, loopvars, sql, "Statement succeeded but an error was expected"
                                        + (":\n" + _indent(st.expected_error) if st.expected_error else "."))
        if err is not None:
            for m in self.always_fail_error_messages:
                if m in err:
                    return self._record_failure(st, loopvars, sql, "Statement raised an error that never counts "
                                                "as expected (%r):\n%s" % (m, _indent(err)))
            if st.expected_error:
                expected = self._loop_replace(st.expected_error, loopvars)
                if not self._error_matches(err, expected):
                    return self._record_failure(
                        st, loopvars, sql,
                        "Error message mismatch.\nExpected the error to %s:\n%s\nActual error:\n%s"
                        % ("match" if expected.startswith(("<REGEX>:", "<!REGEX>:")) else "contain",
                           _indent(expected), _indent(err)))
        self._record_pass(st, loopvars)

    def _error_matches(self, err, expected):
        if expected in err or self.replace_keywords(expected) in err:
            return True
        if expected.startswith(("<REGEX>:", "<!REGEX>:")):
            return self._regex_matches(err, expected)
        return False

    @staticmethod
    def _regex_matches(actual, pattern):
        want = pattern.startswith("<REGEX>:")
        regex = pattern.split(":", 1)[1]
        try:
            matched = re.fullmatch(regex, actual, re.DOTALL) is not None
        except re.error:
            return False
        return matched == want

    def exec_query(self, q, loopvars):
        sql = self._loop_replace(q.sql, loopvars)
        self.emit(ev="start", line=q.line, sql=sql)
        try:
            desc, rows = self._run_sql(self.con(q.conn), sql)
        except Exception as e:
            err = self._err(e)
            self._check_ignored(err)
            return self._record_failure(q, loopvars, sql, "Query failed unexpectedly:\n" + _indent(err),
                                        expected=[self._loop_replace(l, loopvars) for l in q.expected])
        desc = desc or []
        types = [d[1] for d in desc]
        names = [d[0] for d in desc]
        try:
            rendered = [[render_value(v, t) for v, t in zip(row, types)] for row in rows]
        except Exception as e:
            return self._record_failure(q, loopvars, sql, "Could not render the result: %s" % self._err(e))
        expected = [self._loop_replace(l, loopvars) for l in q.expected]
        ncols = len(desc)
        if q.sort == "row":
            rendered.sort()
        values = [v for row in rendered for v in row]
        if q.sort == "value":
            values.sort()
            actual_lines = values[:]
        else:
            actual_lines = ["\t".join(r) for r in rendered]
        if self.output_result:
            self.out("  result of %s:%d:\n%s" % (self.display, q.line,
                                                 "\n".join(["    " + q.header, "    ----"] + _indent_all(actual_lines))))
        message = self._compare(q, ncols, types, names, rendered, values, expected)
        if message:
            return self._record_failure(q, loopvars, sql, message, expected=expected, actual=actual_lines)
        self._record_pass(q, loopvars)

    # -- result comparison ---------------------------------------------------------
    def _value_equal(self, actual, expected, kind, is_real):
        if actual == expected:
            return True
        if "__" in expected and actual == self.replace_keywords(expected):
            return True
        if expected.startswith(("<REGEX>:", "<!REGEX>:")):
            return self._regex_matches(actual, expected)
        if actual == "NULL" or expected == "NULL":
            return False
        if kind == "bool":
            norm = {"true": "1", "1": "1", "false": "0", "0": "0"}
            a, e = norm.get(actual.lower()), norm.get(expected.lower())
            return a is not None and a == e
        if kind == "float" or (is_real and kind in (None, "int", "decimal")):
            try:
                a, e = float(actual), float(expected)
            except ValueError:
                return False
            if math.isnan(a) or math.isnan(e):
                return math.isnan(a) and math.isnan(e)
            if math.isinf(a) or math.isinf(e):
                return a == e
            return math.isclose(a, e, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)
        if kind in ("int", "decimal"):
            try:
                return decimal.Decimal(actual) == decimal.Decimal(expected)
            except (decimal.InvalidOperation, ValueError):
                return False
        return False

    def _first_mismatch(self, values, expected_values, kinds, reals, ncols, value_mode):
        for i, (a, e) in enumerate(zip(values, expected_values)):
            if value_mode:
                kind = kinds[0] if len(set(kinds)) == 1 else None
                is_real = all(reals)
            else:
                kind, is_real = kinds[i % ncols], reals[i % ncols]
            if not self._value_equal(a, e, kind, is_real):
                return i
        return None

    def _compare(self, q, ncols, types, names, rendered, values, expected):
        if ncols == 0:
            return "The query returned no result set (use 'statement ok' for statements without results)."
        if ncols != len(q.types):
            return ("Wrong column count: the record declares %d column(s) (%r) but the result has %d: %s"
                    % (len(q.types), q.types, ncols, ", ".join(names)))
        nrows = len(rendered)
        total = nrows * ncols
        if len(expected) == 1 and HASH_RE.match(expected[0]):
            md5 = hashlib.md5()
            for v in values:
                md5.update(v.encode("utf-8", "surrogateescape"))
                md5.update(b"\n")
            got = "%d values hashing to %s" % (total, md5.hexdigest())
            if got != expected[0]:
                return "Hash mismatch: expected %r, got %r" % (expected[0], got)
            return None
        row_wise = ncols > 1 and len(expected) == nrows
        if not row_wise:
            row_wise = bool(expected) and all("\t" in l for l in expected)
        if row_wise:
            exp_values = []
            for idx, l in enumerate(expected):
                parts = l.split("\t")
                if len(parts) != ncols:
                    return ("Expected result line %d has %d tab-separated value(s) but the query has %d column(s)"
                            % (idx + 1, len(parts), ncols))
                exp_values.extend(parts)
            exp_rows = len(expected)
        else:
            if len(expected) % ncols != 0:
                return ("Expected %d value line(s), which is not a multiple of the %d result columns"
                        % (len(expected), ncols))
            exp_values = list(expected)
            exp_rows = len(expected) // ncols
        if exp_rows != nrows:
            return "Wrong row count: expected %d row(s), got %d" % (exp_rows, nrows)
        kinds = [_column_kind(t) for t in types]
        reals = [c == "R" for c in q.types]
        value_mode = q.sort == "value"
        idx = self._first_mismatch(values, exp_values, kinds, reals, ncols, value_mode)
        if idx is None:
            return None
        if q.sort != "none":
            # expected results written in another order: compare sorted as well
            if value_mode:
                alt = sorted(exp_values)
            else:
                alt_rows = sorted(exp_values[r * ncols:(r + 1) * ncols] for r in range(exp_rows))
                alt = [v for row in alt_rows for v in row]
            if self._first_mismatch(values, alt, kinds, reals, ncols, value_mode) is None:
                return None
        a, e = values[idx], exp_values[idx]
        if value_mode:
            return "Mismatch at value %d: actual %r <> expected %r" % (idx + 1, a, e)
        r, c = divmod(idx, ncols)
        return ("Mismatch at row %d, column %d (%s): actual %r <> expected %r"
                % (r + 1, c + 1, names[c], a, e))


def _indent_all(lines):
    return ["    " + l for l in lines]


def run_single(args):
    faulthandler.enable()
    _install_pytz_shim()
    display = args.display_name or args.single
    extension = None if args.extension.lower() == "none" else os.path.abspath(args.extension)
    tmpdir = args.tmpdir or tempfile.mkdtemp(prefix="slt_")
    fail_fast = args.fail_fast or os.environ.get("SLT_FAIL_FAST", "") not in ("", "0")
    events_path = args.result_file or os.devnull
    with open(events_path, "a", encoding="utf-8") as events:
        runner = FileRunner(args.single, display, extension, tmpdir, events, fail_fast, args.verbose,
                            args.restart_timeout)
        try:
            runner.run()
        except Exception:
            runner.failed += 1
            runner.out("%s: internal runner error:\n%s" % (display, traceback.format_exc()))
            runner.emit(ev="rec", ok=False, line=0)
            runner.emit(ev="done", passed=runner.passed, failed=runner.failed)
    if not args.result_file:
        print("%d passed, %d failed" % (runner.passed, runner.failed))
        if not args.tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    sys.stdout.flush()
    return 0


# ---------------------------------------------------------------------------
# driver: one subprocess per file
# ---------------------------------------------------------------------------


class FileResult:
    def __init__(self, display):
        self.display = display
        self.status = "FAIL"
        self.passed = 0
        self.failed = 0
        self.reason = ""
        self.output = ""


def _display_path(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith(".." + os.sep + ".." + os.sep) else rel


def collect_files(patterns):
    files, missing = [], []
    seen = set()

    def add(p):
        ap = os.path.abspath(p)
        if ap not in seen:
            seen.add(ap)
            files.append(ap)

    for pat in patterns:
        if os.path.isdir(pat):
            for p in sorted(glob.glob(os.path.join(pat, "**", "*.test"), recursive=True)):
                add(p)
        elif glob.has_magic(pat):
            matches = sorted(p for p in glob.glob(pat, recursive=True) if os.path.isfile(p))
            if not matches:
                print("warning: no test files match %s" % pat)
            for p in matches:
                add(p)
        elif os.path.isfile(pat):
            add(pat)
        else:
            missing.append(pat)
    return files, missing


def run_file_subprocess(path, args, extension):
    display = _display_path(path)
    res = FileResult(display)
    tmpdir = tempfile.mkdtemp(prefix="slt_")
    result_file = os.path.join(tmpdir, ".slt_events.jsonl")
    cmd = [sys.executable, SCRIPT_PATH, "--single", path, "--display-name", display,
           "--extension", extension, "--tmpdir", tmpdir, "--result-file", result_file,
           "--restart-timeout", str(args.restart_timeout)]
    if args.verbose:
        cmd.append("--verbose")
    if args.fail_fast:
        cmd.append("--fail-fast")
    env = dict(os.environ)
    env["PYTHONFAULTHANDLER"] = "1"
    env.setdefault("PYTHONIOENCODING", "utf-8")
    timed_out = False
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            out, err = proc.communicate()
        rc = proc.returncode
        out_text = out.decode("utf-8", "replace")
        err_text = err.decode("utf-8", "replace")

        events = []
        try:
            with open(result_file, encoding="utf-8") as f:
                for line in f:
                    try:
                        events.append(json.loads(line))
                    except ValueError:
                        pass
        except OSError:
            pass
    finally:
        if not args.keep_tmp:
            shutil.rmtree(tmpdir, ignore_errors=True)

    skip = next((e for e in events if e.get("ev") == "skip"), None)
    done = next((e for e in events if e.get("ev") == "done"), None)
    recs = [e for e in events if e.get("ev") == "rec"]
    starts = [e for e in events if e.get("ev") == "start"]
    fatal = next((e for e in events if e.get("ev") == "fatal"), None)
    res.passed = sum(1 for e in recs if e.get("ok"))
    res.failed = sum(1 for e in recs if not e.get("ok"))
    extra = []
    if skip is not None and not timed_out and rc == 0:
        res.status = "SKIP"
        res.reason = skip.get("reason", "")
    elif done is not None and not timed_out and rc == 0:
        res.status = "PASS" if res.failed == 0 else "FAIL"
    else:
        # crashed, hung or timed out: count the interrupted work as one failure
        if fatal is not None:
            if fatal.get("msg", "") not in out_text:
                extra.append(fatal.get("msg", "fatal error"))
        elif timed_out:
            where = ""
            if starts:
                last = starts[-1]
                where = " while running %s:%s:\n%s" % (display, last.get("line"), _indent(last.get("sql", "")))
            extra.append("timed out after %g s%s" % (args.timeout, where))
            res.failed += 1
        else:
            if rc is not None and rc < 0:
                try:
                    how = "killed by signal %s" % signal.Signals(-rc).name
                except ValueError:
                    how = "killed by signal %d" % -rc
            else:
                how = "exited with code %s" % rc
            where = ""
            if done is None and starts:
                last = starts[-1]
                where = " while running %s:%s:\n%s" % (display, last.get("line"), _indent(last.get("sql", "")))
            elif done is not None:
                where = " after finishing all records (crash during shutdown)"
            extra.append("test process %s%s" % (how, where))
            res.failed += 1
        res.status = "FAIL"
    text = out_text.rstrip("\n")
    if extra:
        text = (text + "\n" if text else "") + "\n".join(extra)
    if err_text.strip() and (res.status == "FAIL" or args.verbose):
        tail = err_text.rstrip("\n").split("\n")
        if len(tail) > 60:
            tail = ["... (%d earlier stderr lines)" % (len(tail) - 60)] + tail[-60:]
        text = (text + "\n" if text else "") + "stderr:\n" + _indent("\n".join(tail))
    res.output = text
    return res


def run_all(args):
    if args.extension.lower() == "none":
        extension = "none"
    else:
        extension = args.extension
        if not os.path.isabs(extension) and not os.path.exists(extension):
            candidate = os.path.join(PROJECT_ROOT, extension)
            if os.path.exists(candidate):
                extension = candidate
        extension = os.path.abspath(extension)
        if not os.path.isfile(extension):
            print("error: extension file not found: %s (build it first, or pass --extension none)" % extension)
            print("0 passed, 1 failed")
            return 1

    patterns = args.paths or [os.path.join(PROJECT_ROOT, DEFAULT_GLOB)]
    files, missing = collect_files(patterns)

    total_passed = total_failed = 0
    failed_files, skipped, passed_files = [], [], 0
    for m in missing:
        total_failed += 1
        failed_files.append(m)
        if not args.summary_only:
            print("FAIL %s (no such file)" % m)
    if not files and not missing and not args.summary_only:
        print("no test files found")

    def report(res):
        nonlocal total_passed, total_failed, passed_files
        total_passed += res.passed
        total_failed += res.failed
        if res.status == "SKIP":
            skipped.append(res.display)
            if not args.summary_only:
                print("SKIP %s (%s)" % (res.display, res.reason))
                if args.verbose and res.output:
                    print(_indent(res.output, "  "))
        elif res.status == "PASS":
            passed_files += 1
            if not args.summary_only:
                print("PASS %s (%d records)" % (res.display, res.passed))
                if args.verbose and res.output:
                    print(_indent(res.output, "  "))
        else:
            failed_files.append(res.display)
            if not args.summary_only:
                print("FAIL %s (%d of %d records failed)" % (res.display, res.failed, res.passed + res.failed))
                if res.output:
                    print(_indent(res.output, "  "))
        sys.stdout.flush()

    jobs = max(1, args.jobs)
    try:
        if jobs == 1:
            for p in files:
                report(run_file_subprocess(p, args, extension))
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(run_file_subprocess, p, args, extension) for p in files]
                for fut in futures:
                    report(fut.result())
    except KeyboardInterrupt:
        print("interrupted")
        total_failed += 1

    print("files: %d passed, %d failed, %d skipped" % (passed_files, len(failed_files), len(skipped)))
    if failed_files:
        print("failed files: " + " ".join(failed_files))
    print("%d passed, %d failed" % (total_passed, total_failed))
    return 0 if total_failed == 0 else 1


def parse_args(argv):
    ap = argparse.ArgumentParser(description="sqllogictest runner for the openivm DuckDB extension")
    ap.add_argument("paths", nargs="*", help="test files, directories or globs (default: test/sql/**/*.test)")
    ap.add_argument("--extension", default=DEFAULT_EXTENSION,
                    help="path of the loadable extension, or 'none' (default: %(default)s)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every record and the output of passing files")
    ap.add_argument("--summary-only", action="store_true", help="print only the summary lines")
    ap.add_argument("--fail-fast", action="store_true",
                    help="stop each file at its first failed record (also: SLT_FAIL_FAST=1)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="files run in parallel (default 1)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_FILE_TIMEOUT,
                    help="seconds before a file's process is killed (default %(default)s)")
    ap.add_argument("--restart-timeout", type=float, default=DEFAULT_RESTART_TIMEOUT,
                    help="seconds allowed for close+reopen on restart/load (default %(default)s)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep each file's temporary directory")
    # internal: run a single file in this process
    ap.add_argument("--single", help=argparse.SUPPRESS)
    ap.add_argument("--display-name", help=argparse.SUPPRESS)
    ap.add_argument("--tmpdir", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if os.environ.get("SLT_FAIL_FAST", "") not in ("", "0"):
        args.fail_fast = True
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.single:
        return run_single(args)
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
