"""imagebench's collector: runs workloads inside the stack under test and records runs."""

__version__ = "0.1.0"
