"""A run, room by room: each module here owns one job of ``collector run``.

``state`` (options, planned stacks, tasks, errors), ``worker_ipc`` (one worker process and
its pipe), ``probe`` (asking a stack what it is), ``plan`` (cases and their order),
``pool`` (starting workers ahead of their turn), ``schedule`` (running tasks),
``adaptive`` (replication after the planned processes), ``record`` (writing attempts and
the environment), ``start`` and ``resume`` (creating or reopening run folders),
``signals`` and ``execute`` (the whole run, interrupted or not). ``collector.runner`` is
the interface the CLI and other callers use.
"""
