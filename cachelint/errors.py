"""Errors a user can cause. The CLI prints them as one line and exits with code 2."""


class CachelintError(Exception):
    """Bad input or an impossible request: shown to the user as one line, never a traceback."""
