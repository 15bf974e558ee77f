"""Side by side: each tool's load points beside bench-serve's, by offered rate.

Reads `mlx-metrics bench list --json` (runs with their cells' loadPoints; an
imported run names its tool in `source`) and prints a Markdown table: per
rate, each tool's TTFT, ITL, TPOT and E2EL p50/p99 and output tokens/s, with
its ratio to bench-serve's in brackets.
    python3 scripts/peers/table.py out/peers/runs.json
"""
import json
import sys

FIGS = [("TTFT p50", "ttftMs", "median"), ("TTFT p99", "ttftMs", "p99"),
        ("ITL p50", "itlMs", "median"), ("ITL p99", "itlMs", "p99"),
        ("TPOT p50", "tpotMs", "median"), ("E2EL p50", "e2elMs", "median"),
        ("E2EL p99", "e2elMs", "p99")]


def value(p, key, q):
    d = p.get(key) or {}
    return d.get(q) if d.get("count") else None


def main(path):
    runs = json.load(open(path))["runs"]
    rows = {}  # rate -> tool -> point
    for r in runs:
        src = r.get("source")
        tool = "bench-serve" if not src else f"{src['tool']} {src.get('version', '')}".strip()
        for c in r["cells"]:
            for p in c.get("loadPoints") or []:
                rows.setdefault(p.get("offeredRate", 0), {})[tool] = p
    head = ["rate", "tool"] + [f for f, _, _ in FIGS] + ["output tok/s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["--:"] + ["---"] + ["--:"] * (len(head) - 2)) + "|")
    for rate in sorted(rows):
        own = rows[rate].get("bench-serve")
        for tool in sorted(rows[rate], key=lambda t: (t != "bench-serve", t)):
            p = rows[rate][tool]
            cells = []
            for _, key, q in FIGS + [("", "outputThroughput", None)]:
                v = p.get(key) if q is None else value(p, key, q)
                if v is None:
                    cells.append("–")
                    continue
                o = None
                if own is not None and tool != "bench-serve":
                    o = own.get(key) if q is None else value(own, key, q)
                s = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
                if o:
                    s += f" ({v / o:.2f})"
                cells.append(s)
            print(f"| {rate:g} | {tool} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
