"""Runs the PyTorch peers and joins their figures with `weft bench --json`.

    python3 bench/peers/run_all.py BENCH_JSON OUT_MD [options]

Each peer script (launch, roundtrip, copies, priority, tasks) runs in its
own python process with a time limit; one that fails, cannot run or runs
out of time is reported and the others still run. Their JSON lines (see
common.py) are joined with the rows of BENCH_JSON that carry a "peer"
object ({"key": K, "side": "weft" | "raw"}) by (scenario, key), into one
table of medians:

    scenario | key | unit | weft | raw CUDA | PyTorch | weft/raw | weft/PyTorch

(plus a CuPy column when CuPy ran). The table goes to stdout and, as
Markdown, to OUT_MD; next to it go OUT.json (the joined rows, machine
readable) and OUT.peers.jsonl (every line the peers printed, which
--peer-lines reads back to join again without a GPU). Rows on one side
only are listed below the table.

Exit status: 0 when the table printed; 1 when BENCH_JSON is missing or
unreadable (the PyTorch figures are still printed and written), or when
every peer failed; 2 on bad usage.

Options:
  --peers a,b,...   run only these peers (default: all)
  --timeout S       seconds per peer (default 300)
  --repeats N       timed samples per measurement (default: BENCH_JSON's
                    "repeat", else 7)
  --peer-lines F    join the JSON lines in F instead of running the peers
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = ("launch", "roundtrip", "copies", "priority", "tasks")
DEFAULT_TIMEOUT = 300
EXIT_CANNOT_RUN = 2  # what common.run_main exits with when a peer cannot run

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}
IMPLS = ("torch", "cupy")


class BenchError(Exception):
    pass


# ---- reading ----


def parse_peer_output(text):
    """Splits a peer's stdout into (rows, metas, junk): rows are objects
    with scenario, key and median; metas have "meta"; junk counts lines
    that are not JSON objects."""
    rows, metas, junk = [], [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            junk += 1
            continue
        if not isinstance(obj, dict):
            junk += 1
        elif obj.get("meta"):
            metas.append(obj)
        elif all(k in obj for k in ("scenario", "key", "median", "unit")):
            obj.setdefault("impl", "torch")
            rows.append(obj)
        else:
            junk += 1
    return rows, metas, junk


def load_bench(path):
    """The parsed bench JSON; raises BenchError with a one-line reason."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BenchError(f"{path}: no such file (did `weft bench --json` run?)")
    except (OSError, ValueError) as e:
        raise BenchError(f"{path}: unreadable: {e}")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise BenchError(f"{path}: not a weft bench JSON (no \"rows\" list)")
    return data


# ---- joining ----


def convert(value, from_unit, to_unit):
    """value in from_unit expressed in to_unit, or None when the two are
    not both time units (and differ)."""
    if value is None:
        return None
    if from_unit == to_unit:
        return value
    a, b = TIME_UNITS.get(from_unit), TIME_UNITS.get(to_unit)
    if a is None or b is None:
        return None
    return value * a / b


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _medians(s, has):
    return {n: [s[n].get("median"), s[n]["unit"]] for n in has}


