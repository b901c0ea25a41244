"""Recorded traffic: exchanges, sessions, their analysis, and the store they are kept in.

The proxy records through this package; `cachelint report`, `import` and the replay read from it.
"""
