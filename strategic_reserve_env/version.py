"""The package's version, in a module of its own that imports nothing: the package's `__init__`, pyproject's
dynamic version and every file that records which version wrote it (run.json, results.json, benchmark.json)
read it here, so no module of a lower layer imports the package itself for it."""

__version__ = "0.4.0"
