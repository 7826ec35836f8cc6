"""Shared helpers of the PyTorch peers of `weft bench`.

Each peer script measures one scenario with PyTorch and prints one JSON
object per line on stdout; bench/peers/run_all.py joins those lines with the
rows of `weft bench --json`. Two kinds of line:

  a row   {"scenario", "key", "variant", "unit", "median", "min", "max",
           "repeats", "notes", "impl", "version", "device"}
  a meta  {"meta": true, "impl", "available", ...}: what ran (torch and
          CUDA versions, device name) or why an optional implementation
          (CuPy) did not

Anything else a peer has to say goes to stderr. A peer that cannot run
(torch or CUDA missing) prints one line to stderr and exits 2; a peer whose
result check fails, or that meets an unexpected error, exits 1 after the
rows it has already printed.

Only the standard library is imported here; torch is imported by need_torch,
so that a missing torch is one clear line rather than a traceback.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback

EXIT_FAILED = 1
EXIT_CANNOT_RUN = 2

DEFAULT_REPEATS = 7
DEFAULT_WARMUP = 1


class CannotRun(Exception):
    """The peer cannot run here (no torch, no CUDA device)."""


class CheckFailed(Exception):
    """A result differs from what the work should have produced."""


_state = {"name": "peer", "torch": None, "device": "", "version": ""}


def need_torch():
    """Imports torch and checks that a CUDA device is usable. Returns the
    module; raises CannotRun with a one-line reason otherwise."""
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        raise CannotRun(f"torch is not importable ({type(e).__name__}: {e})")
    try:
        if not torch.cuda.is_available():
            raise CannotRun(
                f"torch {torch.__version__} sees no CUDA device "
                f"(built for CUDA {torch.version.cuda})"
            )
        name = torch.cuda.get_device_name(0)
    except CannotRun:
        raise
    except Exception as e:
        raise CannotRun(f"CUDA is not usable from torch ({type(e).__name__}: {e})")
    _state["torch"] = torch
    _state["device"] = name
    _state["version"] = torch.__version__
    return torch


def parse_args(description):
    """The options every peer takes: --repeats (timed samples) and --warmup
    (untimed samples before them)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"timed samples per measurement (default {DEFAULT_REPEATS})")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help=f"untimed samples first (default {DEFAULT_WARMUP})")
    a = p.parse_args()
    if a.repeats < 1 or a.warmup < 0:
        p.error("--repeats must be >= 1 and --warmup >= 0")
    return a


def _print_line(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=False) + "\n")
    sys.stdout.flush()


def emit_meta(impl, available=True, **fields):
    """Prints a meta line: which implementation ran, with what."""
    obj = {"meta": True, "impl": impl, "available": bool(available)}
    obj.update(fields)
    _print_line(obj)


def emit_torch_meta():
    torch = _state["torch"]
    emit_meta(
        "torch",
        version=torch.__version__,
        cuda=torch.version.cuda,
        device=_state["device"],
        python=platform.python_version(),
    )


def stats(samples):
    """(median, min, max) of a non-empty list of numbers."""
    if not samples:
        raise ValueError("no samples")
    return statistics.median(samples), min(samples), max(samples)


def emit(scenario, key, variant, unit, samples, notes="", impl="torch",
         version=None, device=None):
    """Prints one row: the median, min and max of samples (already in
    unit), with how many there were."""
    med, lo, hi = stats(samples)
    _print_line({
        "scenario": scenario,
        "key": key,
        "variant": variant,
        "unit": unit,
        "median": med,
        "min": lo,
        "max": hi,
        "repeats": len(samples),
        "notes": notes or "",
        "impl": impl,
        "version": _state["version"] if version is None else version,
        "device": _state["device"] if device is None else device,
    })


def now_ns():
    return time.perf_counter_ns()


def measure(sample, repeats, warmup):
    """Calls sample() warmup times, discarding what it returns, then repeats
    times; returns the list of the values those calls returned (each one
    sample, already in the row's unit)."""
    for _ in range(warmup):
        sample()
    return [sample() for _ in range(repeats)]


def event_ms(torch, fn, stream=None):
    """Runs fn() with CUDA events recorded around it on stream (the current
    one by default) and returns the device time between them in ms, after
    waiting for the second event. For work issued on that one stream."""
    s = stream if stream is not None else torch.cuda.current_stream()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record(s)
    fn()
    end.record(s)
    end.synchronize()
    return start.elapsed_time(end)


def check(cond, fmt, *args):
    """Raises CheckFailed(fmt % args) unless cond."""
    if not cond:
        raise CheckFailed(fmt % args if args else fmt)


def check_close(got, want, rel, what, abs_tol=0.0):
    """got and want are floats: |got - want| <= abs_tol + rel * |want|."""
    if not (abs(got - want) <= abs_tol + rel * abs(want)):
        raise CheckFailed(f"{what}: got {got!r}, expected {want!r} (rel {rel}, abs {abs_tol})")


def run_main(name, main):
    """Runs main() and turns the ways it can end into exit codes with one
    line on stderr each: 2 when the peer cannot run here, 1 on a failed
    check or an unexpected error (whose traceback, kept short, comes first
    for whoever has to fix it)."""
    _state["name"] = name
    try:
        main()
    except CannotRun as e:
        sys.stderr.write(f"peer {name}: cannot run: {e}\n")
        sys.exit(EXIT_CANNOT_RUN)
    except CheckFailed as e:
        sys.stderr.write(f"peer {name}: FAILED check: {e}\n")
        sys.exit(EXIT_FAILED)
    except KeyboardInterrupt:
        sys.stderr.write(f"peer {name}: interrupted\n")
        sys.exit(EXIT_FAILED)
    except Exception as e:
        if os.environ.get("WEFT_PEERS_QUIET") is None:
            traceback.print_exc(limit=4, file=sys.stderr)
        msg = str(e).strip().splitlines()
        sys.stderr.write(f"peer {name}: FAILED: {type(e).__name__}: {msg[0] if msg else ''}\n")
        sys.exit(EXIT_FAILED)
