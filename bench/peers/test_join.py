"""Tests of run_all.py's joining and of the peers' behaviour without torch
or CUDA; needs neither.

    python3 bench/peers/test_join.py

Prints 'N passed, N failed' last; exits 1 when a test failed.
"""
import json
import os
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_all  # noqa: E402

PEER_SCRIPTS = ("launch", "roundtrip", "copies", "priority", "tasks")


def brow(scenario, variant, median, unit, key=None, side=None, **kw):
    r = {"scenario": scenario, "variant": variant, "median": median,
         "min": median * 0.9, "max": median * 1.1, "unit": unit, "ratio": None,
         "baseline": side == "raw", "repeats": 7, "notes": ""}
    if key:
        r["peer"] = {"key": key, "side": side}
    r.update(kw)
    return r


def prow(scenario, key, median, unit, impl="torch", notes=""):
    return {"scenario": scenario, "key": key, "variant": f"{impl} {key}", "unit": unit,
            "median": median, "min": median, "max": median, "repeats": 7,
            "notes": notes, "impl": impl, "version": "9.9", "device": "Fake GPU"}


BENCH_ROWS = [
    brow("switch", "fiber switch", 0.05, "us"),  # no peer tag: ignored
    brow("launch", "weft_launch from a task", 2.0, "us", "launch", "weft"),
    brow("launch", "cudaLaunchKernel", 1.6, "us", "launch", "raw"),
    brow("copies", "weft blocking", 50.0, "ms", "blocking", "weft"),
    brow("copies", "raw blocking", 40.0, "ms", "blocking", "raw"),
    brow("copies", "weft non_blocking", 30.0, "ms", "non_blocking", "weft"),
    brow("copies", "weft non_blocking again", 31.0, "ms", "non_blocking", "weft"),
    brow("priority", "raw high", 2.0, "ms", "high", "raw"),
    brow("tasks", "weft serial", 300.0, "us", "serial", "weft"),
    brow("pinned", "weft MiB", 100.0, "MiB/s", "bw", "weft"),
]

PEER_ROWS = [
    prow("launch", "launch", 0.004, "ms"),  # 4 us, in another time unit
    prow("launch", "launch", 3.0, "us", impl="cupy"),
    prow("copies", "blocking", 80.0, "ms"),
    prow("copies", "non_blocking", 20.0, "ms"),
    prow("priority", "high", 1.0, "ms", notes="priority -5"),
    prow("priority", "same", 9.0, "ms"),  # no bench side
    prow("pinned", "bw", 3.0, "ms"),  # unit not convertible
]


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_join_matches():
    j = run_all.join(BENCH_ROWS, PEER_ROWS)
    got = {(r["scenario"], r["key"]): r for r in j["rows"]}
    expect(list(got) == [("launch", "launch"), ("copies", "blocking"),
                         ("copies", "non_blocking"), ("priority", "high")],
           f"joined keys in bench order: {list(got)}")
    r = got[("launch", "launch")]
    expect(r["unit"] == "us", "unit is the weft row's")
    expect(close(r["weft"], 2.0) and close(r["raw"], 1.6), "bench medians")
    expect(close(r["torch"], 4.0), f"torch converted from ms to us: {r['torch']}")
    expect(close(r["cupy"], 3.0), "cupy column")
    expect(close(r["weft_raw"], 1.25) and close(r["weft_torch"], 0.5), "ratios")
    expect(close(r["sources"]["torch"]["min"], 4.0), "min converted too")
    r = got[("copies", "non_blocking")]
    expect(r["raw"] is None and r["weft_raw"] is None, "no raw side: blank")
    expect(close(r["weft"], 30.0), "the first of two weft rows is kept")
    r = got[("priority", "high")]
    expect(r["weft"] is None and close(r["raw"], 2.0) and r["weft_torch"] is None,
           "raw-only bench side still joins")


