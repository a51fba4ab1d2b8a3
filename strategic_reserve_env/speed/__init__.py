"""Speed measurements (`strategic-reserve bench`): plies per second of the engine, the envs and the JAX game.

See docs/ARCHITECTURE.md, "Package layout".
"""
