"""Peer of `weft bench` scenario priority: seed 001's stream priorities.

A flood of 500 torch.matmul of 1024x1024 float32 (TF32 off) on a stream of
priority 0, then short work, 100 torch.pow(m, 3) over 1024x1024 matrices,
on a second stream, issued by the same thread right after the flood:

  alone  the short work alone (its stream at priority 0)
  same   flood + short work, the short stream at priority 0
  high   flood + short work, the short stream at the greatest priority this
         torch allows (torch.cuda.Stream.priority_range(); -1 where that is
         missing); the notes say which priority the stream got

The time is the wall clock from before the first launch until the short
stream's synchronize() returns, in ms; the device is synchronised untimed
before the next sample. After each key's samples, one pow result is checked
against the CPU, and for same and high a few elements of one matmul against
a float64 computation.

    python3 bench/peers/priority.py [--repeats N] [--warmup N]
"""
import common

SCENARIO = "priority"
N = 1024
FLOOD = 500
SHORT = 100
PROBES = ((0, 0), (511, 7), (N - 1, N - 1))


def priority_range(torch):
    """(least, greatest, how): torch's own range when it says, else (0, -1)."""
    try:
        least, greatest = torch.cuda.Stream.priority_range()
        return int(least), int(greatest), "torch.cuda.Stream.priority_range()"
    except Exception:
        return 0, -1, "priority_range() unavailable, assumed -1"


def stream_priority(s):
    try:
        return int(s.priority)
    except Exception:
        return None


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    torch = common.need_torch()
    common.emit_torch_meta()
    torch.backends.cuda.matmul.allow_tf32 = False

    least, greatest, how = priority_range(torch)
    flood_s = torch.cuda.Stream(priority=0)
    same_s = torch.cuda.Stream(priority=0)
    high_s = torch.cuda.Stream(priority=greatest)
    if flood_s.cuda_stream == same_s.cuda_stream:
        # Pool streams come round-robin; two calls in a row should differ.
        same_s = torch.cuda.Stream(priority=0)
    common.check(flood_s.cuda_stream != same_s.cuda_stream,
                 "could not get two distinct priority-0 streams")
    flood_mats = [torch.rand((N, N), device="cuda") for _ in range(FLOOD)]
    short_mats = flood_mats[:SHORT]  # as in seed 001: the same list
    torch.cuda.synchronize()

    def run(short_s, with_flood, last):
        last.clear()
        products, cubes = [], []
        torch.cuda.synchronize()
        t0 = common.now_ns()
        if with_flood:
            with torch.cuda.stream(flood_s):
                for m in flood_mats:
                    products.append(torch.matmul(m, m))
        with torch.cuda.stream(short_s):
            for m in short_mats:
                cubes.append(torch.pow(m, 3))
        short_s.synchronize()
        t1 = common.now_ns()
        torch.cuda.synchronize()
        t2 = common.now_ns()
        last["products"], last["cubes"] = products, cubes
        last["all_ms"] = (t2 - t0) / 1e6
        return (t1 - t0) / 1e6

    variants = (
        ("alone", same_s, False),
        ("same", same_s, True),
        ("high", high_s, True),
    )
    for key, short_s, with_flood in variants:
        last, all_ms = {}, []

        def sample():
            ms = run(short_s, with_flood, last)
            all_ms.append(last["all_ms"])
            return ms

        samples = common.measure(sample, args.repeats, args.warmup)
        want = short_mats[0].cpu() ** 3
        common.check(torch.allclose(last["cubes"][0].cpu(), want, rtol=1e-5, atol=1e-7),
                     "%s: pow(m, 3) differs from the CPU's", key)
        if with_flood:
            m = flood_mats[0].cpu().double()
            for i, j in PROBES:
                got = float(last["products"][0][i, j])
                wantij = float((m[i, :] * m[:, j]).sum())
                common.check_close(got, wantij, 5e-4, f"{key}: matmul[0][{i},{j}]")
        last.clear()
        prio = stream_priority(short_s)
        notes = (f"short stream priority {prio}, torch range {least}..{greatest} ({how})"
                 if key == "high" else f"short stream priority {prio}")
        if with_flood:
            done = common.stats(all_ms[args.warmup:])[0]
            notes += (f"; flood of {FLOOD} matmul at priority {stream_priority(flood_s)}, "
                      f"everything done after {done:.4g} ms (median)")
        variant = (f"torch {SHORT} pow(m,3)" if not with_flood else
                   f"torch {FLOOD} matmul then {SHORT} pow(m,3), "
                   f"short stream priority {prio}")
        common.emit(SCENARIO, key, variant, "ms", samples,
                    f"{N}x{N} float32, TF32 off; first launch to the short stream's "
                    f"synchronize(); " + notes)


if __name__ == "__main__":
    common.run_main(SCENARIO, main)
