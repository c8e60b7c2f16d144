"""The batch engine behind `tracelens parse -o DIR`: parallel, bounded-memory, incremental parsing of log
archives into a Parquet dataset, locally or on a Dask cluster. See `engine.parse_to_dataset`."""

from tracelens.engine.engine import EngineOptions, Report, parse_to_dataset, reading_dataset

__all__ = ["EngineOptions", "Report", "parse_to_dataset", "reading_dataset"]
