"""Peer of `weft bench` scenario launch: the host cost of one launch.

The smallest PyTorch op that does checkable work, x.add_(1) on a
one-element int32 CUDA tensor, in batches of 256 on the current stream:
only the 256 calls are timed (perf_counter_ns around the loop), then the
stream is synchronised untimed, so the device's queue never fills and
blocks a launch. One sample = 200 batches; the row is us per launch. x must
end equal to the number of launches. weft's side: weft_launch of a
one-thread kernel that increments a counter, timed the same way.

With CuPy importable, the same with a one-thread cupy.RawKernel (impl
"cupy"); without it, a meta line says why.

    python3 bench/peers/launch.py [--repeats N] [--warmup N]
"""
import common

SCENARIO = "launch"
BATCH = 256
BATCHES = 200

TICK_SRC = r"""
extern "C" __global__ void tick(unsigned int *count) { count[0] += 1u; }
"""


def batched(launch_one, sync, repeats, warmup):
    """Samples (us per launch) of BATCHES timed batches of BATCH calls."""
    now = common.now_ns

    def sample():
        ns = 0
        for _ in range(BATCHES):
            t0 = now()
            for _ in range(BATCH):
                launch_one()
            ns += now() - t0
            sync()
        return ns / 1e3 / (BATCHES * BATCH)

    return common.measure(sample, repeats, warmup)


def torch_launch(torch, args):
    x = torch.zeros(1, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    samples = batched(lambda: x.add_(1), stream.synchronize, args.repeats, args.warmup)
    want = (args.repeats + args.warmup) * BATCHES * BATCH
    got = int(x.item())
    common.check(got == want, "x.add_(1) ran %d times, expected %d", got, want)
    common.emit(SCENARIO, "launch", "torch x.add_(1), int32[1], current stream", "us",
                samples, f"{BATCHES} batches of {BATCH} per sample; only the launches timed")


def cupy_tick():
    """(x, launch_one, stream, version): a zeroed one-element uint32 CuPy
    array, a call launching tick<<<1,1>>> on it, the current CuPy stream and
    CuPy's version; the kernel already compiled and loaded. None when CuPy
    is not usable, after a meta line saying why."""
    try:
        import cupy
        x = cupy.zeros(1, dtype=cupy.uint32)
        tick = cupy.RawKernel(TICK_SRC, "tick")
        tick((1,), (1,), (x,))
        stream = cupy.cuda.get_current_stream()
        stream.synchronize()
        x.fill(0)
        stream.synchronize()
        version = cupy.__version__
    except Exception as e:
        why = f"{type(e).__name__}: {e}".splitlines()[0]
        common.emit_meta("cupy", False, why=why)
        return None
    common.emit_meta("cupy", True, version=version)
    return x, lambda: tick((1,), (1,), (x,)), stream, version


def cupy_launch(args):
    t = cupy_tick()
    if t is None:
        return
    x, launch_one, stream, version = t
    samples = batched(launch_one, stream.synchronize, args.repeats, args.warmup)
    want = (args.repeats + args.warmup) * BATCHES * BATCH
    got = int(x.get()[0])
    common.check(got == want, "cupy tick ran %d times, expected %d", got, want)
    common.emit(SCENARIO, "launch", "cupy RawKernel tick<<<1,1>>>, current stream", "us",
                samples, f"{BATCHES} batches of {BATCH} per sample; only the launches timed",
                impl="cupy", version=version)


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    torch = common.need_torch()
    common.emit_torch_meta()
    torch_launch(torch, args)
    cupy_launch(args)


if __name__ == "__main__":
    common.run_main(SCENARIO, main)
