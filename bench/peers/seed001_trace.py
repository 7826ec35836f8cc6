"""Seed 001's three-stream experiment under torch.profiler, to compare with
weft's own traces: matmuls on one stream, device-to-host copies on a
second and host-to-device copies on a third, once with blocking copies and
once with non_blocking=True. Writes two Chrome traces that
`weft trace report` analyses.

    python3 bench/peers/seed001_trace.py OUT_DIR
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def run(non_blocking, mats, gpu_data, cpu_data):
    s1, s2, s3 = (torch.cuda.Stream() for _ in range(3))
    with torch.cuda.stream(s1):
        for m in mats:
            torch.matmul(m, m)
    with torch.cuda.stream(s2):
        for d in gpu_data:
            d.to("cpu", non_blocking=non_blocking)
    with torch.cuda.stream(s3):
        for d in cpu_data:
            d.to("cuda", non_blocking=non_blocking)
    torch.cuda.synchronize()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    mats = [torch.rand((1024, 1024), device="cuda") for _ in range(100)]
    gpu_data = [torch.rand((1024, 1024), device="cuda") for _ in range(100)]
    cpu_data = [torch.rand((1024, 1024)).pin_memory() for _ in range(100)]
    for non_blocking in (False, True):
        run(non_blocking, mats, gpu_data, cpu_data)  # warm up
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            run(non_blocking, mats, gpu_data, cpu_data)
        name = "non_blocking" if non_blocking else "blocking"
        path = os.path.join(out, f"torch_seed001_{name}.json")
        p.export_chrome_trace(path)
        print("wrote", path)


if __name__ == "__main__":
    main()
