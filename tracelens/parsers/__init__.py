"""Pure, vectorized parsers: a frame of lines in, typed tables out. See `pipeline.parse_lines`."""

from tracelens.parsers.pipeline import ParseOptions, ParseState, parse_lines

__all__ = ["ParseOptions", "ParseState", "parse_lines"]
