"""C library functions the standard library does not offer (syncfs, renameat2): looked up once, None where absent."""
from __future__ import annotations

_found: dict[str, object] = {}


def function(name: str, argtypes: list, restype=None):
    """The C library's `name` with its argument types (ctypes), or None where the system has none."""
    if name not in _found:
        import ctypes

        try:
            fn = getattr(ctypes.CDLL(None, use_errno=True), name)
            fn.argtypes = argtypes
            fn.restype = restype if restype is not None else ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _found[name] = fn
    return _found[name]
