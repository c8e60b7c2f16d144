"""The `tracelens` command line (`app`): a view. It renders analysis results and never parses a line."""
