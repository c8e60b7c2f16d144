"""The shape of a Python exception line, which two layers must agree on: the parsers read a fault's
exception by it, and the analysis's failure chain (`analysis/chain.py`) finds the exception lines among
a traceback's text by it. One pattern, so that both read the same lines as exceptions. The same for
torch's per-rank prefix on a rank's exception output."""

from __future__ import annotations

# An exception's name: `...Error`, `...Exception`, bare `Exception`, or a dotted module path ending in a
# class name (`triton.runtime.errors.OutOfResources`).
EXCEPTION_NAME = (
    r"(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Timeout|Warning)\w*"
    r"|[a-z_]\w*(?:\.[a-z_]\w*)*\.[A-Z]\w*"
)
# `torch.OutOfMemoryError: CUDA out of memory...`, `RuntimeError: NCCL error`, `KeyError: 'x'`.
EXCEPTION_LINE_PATTERN = rf"^(?P<type>{EXCEPTION_NAME})(?::\s*(?P<msg>.*))?$"

# torch's per-rank prefix: `[rank3]: ` before each line of a distributed rank's uncaught exception as
# torch prints it (`[rank3]: Traceback ...`, `[rank3]:   File ...`, `[rank3]: RuntimeError: ...`), and
# glued to c10d's C++ log lines (`[rank3]:[E227 16:30:43.526 ProcessGroupNCCL.cpp:1834] ...`). The parsers
# read the rank from it into tp (`parsers/processes.py`) and peel it; the analysis takes it off the text
# of unparsed lines, which the tables keep whole.
TORCH_RANK = r"\[rank(?P<torch_rank>\d+)\]:"
