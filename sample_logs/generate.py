"""Write every sample log: ``python -m sample_logs [--out DIR]`` (or ``python -m sample_logs.generate``).

``BUILDERS`` names each file with the story function that returns its text; the package docstring
tells the stories."""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

if not __package__:  # `python sample_logs/generate.py`, the old way: say the new one, not a traceback
    sys.exit("run the generator as a package, from the repository root: python -m sample_logs [--out DIR]")

from . import deepseek_v3, eras, vllm, wrappers

EMBED_NAME = "eagle3_embed_capture.log"  # the one file also written gzipped

BUILDERS: dict[str, Callable[[], str]] = {
    "baseline_tp8.log": deepseek_v3.build_baseline,
    EMBED_NAME: deepseek_v3.build_embed_capture,
    "eagle3_fixed.log": deepseek_v3.build_fixed,
    "sweep_and_crash.log": deepseek_v3.build_sweep,
    "era_2024_rank.log": eras.build_era_2024_rank,
    "era_2024_gpu.log": eras.build_era_2024_gpu,
    "era_2024_timeonly.log": eras.build_era_2024_timeonly,
    "era_2025_dp_attention.log": eras.build_era_2025_dp_attention,
    "era_2026_comma.log": eras.build_era_2026_comma,
    "vllm_spec_decode.log": vllm.build_vllm,
    "wrappers.log": wrappers.build_wrappers,
}


def write_all(out: Path) -> list[Path]:
    """Write every sample log into ``out``; the gzip copy gets mtime 0 so that it is reproducible too."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in BUILDERS.items():
        data = build().encode("utf-8")
        (out / name).write_bytes(data)
        written.append(out / name)
        if name == EMBED_NAME:
            (out / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
            written.append(out / f"{name}.gz")
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}", description="Write the sample SGLang logs (deterministic)."
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="folder to write into (default: this package's folder, where the committed logs live)",
    )
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(f"{path.stat().st_size:>9}  {path}")


if __name__ == "__main__":
    main()
