"""The run format both halves share: table layouts, ``SCHEMA_VERSION`` and its change log
(``schema``), the names collector and reporter agree on (``vocabulary``), the timing policy
a run records and each suite's (``policy``), and what each workload is (``workloads``).

It imports pyarrow and the standard library only, so a stack under test needs nothing more
to write a run and the reporter nothing more to read one."""
