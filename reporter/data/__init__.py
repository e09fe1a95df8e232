"""The reporter's first stage: reading, validating and scanning recorded runs, object storage, and the caches.

It estimates nothing; every number is estimated by ``reporter.model`` from what this stage reads."""
