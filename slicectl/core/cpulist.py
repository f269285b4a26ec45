"""CPU and node lists: the kernel's cpulist syntax ("0-3,16-19") and systemd's `ay` bitmasks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from slicectl.core.config.values import check_ascii

# The largest NR_CPUS a Linux build allows (x86 MAXSMP, powerpc): no CPU id reaches it.
KERNEL_MAX_CPUS = 8192


def parse_cpulist(text: str) -> frozenset[int]:
    """Parse a kernel cpulist such as "0-3,8,10-11" (also "" and "\\n" = empty).

    Raises ValueError with a readable message on malformed input.
    """
    check_ascii(text)  # str.isdigit() and int() take every script's digits (٣, ３), the kernel 0-9
    result: set[int] = set()
    text = text.strip()
    if not text:
        return frozenset()
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty element in cpulist {text!r}")
        if "-" in part:
            lo_s, _, hi_s = part.partition("-")
            if not (lo_s.isdigit() and hi_s.isdigit()):
                raise ValueError(f"bad range {part!r} in cpulist {text!r}")
            lo, hi = int(lo_s), int(hi_s)
            if lo > hi:
                raise ValueError(f"range {part!r} runs backwards in cpulist {text!r}")
            result.update(range(lo, hi + 1))
        else:
            if not part.isdigit():
                raise ValueError(f"bad number {part!r} in cpulist {text!r}")
            result.add(int(part))
    return frozenset(result)


def parse_cpumask(text: str) -> frozenset[int]:
    """Parse a kernel CPU mask such as "00000000,0000ff0f" (hex, 32-bit words, most
    significant first: what `node*/cpumap` and `thread_siblings` hold on every kernel).

    Raises ValueError with a readable message on malformed input.
    """
    words = text.strip().split(",")
    for w in words:
        if not re.fullmatch(r"[0-9a-fA-F]{1,8}", w):
            raise ValueError(f"{w[:20]!r} is not a word of 1 to 8 hex digits")
    bits = int("".join(w.rjust(8, "0") for w in words), 16)
    return frozenset(i for i in range(bits.bit_length()) if bits >> i & 1)


def format_cpulist(cpus: Iterable[int]) -> str:
    """Format CPUs as the shortest kernel cpulist: {0,1,2,3,8} -> "0-3,8"."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j == i:
            parts.append(str(ordered[i]))
        elif j == i + 1:
            parts.append(f"{ordered[i]},{ordered[j]}")
        else:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def to_bitmask(cpus: Iterable[int]) -> bytes:
    """systemd's `ay` CPU/node mask: bit c%8 of byte c//8 (empty set -> b"")."""
    ordered = sorted(set(cpus))
    if not ordered:
        return b""
    mask = bytearray(ordered[-1] // 8 + 1)
    for c in ordered:
        mask[c // 8] |= 1 << (c % 8)
    return bytes(mask)


def from_bitmask(mask: bytes | Iterable[int]) -> frozenset[int]:
    """Inverse of to_bitmask; accepts the padded masks systemd returns."""
    return frozenset(
        8 * j + i for j, byte in enumerate(bytes(mask)) for i in range(8) if byte >> i & 1
    )
