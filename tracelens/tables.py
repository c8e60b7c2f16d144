"""A set of parsed tables: a name -> polars frame mapping that concatenates blocks and writes Parquet."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tracelens.schema import TABLES, C, T, conform_parts, empty, polars_schema

# The dataset's hidden metadata folder (manifest, journal), as the batch engine names it.
DATASET_META = ".tracelens"

# Working table of multi-line record pieces (source, run, record, line_no, kind, text); `finalize` joins them.
PARTS = "_parts"


@dataclass
class Tables:
    """Named polars frames, one per table of `schema.SCHEMAS` (plus the working `_parts`)."""

    frames: dict[str, pl.DataFrame]
    folder: Path | None = None  # the dataset they were read from, for tables left on disk (`skip`)

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.frames.get(name, empty(name) if name in TABLES else pl.DataFrame())

    @staticmethod
    def concat(parts: Iterable[Tables]) -> Tables:
        collected: dict[str, list[pl.DataFrame]] = {}
        for part in parts:
            for name, frame in part.frames.items():
                collected.setdefault(name, []).append(frame)
        return Tables({name: pl.concat(frames, how="vertical_relaxed") for name, frames in collected.items()})

    @staticmethod
    def is_dataset(path: Path) -> bool:
        """A folder written by `tracelens parse -o` (one sub-folder of part files per table)."""
        return path.is_dir() and (path / DATASET_META).is_dir() and (path / "lines").is_dir()

    @staticmethod
    def read_dataset(path: Path, skip: Iterable[str] = ()) -> Tables:
        """The tables of a dataset written by `tracelens parse -o`, ready to analyse; those in ``skip``
        stay on disk (empty here; `scan` reads them)."""
        frames = {}
        for name in TABLES:
            parts = sorted((path / name).glob("*.parquet")) if name not in skip else []
            frames[name] = conform_parts(name, [pl.read_parquet(p) for p in parts])
        frames[T.LINES] = frames[T.LINES].sort(C.SOURCE, C.LINE_NO)
        return Tables(frames, folder=path)

    def scan(self, name: str) -> pl.LazyFrame:
        """A table as a lazy frame: from the dataset's files when it was left on disk."""
        if self.folder is not None and not self[name].height:
            parts = sorted((self.folder / name).glob("*.parquet"))
            if parts:
                # part files leave out their all-null columns (engine.store): they come back as nulls
                return pl.scan_parquet(parts, schema=polars_schema(name), missing_columns="insert")
        return self[name].lazy()

    def write_parquet(self, out_dir: Path) -> dict[str, Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = {}
        for name in TABLES:
            path = out_dir / f"{name}.parquet"
            self[name].write_parquet(path)
            written[name] = path
        return written
