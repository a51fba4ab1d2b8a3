"""What a picture of a position shows (the scene), and its drawings: ANSI text, RGB arrays, SVG, pygame, matplotlib.

See docs/ARCHITECTURE.md, "Package layout".
"""
