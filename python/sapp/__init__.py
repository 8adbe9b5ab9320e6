"""sapp: symbolic automatic parallel planner. Thin Python bindings over libsapp.

Every command (estimate, search, plan, balance, decompose, calibrate) takes the same options as the command
line (keyword arguments named like the options, with '_' for '-': tp=4, global_batch=128, recompute="selective",
cp_algo="all2all", ...) and returns the report the command line prints with --format json, as dicts. Bad input raises SappError (a ValueError) whose message
names the argument and value. estimate, search and plan take from_config="path" (the command line's --from: a
Megatron / MindSpeed script, a MindFormers, HyperParallel or AutoModel YAML, a torchtitan TOML, a HuggingFace
config.json, ...) and from_format (--from-format); the other options override the file, and what the reader says
is raised as UserWarning.
"""
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


def plan(model=None, hardware=None, devices=None, global_batch=None, seq=None, **options):
    """A search, then the pipeline of its best layouts balanced and re-ranked. Options: those of `sapp plan`."""
    return _sapp.plan(_options(model, hardware, devices, global_batch, seq, options))


def balance(layers=None, stages=None, micro_batches=None, **options):
    """Layers and recompute per pipeline stage (and chunk) for a layers JSON. Options: those of `sapp balance`
    (memory_limit in MB, interleave=3 or "auto", less_memory=True, time_limit, ...)."""
    stated = {"layers": layers, "stages": stages, "micro_batches": micro_batches}
    stated.update(options)
    return _sapp.balance({k: v for k, v in stated.items() if v is not None})


def decompose(measured=None, **options):
    """Per-layer memory terms from measured per-stage peaks. Options: those of `sapp balance decompose`."""
    stated = {"measured": measured}
    stated.update(options)
    return _sapp.decompose({k: v for k, v in stated.items() if v is not None})


def calibrate(runs=None, **options):
    """A device's efficiency factors fitted to measured runs. Options: those of `sapp calibrate`."""
    stated = {"runs": runs}
    stated.update(options)
    return _sapp.calibrate({k: v for k, v in stated.items() if v is not None})


def fields(command):
    """The options of a command (estimate, search, plan, balance, decompose, calibrate) as (key, help, is_flag)."""
    return _sapp.fields(command)


__all__ = ["estimate", "search", "plan", "balance", "decompose", "calibrate", "fields", "SappError"]
