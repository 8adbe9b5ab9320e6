"""sapp: symbolic automatic parallel planner. Thin Python bindings over libsapp.

estimate() and search() take the same options as the command line (keyword arguments named like the options,
with '_' for '-': tp=4, global_batch=128, recompute="selective", cp_algo="all2all", ...) and return the report
the command line prints with --format json, as dicts. Bad input raises SappError (a ValueError) whose message
names the argument and value.
"""
import json as _json

from ._sapp import SappError
from . import _sapp


def _options(model, hardware, devices, global_batch, seq, options):
    stated = {"model": model, "hardware": hardware, "devices": devices, "global_batch": global_batch, "seq": seq}
    stated.update(options)
    return {k: v for k, v in stated.items() if v is not None}


def estimate(model=None, hardware=None, devices=None, global_batch=None, seq=None, **options):
    """Per-stage memory and step time of one layout. Options: those of `sapp estimate` (see fields("estimate"))."""
    return _sapp.estimate(_options(model, hardware, devices, global_batch, seq, options))


def search(model=None, hardware=None, devices=None, global_batch=None, seq=None, **options):
    """Every layout, ranked by step time. Options: those of `sapp search`; each dimension is "auto" (the
    default), one value, "1,2,4" or a list."""
    return _sapp.search(_options(model, hardware, devices, global_batch, seq, options))


def fields(command):
    """The options of a command ("estimate" or "search") as (key, help, is_flag) tuples."""
    return {"estimate": _sapp.estimate_fields, "search": _sapp.search_fields}[command]()


def balance(layers, stages, micro_batches, memory_limit_mb=0.0, interleave=1, less_memory=False):
    """Layers and recompute per pipeline stage for a layers JSON."""
    return _json.loads(_sapp.balance(layers, stages, micro_batches, memory_limit_mb, interleave, less_memory))


__all__ = ["estimate", "search", "balance", "fields", "SappError"]
