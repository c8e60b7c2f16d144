"""Working columns: the names of the temporary columns that parsers and the analysis add to a frame while
they compute, and drop before a frame becomes a table (a table column never starts with ``_``). Named
here like every other column, so that two steps cannot pick the same name by accident."""

from __future__ import annotations


class W:
    """Working columns the parsers add to a line frame while they read it; never part of a table."""

    CLEAN = "_clean"  # line text without colour codes, tqdm carriage returns and wrappers
    BODY = "_body"  # the message after the prefix (the whole clean text when there is no prefix)
    PREFIXED = "_prefixed"  # SGLang's own prefix was found ([T TAGS], [gpu=N], Rank N:)
    DATE = "_date"
    TIME = "_time"
    FRAC = "_frac"
    TAGS = "_tags"
    GPU = "_gpu"
    CONT = "_cont"  # could continue a multi-line record (traceback frame, wrapped server_args)
    ROW = "_row"
