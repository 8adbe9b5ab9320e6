"""sapp: symbolic automatic parallel planner. Thin Python bindings over libsapp.

Each function returns a dict (the same JSON the command line prints); bad input raises SappError (a ValueError)
whose message names the file, key and value.
"""
import json as _json

from ._sapp import SappError
from . import _sapp


def estimate(model, hardware, devices, global_batch, seq, **layout):
    """Per-stage memory and step time of one layout (tp, pp, cp, ep, etp, vpp, mbs, zero, sp, recompute, fp8)."""
    return _json.loads(_sapp.estimate(model, hardware, devices, global_batch, seq, **layout))


def search(model, hardware, devices, global_batch, seq, top=10, threads=1, **dims):
    """Every layout, ranked by step time. Dimensions (tp, pp, cp, ep, vpp, mbs, zero, recompute) as the command
    line takes them: "auto" (the default), "4" or "1,2,4"; fp8=True prices FP8 GEMMs."""
    return _json.loads(_sapp.search(model, hardware, devices, global_batch, seq, top, threads, **dims))


def balance(layers, stages, micro_batches, memory_limit_mb=0.0, interleave=1, less_memory=False):
    """Proved-optimal layers and recompute per pipeline stage for a layers JSON."""
    return _json.loads(_sapp.balance(layers, stages, micro_batches, memory_limit_mb, interleave, less_memory))


__all__ = ["estimate", "search", "balance", "SappError"]
