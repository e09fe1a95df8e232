"""The only place the reporter estimates a number: per-process units, the fit, and its views.

It reads through ``reporter.data`` and never formats or translates."""
