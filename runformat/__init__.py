"""The run format both halves share: table layouts, ``SCHEMA_VERSION`` and its change log
(``schema``), and the names collector and reporter agree on (``vocabulary``).

It imports pyarrow and the standard library only, so a stack under test needs nothing more
to write a run and the reporter nothing more to read one."""