def test_join_unmatched_and_warnings():
    j = run_all.join(BENCH_ROWS, PEER_ROWS)
    un = {(u["scenario"], u["key"]): u for u in j["unmatched"]}
    expect(("tasks", "serial") in un and un[("tasks", "serial")]["why"] == "no peer row",
           "weft row without peer")
    expect(("priority", "same") in un and un[("priority", "same")]["why"] == "no weft bench row",
           "peer row without weft")
    expect(("pinned", "bw") in un and "units differ" in un[("pinned", "bw")]["why"],
           "incompatible units are unmatched, not joined")
    expect(("switch", "") not in un and not any(k[0] == "switch" for k in un),
           "rows without a peer tag are ignored")
    expect(any("more than one weft row" in w for w in j["warnings"]), "duplicate warned")


def test_join_empty_and_bad_tags():
    j = run_all.join([], [])
    expect(j == {"rows": [], "unmatched": [], "warnings": []}, "empty join")
    bad = [brow("x", "v", 1.0, "us", "k", "sideways")]
    j = run_all.join(bad, [prow("x", "k", 1.0, "us")])
    expect(j["rows"] == [] and j["warnings"], "a bad side is warned about, not joined")


def test_format():
    expect(run_all.fmt(None) == "-", "blank")
    expect(run_all.fmt(1.23456) == "1.235", run_all.fmt(1.23456))
    expect(run_all.fmt(0.0123456) == "0.01235", run_all.fmt(0.0123456))
    expect(run_all.fmt(123.456) == "123.5", run_all.fmt(123.456))
    expect(run_all.fmt(12345.6) == "12346", run_all.fmt(12345.6))
    expect(run_all.fmt_ratio(1.23456) == "1.23", run_all.fmt_ratio(1.23456))
    expect(close(run_all.convert(1.0, "ms", "us"), 1000.0), "ms->us")
    expect(run_all.convert(1.0, "MiB", "us") is None, "MiB->us")


def test_parse_peer_output():
    text = "\n".join([
        json.dumps({"meta": True, "impl": "torch", "available": True, "version": "9.9"}),
        json.dumps(prow("launch", "launch", 1.0, "us")),
        "not json",
        json.dumps([1, 2]),
        json.dumps({"scenario": "x"}),
        "",
    ])
    rows, metas, junk = run_all.parse_peer_output(text)
    expect(len(rows) == 1 and len(metas) == 1 and junk == 3, f"{len(rows)} {len(metas)} {junk}")


def test_report_text():
    j = run_all.join(BENCH_ROWS, PEER_ROWS)
    metas = [{"meta": True, "impl": "torch", "available": True, "version": "9.9",
              "cuda": "12.8", "device": "Fake GPU", "python": "3.11"},
             {"meta": True, "impl": "cupy", "available": False,
              "why": "ModuleNotFoundError: No module named 'cupy'"}]
    bench = {"weft_version": "0.1", "backend": "cuda", "device": "Fake GPU", "repeat": 7,
             "failures": [{"scenario": "tasks", "message": "boom"}], "rows": BENCH_ROWS}
    peers = [{"name": "launch", "status": "ok", "message": ""},
             {"name": "tasks", "status": "timeout", "message": "no end after 300 s"}]
    md = run_all.report(j, bench, None, metas, peers, "2026-01-01 00:00 UTC")
    lines = md.splitlines()
    expect("- torch 9.9 (CUDA 12.8, Python 3.11), device Fake GPU" in lines, "torch header")
    expect("- CuPy: not installed" in lines, "cupy header")
    expect("- date 2026-01-01 00:00 UTC" in lines, "date header")
    head = "| scenario | key | unit | weft | raw CUDA | PyTorch | CuPy | weft/raw | weft/PyTorch |"
    expect(head in lines, "table head with CuPy column")
    expect("| launch | launch | us | 2 | 1.6 | 4 | 3 | 1.25 | 0.5 |" in lines, "launch row")
    expect("- priority/same: no weft bench row (torch 9 ms)" in lines, "unmatched, with its value")
    expect(any("tasks timeout (no end after 300 s)" in l for l in lines), "peer status")
    expect("- tasks: boom" in lines, "bench failures")
    md = run_all.report(run_all.join(BENCH_ROWS, [prow("copies", "blocking", 1.0, "ms")]),
                        bench, None, [], [], "d")
    expect("| scenario | key | unit | weft | raw CUDA | PyTorch | weft/raw | weft/PyTorch |"
           in md.splitlines(), "no CuPy column without CuPy rows")


