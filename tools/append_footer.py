#!/usr/bin/env python3
"""Appends DuckDB's extension metadata footer to a shared library.

DuckDB's LOAD accepts a library only with this 534-byte footer at its end: a WebAssembly custom
section named "duckdb_signature" whose payload is eight 32-byte fields followed by 256 bytes of
(absent) signature. The fields, in order: three empty, the ABI type, the extension version, the
C API version the extension needs, the platform, and the footer format version "4".

The C API version is read from the file C_API_VERSION at the repository's root, the same file
build.rs gives the Rust code, so the footer and the entrypoint always name the same version.

usage: append_footer.py <input .so> <output .duckdb_extension> <extension version> [platform]
"""
import pathlib
import re
import sys

C_API_VERSION_FILE = pathlib.Path(__file__).resolve().parents[1] / "C_API_VERSION"


def c_api_version() -> str:
    """The one C API version of the build (see build.rs)."""
    version = C_API_VERSION_FILE.read_text(encoding="ascii").strip()
    if not re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", version):
        raise SystemExit(f"{C_API_VERSION_FILE} must read v<major>.<minor>.<patch>, not {version!r}")
    return version


def field(text: str) -> bytes:
    raw = text.encode("ascii")
    if len(raw) > 32:
        raise SystemExit(f"footer field too long: {text!r}")
    return raw + b"\0" * (32 - len(raw))


def footer(extension_version: str, platform: str, c_api_version: str) -> bytes:
    fields = [field(""), field(""), field(""), field("C_STRUCT"), field(extension_version),
              field(c_api_version), field(platform), field("4")]
    payload = b"".join(fields) + b"\0" * 256
    name = b"duckdb_signature"
    body = bytes([len(name)]) + name + b"\x80\x04" + payload  # 0x80 0x04 = LEB128(512)
    assert len(payload) == 512 and len(body) == 531
    return b"\x00\x93\x04" + body  # section id 0, LEB128(531)


def main() -> None:
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    src, dst, version = sys.argv[1:4]
    platform = sys.argv[4] if len(sys.argv) == 5 else "linux_amd64"
    with open(src, "rb") as f:
        lib = f.read()
    data = lib + footer(version, platform, c_api_version())
    assert len(data) - len(lib) == 534
    with open(dst, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
