"""Peer of `weft bench` seed 002's experiment: independent work on streams.

run(a, b, c) = torch.matmul(a, b, out=c); torch.sin(c, out=c), n = 1024
float32 (TF32 off), a and b uniform in [-1, 1) / sqrt(n). One iteration:

  serial  two runs back to back on one stream (two outputs), then that
          stream's synchronize()
  two     one run on each of two streams (one thread, with
          torch.cuda.stream(s)), then both synchronize()
  n8      the same with 8 streams and 8 outputs

One sample = 20 iterations timed together (wall clock), reported as us per
iteration. Before each key's samples its outputs are filled with NaN; after
them, a few elements of each are checked against a float64 computation on
the CPU.

    python3 bench/peers/tasks.py [--repeats N] [--warmup N]
"""
import math

import common

SCENARIO = "tasks"
N = 1024
ITERS = 20
PROBES = ((0, 0), (100, 900), (N - 1, N - 1))


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    torch = common.need_torch()
    common.emit_torch_meta()
    torch.backends.cuda.matmul.allow_tf32 = False

    scale = 1.0 / math.sqrt(N)
    a = (torch.rand((N, N), device="cuda") * 2 - 1) * scale
    b = (torch.rand((N, N), device="cuda") * 2 - 1) * scale
    outs = [torch.empty((N, N), device="cuda") for _ in range(8)]
    streams = [torch.cuda.Stream() for _ in range(8)]
    torch.cuda.synchronize()

    A, B = a.cpu().double(), b.cpu().double()
    want = {(i, j): math.sin(float((A[i, :] * B[:, j]).sum())) for i, j in PROBES}

    def run(c):
        torch.matmul(a, b, out=c)
        torch.sin(c, out=c)

    def serial():
        s = streams[0]
        with torch.cuda.stream(s):
            run(outs[0])
            run(outs[1])
        s.synchronize()

    def spread(k):
        def it():
            for i in range(k):
                with torch.cuda.stream(streams[i]):
                    run(outs[i])
            for i in range(k):
                streams[i].synchronize()
        return it

    variants = (
        ("serial", serial, 2, "torch 2 x (matmul + sin) on one stream"),
        ("two", spread(2), 2, "torch matmul + sin on each of 2 streams, one thread"),
        ("n8", spread(8), 8, "torch matmul + sin on each of 8 streams, one thread"),
    )
    for key, iteration, nout, variant in variants:
        for c in outs[:nout]:
            c.fill_(float("nan"))
        torch.cuda.synchronize()

        def sample():
            torch.cuda.synchronize()
            t0 = common.now_ns()
            for _ in range(ITERS):
                iteration()
            return (common.now_ns() - t0) / 1e3 / ITERS

        samples = common.measure(sample, args.repeats, args.warmup)
        torch.cuda.synchronize()
        for k, c in enumerate(outs[:nout]):
            for (i, j), w in want.items():
                common.check_close(float(c[i, j]), w, 1e-3,
                                   f"{key}: output {k} [{i},{j}]", abs_tol=1e-5)
        common.emit(SCENARIO, key, variant, "us", samples,
                    f"{N}x{N} float32, TF32 off; {ITERS} iterations per sample, "
                    f"wall clock, reported per iteration")


if __name__ == "__main__":
    common.run_main(SCENARIO, main)
