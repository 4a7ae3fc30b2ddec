#!/usr/bin/env python3
"""Appends DuckDB's extension metadata footer to a shared library.

DuckDB's LOAD accepts a library only with this 534-byte footer at its end: a WebAssembly custom
section named "duckdb_signature" whose payload is eight 32-byte fields followed by 256 bytes of
(absent) signature. The fields, in order: three empty, the ABI type, the extension version, the
C API version the extension needs, the platform, and the footer format version "4".

The C API version is read from the file C_API_VERSION at the repository's root, the same file
build.rs gives the Rust code, so the footer and the entrypoint always name the same version.

With --unstable, the footer is the PRAGMA companion's (pragma/): ABI C_STRUCT_UNSTABLE, which
DuckDB 2.0 reads as a v2 extension (entrypoint <name>_init_c_api_v2) that loads only into the
exact DuckDB version named, read from pragma/DUCKDB_VERSION (also read by both crates' builds).

usage: append_footer.py [--unstable] <input .so> <output .duckdb_extension> <extension version> [platform]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
C_API_VERSION_FILE = ROOT / "C_API_VERSION"
PRAGMA_DUCKDB_VERSION_FILE = ROOT / "pragma" / "DUCKDB_VERSION"


def read_version(path: pathlib.Path) -> str:
    version = path.read_text(encoding="ascii").strip()
    if not re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", version):
        raise SystemExit(f"{path} must read v<major>.<minor>.<patch>, not {version!r}")
    return version


def field(text: str) -> bytes:
    raw = text.encode("ascii")
    if len(raw) > 32:
        raise SystemExit(f"footer field too long: {text!r}")
    return raw + b"\0" * (32 - len(raw))


def footer(extension_version: str, platform: str, abi: str, api_version: str) -> bytes:
    fields = [field(""), field(""), field(""), field(abi), field(extension_version),
              field(api_version), field(platform), field("4")]
    payload = b"".join(fields) + b"\0" * 256
    name = b"duckdb_signature"
    body = bytes([len(name)]) + name + b"\x80\x04" + payload  # 0x80 0x04 = LEB128(512)
    assert len(payload) == 512 and len(body) == 531
    return b"\x00\x93\x04" + body  # section id 0, LEB128(531)


def main() -> None:
    args = sys.argv[1:]
    unstable = args[:1] == ["--unstable"]
    if unstable:
        args = args[1:]
    if len(args) not in (3, 4):
        raise SystemExit(__doc__)
    src, dst, version = args[:3]
    platform = args[3] if len(args) == 4 else "linux_amd64"
    if unstable:
        abi, api_version = "C_STRUCT_UNSTABLE", read_version(PRAGMA_DUCKDB_VERSION_FILE)
    else:
        abi, api_version = "C_STRUCT", read_version(C_API_VERSION_FILE)
    with open(src, "rb") as f:
        lib = f.read()
    data = lib + footer(version, platform, abi, api_version)
    assert len(data) - len(lib) == 534
    with open(dst, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
