"""Byte sizes as users write them: 24GiB, 24GB, 80G, 512MiB, 1e9, 25769803776."""

from __future__ import annotations

import re

from cachelint.errors import CachelintError

_UNITS = {
    "": 1, "b": 1,
    "k": 2**10, "kib": 2**10, "kb": 10**3,
    "m": 2**20, "mib": 2**20, "mb": 10**6,
    "g": 2**30, "gib": 2**30, "gb": 10**9,
    "t": 2**40, "tib": 2**40, "tb": 10**12,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([a-z]*)\s*", re.I)


def parse_size(text: str) -> int:
    """Bytes in a size. GB/MB are decimal, GiB/MiB and the bare letters G/M binary (GPU memory is binary)."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise CachelintError(f"invalid size {text!r} (use forms like 24GiB, 24GB, 80G or a byte count)")
    return int(float(match.group(1)) * _UNITS[unit])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"
