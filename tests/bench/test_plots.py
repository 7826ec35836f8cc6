#!/usr/bin/env python3
"""`weft bench --plot DIR`: runs the charted scenarios at quick sizes on the
host backend and checks each SVG: well-formed XML, every coordinate a
finite number inside the canvas, one line per series with a point per
batch size or task count, one bar per variant and the floor as a dashed
line. Also checks that an unwritable DIR, a DIR that is a file and an
unwritable --json fail with a message, the last two before any run.

usage: test_plots.py WEFT_BINARY WORK_DIR"""
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def load(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail(f"{path}: not well-formed XML: {e}")
    w, h = float(root.get("width")), float(root.get("height"))
    for el in root.iter():
        for attr in ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "width",
                     "height"):
            v = el.get(attr)
            if v is None:
                continue
            f = float(v)
            if not math.isfinite(f) or f < -1 or f > max(w, h) + 1:
                fail(f"{path}: {el.tag} {attr}={v} outside the canvas")
        pts = el.get("points")
        if pts:
            for xy in pts.split():
                x, y = (float(t) for t in xy.split(","))
                if not (0 <= x <= w and 0 <= y <= h):
                    fail(f"{path}: polyline point {xy} outside the canvas")
    return root


def texts(root):
    return ["".join(t.itertext()) for t in root.iter(NS + "text")]


def main():
    weft, work = sys.argv[1], sys.argv[2]
    out = os.path.join(work, "plots")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, WEFT_BACKEND="host")
    r = subprocess.run([weft, "bench", "--quick", "--plot", out, "saturation",
                        "normalize", "tasks", "copies", "graph"],
                       capture_output=True, text=True, env=env, timeout=420)
    if r.returncode != 0:
        fail(f"weft bench exited {r.returncode}: {r.stderr}")
    written = re.findall(r"chart written to (\S+)", r.stdout)
    want = ["saturation-throughput", "saturation-tasks", "saturation-busy",
            "saturation-busy-tasks", "normalize", "tasks", "copies", "graph"]
    if sorted(os.path.basename(p)[:-4] for p in written) != sorted(want):
        fail(f"charts written: {written}")

    # Lines: as many points per series as the scenario has batch sizes.
    sat = load(os.path.join(out, "saturation-throughput.svg"))
    nsizes = len(re.findall(r"^saturation +raw: 1 thread, 1 stream, B=",
                            r.stdout, re.M))
    lines = list(sat.iter(NS + "polyline"))
    # raw, 1 task, 4 tasks, 1 task graphed (the raw CUDA graph: CUDA only)
    if len(lines) != 4:
        fail(f"saturation-throughput: {len(lines)} lines, want 4")
    for pl in lines:
        if len(pl.get("points").split()) != nsizes:
            fail(f"saturation-throughput: a line of "
                 f"{len(pl.get('points').split())} points, want {nsizes}")
    for label in ("raw: 1 thread, 1 stream", "weft: 1 task", "weft: 4 tasks",
                  "weft: 1 task, graphed", "items/s"):
        if label not in texts(sat):
            fail(f"saturation-throughput: no text '{label}'")

    # Bars: the four variants, and the floor as a dashed reference line.
    norm = load(os.path.join(out, "normalize.svg"))
    bars = [e for e in norm.iter(NS + "rect") if e.get("fill") != "white"]
    if len(bars) != 4:
        fail(f"normalize: {len(bars)} bars, want 4")
    dashed = [e for e in norm.iter(NS + "line") if e.get("stroke-dasharray")]
    if len(dashed) != 1:
        fail(f"normalize: {len(dashed)} dashed lines, want 1 (the floor)")
    if not any(t.startswith("floor: the copies alone") for t in texts(norm)):
        fail("normalize: the floor line is not labelled")
    tasks = load(os.path.join(out, "tasks.svg"))
    bars = [e for e in tasks.iter(NS + "rect") if e.get("fill") != "white"]
    # 1 and 2 streams, 1 and 2 tasks, 2 threads; 8 streams, tasks, threads
    if len(bars) != 8:
        fail(f"tasks: {len(bars)} bars, want 8")
    for name in want:
        load(os.path.join(out, name + ".svg"))

    # A directory that cannot be made: exit 1, and say which.
    bad = "/proc/weft-no-such-dir/plots"
    r = subprocess.run([weft, "bench", "--quick", "--plot", bad, "spawn"],
                       capture_output=True, text=True, env=env, timeout=60)
    if r.returncode != 1 or bad not in r.stderr:
        fail(f"--plot {bad}: exit {r.returncode}, stderr {r.stderr!r}")
    # A file where the directory should be, and a JSON file that cannot be
    # written: refused before anything runs (no row printed), saying why.
    afile = os.path.join(work, "plots-a-file")
    with open(afile, "w") as f:
        f.write("x")
    for args, why in (
        (["--plot", afile], "not a directory"),
        (["--json", "/proc/weft-no-such-dir/rows.json"],
         "No such file or directory"),
    ):
        r = subprocess.run([weft, "bench", "--quick", *args, "spawn"],
                           capture_output=True, text=True, env=env,
                           timeout=60)
        if r.returncode != 1 or why not in r.stderr or "spawn " in r.stdout:
            fail(f"{args}: exit {r.returncode}, stderr {r.stderr!r}, "
                 f"stdout {r.stdout[-200:]!r}")
    os.unlink(afile)
    print("ok")


main()
