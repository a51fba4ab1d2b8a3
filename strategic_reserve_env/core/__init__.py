"""The game itself, numpy only: the board, the settings, the rules as pure functions, the batched engine and the
one-game fast path, the dice, the luck of a roll, observations, rewards and outcomes, the agent interface and the
one turn loop.

See docs/ARCHITECTURE.md, "Package layout".
"""
