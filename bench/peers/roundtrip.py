"""Peer of `weft bench` scenario roundtrip: launch a kernel and wait for it.

Per round: x.add_(1) on a one-element int32 CUDA tensor, then the current
stream's synchronize(). One sample = 2000 rounds timed together; the row is
us per round. x must end equal to the number of rounds. weft's side: a task
that launches a one-thread counting kernel and calls weft_sync.

With CuPy importable, the same with a one-thread cupy.RawKernel (impl
"cupy").

    python3 bench/peers/roundtrip.py [--repeats N] [--warmup N]
"""
import common
from launch import cupy_tick

SCENARIO = "roundtrip"
ROUNDS = 2000


def rounds(launch_one, sync, repeats, warmup):
    now = common.now_ns

    def sample():
        t0 = now()
        for _ in range(ROUNDS):
            launch_one()
            sync()
        return (now() - t0) / 1e3 / ROUNDS

    return common.measure(sample, repeats, warmup)


def torch_roundtrip(torch, args):
    x = torch.zeros(1, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    samples = rounds(lambda: x.add_(1), stream.synchronize, args.repeats, args.warmup)
    want = (args.repeats + args.warmup) * ROUNDS
    got = int(x.item())
    common.check(got == want, "x.add_(1) ran %d times, expected %d", got, want)
    common.emit(SCENARIO, "roundtrip",
                "torch x.add_(1) + current_stream().synchronize()", "us", samples,
                f"{ROUNDS} rounds per sample, timed together")


def cupy_roundtrip(args):
    t = cupy_tick()
    if t is None:
        return
    x, launch_one, stream, version = t
    samples = rounds(launch_one, stream.synchronize, args.repeats, args.warmup)
    want = (args.repeats + args.warmup) * ROUNDS
    got = int(x.get()[0])
    common.check(got == want, "cupy tick ran %d times, expected %d", got, want)
    common.emit(SCENARIO, "roundtrip",
                "cupy RawKernel tick<<<1,1>>> + stream.synchronize()", "us", samples,
                f"{ROUNDS} rounds per sample, timed together", impl="cupy",
                version=version)


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    torch = common.need_torch()
    common.emit_torch_meta()
    torch_roundtrip(torch, args)
    cupy_roundtrip(args)


if __name__ == "__main__":
    common.run_main(SCENARIO, main)