def join(bench_rows, peer_rows):
    """Joins bench rows (those with a "peer" object) and peer rows by
    (scenario, key). Returns {"rows": [...], "unmatched": [...],
    "warnings": [...]}: each joined row has scenario, key, unit, the
    medians weft, raw, torch, cupy (in unit; None where absent), the ratios
    weft_raw, weft_torch, and the source rows' variant/notes under
    "sources"; a key with no bench side, or no peer side, goes to
    unmatched as {"scenario", "key", "has": [...], "why", "medians":
    {side: [median, unit]}}."""
    order, sides, warnings = [], {}, []

    def slot(scenario, key):
        k = (scenario, key)
        if k not in sides:
            sides[k] = {}
            order.append(k)
        return sides[k]

    for r in bench_rows:
        peer = r.get("peer")
        if not isinstance(peer, dict):
            continue
        side, key = peer.get("side"), peer.get("key")
        if side not in ("weft", "raw") or not key or "scenario" not in r:
            warnings.append(f"bench row {r.get('scenario')!r}/{r.get('variant')!r}: "
                            f"bad peer tag {peer!r}")
            continue
        s = slot(r["scenario"], key)
        if side in s:
            warnings.append(f"{r['scenario']}/{key}: more than one {side} row; "
                            f"kept {s[side].get('variant')!r}")
            continue
        s[side] = r
    for r in peer_rows:
        impl = r.get("impl", "torch")
        if impl not in IMPLS:
            warnings.append(f"{r['scenario']}/{r['key']}: unknown impl {impl!r}")
            continue
        s = slot(r["scenario"], r["key"])
        if impl in s:
            warnings.append(f"{r['scenario']}/{r['key']}: more than one {impl} row")
            continue
        s[impl] = r

    rows, unmatched = [], []
    for scenario, key in order:
        s = sides[(scenario, key)]
        has = [n for n in ("weft", "raw") + IMPLS if n in s]
        bench_side = [n for n in ("weft", "raw") if n in s]
        peer_side = [n for n in IMPLS if n in s]
        if not bench_side or not peer_side:
            why = "no weft bench row" if not bench_side else "no peer row"
            unmatched.append({"scenario": scenario, "key": key, "has": has, "why": why,
                              "medians": _medians(s, has)})
            continue
        unit = s[bench_side[0]]["unit"]
        med, bad = {}, []
        for n in has:
            v = convert(s[n].get("median"), s[n]["unit"], unit)
            if v is None and s[n].get("median") is not None:
                bad.append(f"{n} in {s[n]['unit']!r}")
            med[n] = v
        if bad:
            unmatched.append({"scenario": scenario, "key": key, "has": has,
                              "why": f"units differ from {unit!r}: " + ", ".join(bad),
                              "medians": _medians(s, has)})
            continue
        rows.append({
            "scenario": scenario,
            "key": key,
            "unit": unit,
            "weft": med.get("weft"),
            "raw": med.get("raw"),
            "torch": med.get("torch"),
            "cupy": med.get("cupy"),
            "weft_raw": _ratio(med.get("weft"), med.get("raw")),
            "weft_torch": _ratio(med.get("weft"), med.get("torch")),
            "sources": {n: {"variant": s[n].get("variant", ""),
                            "notes": s[n].get("notes", ""),
                            "min": convert(s[n].get("min"), s[n]["unit"], unit),
                            "max": convert(s[n].get("max"), s[n]["unit"], unit),
                            "repeats": s[n].get("repeats")} for n in has},
        })
    return {"rows": rows, "unmatched": unmatched, "warnings": warnings}


# ---- writing ----


def fmt(v):
    """A median with 3-4 significant digits (all of its integer digits
    from 1000 up)."""
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    return f"{v:.4g}"


def fmt_ratio(v):
    return "-" if v is None else f"{v:.3g}"


