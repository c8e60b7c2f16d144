"""``python -m sample_logs [--out DIR]``: rewrite every sample log (see generate.py)."""

from .generate import main

main()
