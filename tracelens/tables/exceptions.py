"""The shape of a Python exception line, which two layers must agree on: the parsers read a fault's
exception by it, and the analysis's failure chain (`analysis/chain.py`) finds the exception lines among
a traceback's text by it. One pattern, so that both read the same lines as exceptions."""

from __future__ import annotations

# An exception's name: `...Error`, `...Exception`, bare `Exception`, or a dotted module path ending in a
# class name (`triton.runtime.errors.OutOfResources`).
EXCEPTION_NAME = (
    r"(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Timeout|Warning)\w*"
    r"|[a-z_]\w*(?:\.[a-z_]\w*)*\.[A-Z]\w*"
)
# `torch.OutOfMemoryError: CUDA out of memory...`, `RuntimeError: NCCL error`, `KeyError: 'x'`.
EXCEPTION_LINE_PATTERN = rf"^(?P<type>{EXCEPTION_NAME})(?::\s*(?P<msg>.*))?$"