def table(joined, with_cupy):
    cols = ["scenario", "key", "unit", "weft", "raw CUDA", "PyTorch"]
    if with_cupy:
        cols.append("CuPy")
    cols += ["weft/raw", "weft/PyTorch"]
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join(["---"] * 3 + ["--:"] * (len(cols) - 3)) + "|"]
    for r in joined["rows"]:
        cells = [r["scenario"], r["key"], r["unit"], fmt(r["weft"]), fmt(r["raw"]),
                 fmt(r["torch"])]
        if with_cupy:
            cells.append(fmt(r["cupy"]))
        cells += [fmt_ratio(r["weft_raw"]), fmt_ratio(r["weft_torch"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def header(bench, bench_err, metas, date, written=None):
    torch_meta = next((m for m in metas if m.get("impl") == "torch"), None)
    cupy_ok = next((m for m in metas if m.get("impl") == "cupy" and m.get("available")), None)
    cupy_no = next((m for m in metas if m.get("impl") == "cupy" and not m.get("available")), None)
    out = ["# weft / raw CUDA / PyTorch", ""]
    if torch_meta:
        out.append(f"- torch {torch_meta.get('version', '?')} (CUDA "
                   f"{torch_meta.get('cuda', '?')}, Python {torch_meta.get('python', '?')}), "
                   f"device {torch_meta.get('device', '?')}")
    else:
        out.append("- torch: no peer ran")
    if cupy_ok:
        out.append(f"- CuPy {cupy_ok.get('version', '?')}")
    elif cupy_no and "No module named" not in str(cupy_no.get("why", "")):
        out.append(f"- CuPy: not usable ({cupy_no.get('why', '?')})")
    else:
        out.append("- CuPy: not installed")
    if bench is not None:
        out.append(f"- weft {bench.get('weft_version', '?')}, bench backend "
                   f"{bench.get('backend', '?')}, device {bench.get('device', '?')}"
                   f"{', quick sizes' if bench.get('quick') else ''}, "
                   f"{bench.get('repeat', '?')} repeats"
                   f"{f', JSON written {written}' if written else ''}")
    else:
        out.append(f"- weft bench JSON: {bench_err}")
    out.append(f"- date {date}")
    out.append("- medians after a warm-up; a ratio below 1 means weft took less")
    return out


def report(joined, bench, bench_err, metas, peers, date, written=None):
    """The Markdown text: header, table, then what did not join or run."""
    with_cupy = any(r["cupy"] is not None for r in joined["rows"])
    out = header(bench, bench_err, metas, date, written) + [""]
    if joined["rows"]:
        out += table(joined, with_cupy)
    else:
        out.append("(no row joined)")
    out.append("")
    if joined["rows"]:
        out.append("Rows joined:")
        for r in joined["rows"]:
            parts = []
            for n, label in (("weft", "weft"), ("raw", "raw"), ("torch", "torch"),
                             ("cupy", "cupy")):
                src = r["sources"].get(n)
                if src:
                    notes = f" ({src['notes']})" if n in IMPLS and src["notes"] else ""
                    parts.append(f"{label}: {src['variant']}{notes}")
            out.append(f"- {r['scenario']}/{r['key']}: " + "; ".join(parts))
    if joined["unmatched"]:
        out.append("")
        out.append("Unmatched (not in the table):")
        for u in joined["unmatched"]:
            has = ", ".join(f"{n} {fmt(m)} {un}" for n, (m, un) in u["medians"].items())
            out.append(f"- {u['scenario']}/{u['key']}: {u['why']} ({has or 'nothing'})")
    if joined["warnings"]:
        out.append("")
        out.append("Warnings:")
        out += [f"- {w}" for w in joined["warnings"]]
    if bench is not None and bench.get("failures"):
        out.append("")
        out.append("weft bench failures:")
        out += [f"- {f.get('scenario')}: {f.get('message')}" for f in bench["failures"]]
    if peers:
        out.append("")
        out.append("Peers: " + ", ".join(
            f"{p['name']} {p['status']}" + (f" ({p['message']})" if p["message"] else "")
            for p in peers))
    return "\n".join(out) + "\n"


# ---- running the peers ----


def _text(b):
    if b is None:
        return ""
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else b


def run_peer(name, timeout, repeats):
    """Runs bench/peers/NAME.py. Returns {"name", "status" ("ok", "failed",
    "cannot run", "timeout"), "rc", "message", "seconds", "stdout",
    "stderr"}."""
    cmd = [sys.executable, os.path.join(HERE, name + ".py")]
    if repeats:
        cmd += ["--repeats", str(repeats)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, cwd=HERE)
        out, err, rc = _text(p.stdout), _text(p.stderr), p.returncode
        status = "ok" if rc == 0 else "cannot run" if rc == EXIT_CANNOT_RUN else "failed"
    except subprocess.TimeoutExpired as e:
        out, err, rc, status = _text(e.stdout), _text(e.stderr), None, "timeout"
    except OSError as e:
        out, err, rc, status = "", str(e), None, "failed"
    last = [line for line in err.splitlines() if line.strip()]
    if status == "timeout":
        message = f"no end after {timeout} s"
    elif status == "ok":
        message = ""
    else:
        message = last[-1].strip() if last else f"exit {rc}, nothing on stderr"
    return {"name": name, "status": status, "rc": rc, "message": message,
            "seconds": round(time.monotonic() - t0, 1), "stdout": out, "stderr": err}


def _repeats_from(bench):
    r = bench.get("repeat") if bench else None
    return r if isinstance(r, int) and 1 <= r <= 1000 else None


def _side_paths(out_md):
    base = out_md[:-3] if out_md.endswith(".md") else out_md
    return base + ".json", base + ".peers.jsonl"


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run the PyTorch peers and join them with weft bench's JSON.")
    ap.add_argument("bench_json")
    ap.add_argument("out_md")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--peer-lines", default=None)
    a = ap.parse_args(argv)
    names = [n for n in a.peers.split(",") if n]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        ap.error(f"unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEERS)}")

    bench, bench_err = None, None
    try:
        bench = load_bench(a.bench_json)
    except BenchError as e:
        bench_err = str(e)
        print(f"run_all: {bench_err}", file=sys.stderr)

    peers, all_text = [], []
    if a.peer_lines:
        try:
            with open(a.peer_lines, encoding="utf-8") as f:
                all_text.append(f.read())
        except OSError as e:
            print(f"run_all: {a.peer_lines}: {e}", file=sys.stderr)
            return 1
    else:
        repeats = a.repeats or _repeats_from(bench)
        for name in names:
            print(f"run_all: {name} ...", flush=True)
            p = run_peer(name, a.timeout, repeats)
            peers.append(p)
            all_text.append(p["stdout"])
            print(f"run_all: {name}: {p['status']} in {p['seconds']} s"
                  + (f": {p['message']}" if p["message"] else ""), flush=True)
            if p["status"] != "ok" and p["stderr"].strip():
                tail = p["stderr"].strip().splitlines()[-8:]
                print("\n".join("    " + t for t in tail), flush=True)

    text = "".join(t if t.endswith("\n") or not t else t + "\n" for t in all_text)
    rows, metas, junk = parse_peer_output(text)
    if junk:
        print(f"run_all: ignored {junk} line(s) of peer output that were not rows",
              file=sys.stderr)
    bench_rows = bench["rows"] if bench else []
    joined = join(bench_rows, rows)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    written = None
    if bench is not None:
        written = datetime.datetime.fromtimestamp(
            os.path.getmtime(a.bench_json), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = report(joined, bench, bench_err, metas, peers, date, written)
    print()
    print(md, end="")

    json_path, lines_path = _side_paths(a.out_md)
    try:
        d = os.path.dirname(os.path.abspath(a.out_md))
        os.makedirs(d, exist_ok=True)
        with open(a.out_md, "w", encoding="utf-8") as f:
            f.write(md)
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump({
                "date": date,
                "bench_json": a.bench_json,
                "bench_error": bench_err,
                "meta": metas,
                "rows": joined["rows"],
                "unmatched": joined["unmatched"],
                "warnings": joined["warnings"],
                "peers": [{k: p[k] for k in ("name", "status", "rc", "message", "seconds")}
                          for p in peers],
            }, f, indent=2)
            f.write("\n")
        if not a.peer_lines:
            with open(lines_path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        print(f"run_all: cannot write {a.out_md}: {e}", file=sys.stderr)
        return 1

    if bench is None:
        return 1
    if peers and not any(p["status"] == "ok" for p in peers):
        print("run_all: every peer failed", file=sys.stderr)
        return 1
    if a.peer_lines and not rows:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
