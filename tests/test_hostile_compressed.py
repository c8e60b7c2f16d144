"""A compressed log that breaks keeps every line a decoder can give before the break: a truncated
.gz, .xz or .bz2, and a .gz whose only damage is its checksum (all its lines decode). The reference
is the standard library's one-shot decoder over the same bytes."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
DATA = b"".join(b"line %08d some text to pad the line out a bit more\n" % i for i in range(120_000))


def _lines(decoded: bytes) -> int:
    return decoded.count(b"\n") + (0 if decoded.endswith(b"\n") else 1)


def _count(path: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    done = subprocess.run(
        [*TRACELENS, "sql", "--csv", "-q", "--no-cache", "select count(*) from lines", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # read in part
    assert "Traceback" not in done.stderr
    return int(done.stdout.split()[1]), done.stderr


CASES = {
    "gz": (gzip.compress, lambda b: zlib.decompressobj(31).decompress(b)),
    "xz": (lzma.compress, lambda b: lzma.LZMADecompressor().decompress(b)),
    "bz2": (bz2.compress, lambda b: bz2.BZ2Decompressor().decompress(b)),
}


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("kept", [0.3, 0.7])
def test_a_truncated_log_keeps_every_decodable_line(tmp_path: Path, kind: str, kept: float) -> None:
    compress, reference = CASES[kind]
    whole = compress(DATA)
    cut = whole[: int(len(whole) * kept)]
    path = tmp_path / f"cut.log.{kind}"
    path.write_bytes(cut)
    count, stderr = _count(path)
    assert count == _lines(reference(cut)), stderr


def test_a_gz_with_a_bad_checksum_keeps_all_its_lines(tmp_path: Path) -> None:
    damaged = bytearray(gzip.compress(DATA))
    damaged[-8] ^= 0xFF  # the CRC-32 of the trailer
    path = tmp_path / "crc.log.gz"
    path.write_bytes(damaged)
    count, stderr = _count(path)
    assert "CRC" in stderr
    assert count == _lines(DATA)
