"""What the package reads and writes: game records and traces, output folders written atomically, JSON and model
files from untrusted sources, progress lines.

See docs/ARCHITECTURE.md, "Package layout".
"""
