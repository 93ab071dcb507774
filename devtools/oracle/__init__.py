import os


def child_env(root, **extra):
    """Environment for a child Python that must import this checkout's pyphmm:
    root first on PYTHONPATH, the caller's entries (e.g. carried wheels) kept."""
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, **extra, PYTHONPATH=path)
