"""`python -m tracelens.cli`: the same as the `tracelens` command."""

from tracelens.cli.app import main

main()
