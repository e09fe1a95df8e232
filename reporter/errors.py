"""The reporter's one user-facing error type, shown as a one-line message by the CLI."""

from __future__ import annotations


class ReporterError(Exception):
    """Bad input the reporter cannot answer for; the message names the file, flag or value.

    The CLI turns it into ``Error: <message>`` and exit code 2; nothing else in the
    package catches it, and nothing else should reach a user as a traceback.
    """
