"""Where lines come from, as bytes that end at line ends. Nothing here parses a line.

Finite sources are read by the batch engine: files found under paths (`inputs`), plain or compressed
(`files`), archive members (`archives`), cut into line-aligned blocks. Followed sources are read by the
live session: a local file like `tail -F` (`tail`), a file on another machine over ssh (`ssh`), a
command's output or stdin (`command`), a recorded log at its own pace (`replay`). Both kinds speak the
small protocol in `protocol`.
"""
