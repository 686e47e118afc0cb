"""The grading engine: everything on both sides of the process boundary.

The parent side (`runner`, `verdict`, `isolation`, `system`, `worker`) starts a grading process and
decides its verdict; the child side (`forkserver`, `plugin`, `submission`, `report`) runs inside it.
Nothing here knows of the terminal or of progress.
"""
