"""tracelens: SGLang server logs in, answers out."""

__version__ = "0.1.0"
