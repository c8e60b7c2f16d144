"""The tables: `schema` names every table, column and Arrow type; `frames.Tables` holds a set of named
frames (in memory) and `frames.DatasetTables` reads a dataset's part files lazily; `accounting` checks
that every input line is in exactly one table."""
