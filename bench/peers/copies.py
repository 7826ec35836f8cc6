"""Peer of `weft bench` scenario copies: seed 001's three streams.

One thread issues 100 torch.matmul(m, m) of 1024x1024 float32 (TF32 off:
weft's side is FP32 SGEMM) on stream 1, then 100 device-to-host copies of
1024x1024 float32 (d.to("cpu", non_blocking=nb)) on stream 2, then 100
host-to-device copies from pinned 1024x1024 float32 tensors
(h.to("cuda", non_blocking=nb)) on stream 3; key "blocking" is nb=False,
"non_blocking" nb=True. The time is the wall clock from before the first
launch to after torch.cuda.synchronize(), in ms; all outputs stay alive
until then. After the samples of each key, one matmul result is checked
against a float64 computation on the CPU for a few elements, and the first
and last copy each way exactly.

    python3 bench/peers/copies.py [--repeats N] [--warmup N]
"""
import common

SCENARIO = "copies"
N = 1024
COUNT = 100
PROBES = ((0, 0), (511, 7), (N - 1, N - 1))


def setup(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    mats = [torch.rand((N, N), device="cuda") for _ in range(COUNT)]
    gpu_data = [torch.rand((N, N), device="cuda") for _ in range(COUNT)]
    cpu_data = [torch.rand((N, N)).pin_memory() for _ in range(COUNT)]
    streams = [torch.cuda.Stream() for _ in range(3)]
    torch.cuda.synchronize()
    return mats, gpu_data, cpu_data, streams


def one_run(torch, nb, mats, gpu_data, cpu_data, streams):
    """Returns (ms, (products, to_host, to_device))."""
    s1, s2, s3 = streams
    products, to_host, to_device = [], [], []
    torch.cuda.synchronize()
    t0 = common.now_ns()
    with torch.cuda.stream(s1):
        for m in mats:
            products.append(torch.matmul(m, m))
    with torch.cuda.stream(s2):
        for d in gpu_data:
            to_host.append(d.to("cpu", non_blocking=nb))
    with torch.cuda.stream(s3):
        for h in cpu_data:
            to_device.append(h.to("cuda", non_blocking=nb))
    torch.cuda.synchronize()
    ms = (common.now_ns() - t0) / 1e6
    return ms, (products, to_host, to_device)


def check_outputs(torch, key, mats, gpu_data, cpu_data, outs):
    products, to_host, to_device = outs
    m = mats[0].cpu().double()
    for i, j in PROBES:
        want = float((m[i, :] * m[:, j]).sum())
        got = float(products[0][i, j])
        common.check_close(got, want, 5e-4, f"{key}: matmul[0][{i},{j}]")
    for k in (0, COUNT - 1):
        common.check(torch.equal(to_host[k], gpu_data[k].cpu()),
                     "%s: device-to-host copy %d differs from its source", key, k)
        common.check(torch.equal(to_device[k].cpu(), cpu_data[k]),
                     "%s: host-to-device copy %d differs from its source", key, k)
    common.check(to_device[0].is_cuda and not to_host[0].is_cuda,
                 "%s: a copy landed on the wrong side", key)


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    torch = common.need_torch()
    common.emit_torch_meta()
    mats, gpu_data, cpu_data, streams = setup(torch)
    for key, nb in (("blocking", False), ("non_blocking", True)):
        last = {}

        def sample():
            last.clear()  # frees the previous sample's outputs first
            ms, outs = one_run(torch, nb, mats, gpu_data, cpu_data, streams)
            last["outs"] = outs
            return ms

        samples = common.measure(sample, args.repeats, args.warmup)
        check_outputs(torch, key, mats, gpu_data, cpu_data, last["outs"])
        pinned = last["outs"][1][0].is_pinned()
        last.clear()
        common.emit(
            SCENARIO, key,
            f"torch {COUNT} matmul (s1) + {COUNT} D2H (s2) + {COUNT} H2D from pinned (s3), "
            f"non_blocking={nb}",
            "ms", samples,
            f"{N}x{N} float32, TF32 off; wall clock, first launch to "
            f"torch.cuda.synchronize(); D2H outputs {'pinned' if pinned else 'pageable'}")


if __name__ == "__main__":
    common.run_main(SCENARIO, main)