def _run_all(*args, env=None):
    return subprocess.run([sys.executable, os.path.join(HERE, "run_all.py")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, timeout=600)


def test_run_all_end_to_end():
    with tempfile.TemporaryDirectory() as d:
        bench = os.path.join(d, "bench.json")
        with open(bench, "w") as f:
            json.dump({"weft_version": "0.1", "backend": "cuda", "device": "Fake GPU",
                       "quick": False, "repeat": 7, "ok": True, "failures": [],
                       "rows": BENCH_ROWS}, f)
        lines = os.path.join(d, "peers.jsonl")
        with open(lines, "w") as f:
            for r in PEER_ROWS:
                f.write(json.dumps(r) + "\n")
        out = os.path.join(d, "sub", "joined.md")
        p = _run_all(bench, out, "--peer-lines", lines)
        expect(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        expect("| launch | launch | us |" in p.stdout, "table on stdout")
        with open(out) as f:
            expect("| copies | blocking | ms | 50 | 40 | 80 | - | 1.25 | 0.625 |"
                   in f.read().splitlines(), "row in the Markdown file")
        with open(os.path.join(d, "sub", "joined.json")) as f:
            js = json.load(f)
        expect(len(js["rows"]) == 4 and len(js["unmatched"]) == 3, "machine-readable json")

        p = _run_all(os.path.join(d, "missing.json"), out, "--peer-lines", lines)
        expect(p.returncode == 1, f"missing bench JSON: exit {p.returncode}")
        expect("no such file" in p.stdout and "no such file" in p.stderr,
               "missing bench JSON reported")
        with open(bench, "w") as f:
            f.write("{ truncated")
        p = _run_all(bench, out, "--peer-lines", lines)
        expect(p.returncode == 1 and "unreadable" in p.stderr, "unreadable bench JSON")


def _fake_torch(d, body):
    os.makedirs(os.path.join(d, "torch"))
    with open(os.path.join(d, "torch", "__init__.py"), "w") as f:
        f.write(body)


FAKE_NO_CUDA = """
__version__ = "0.0-fake"
class version:
    cuda = None
class cuda:
    @staticmethod
    def is_available():
        return False
"""


def _check_peers_cannot_run(fake_body, needle):
    with tempfile.TemporaryDirectory() as d:
        _fake_torch(d, fake_body)
        env = dict(os.environ, PYTHONPATH=d)
        for name in PEER_SCRIPTS:
            p = subprocess.run([sys.executable, os.path.join(HERE, name + ".py")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, env=env, timeout=60)
            err = p.stderr.strip().splitlines()
            expect(p.returncode == 2, f"{name}: exit {p.returncode}, stderr {p.stderr!r}")
            expect(len(err) == 1 and err[0].startswith(f"peer {name}: cannot run: ")
                   and needle in err[0], f"{name}: stderr {p.stderr!r}")
            expect(p.stdout == "", f"{name}: stdout {p.stdout!r}")
        with tempfile.TemporaryDirectory() as o:
            bench = os.path.join(o, "bench.json")
            with open(bench, "w") as f:
                json.dump({"rows": BENCH_ROWS, "repeat": 3}, f)
            p = _run_all(bench, os.path.join(o, "joined.md"), "--timeout", "60", env=env)
            expect(p.returncode == 1, f"run_all, every peer unable: exit {p.returncode}")
            expect("every peer failed" in p.stderr, p.stderr)
            expect("launch cannot run" in p.stdout and "| scenario |" not in p.stdout,
                   "peer statuses listed, no table")


def test_peers_without_torch():
    _check_peers_cannot_run("raise ImportError('No module named torch (fake)')\n",
                            "torch is not importable")


def test_peers_without_cuda():
    _check_peers_cannot_run(FAKE_NO_CUDA, "sees no CUDA device")


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
            passed += 1
            print(f"ok   {name}")
        except Exception as e:
            failed += 1
            print(f"FAIL {name}: {e}")
            if not isinstance(e, Failed):
                traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
