#!/usr/bin/env python3
"""Where one decode step's time goes, from a trace of the kernels of the step's CUDA graph.

Input: `nsys stats --report cuda_gpu_trace --format csv` of a capture taken with
`--cuda-graph-trace=node`, or the CSV of tests/gpu/step_trace_injection.cpp (the same columns):
every kernel of the graph with its own start and end. Kernels launched
with programmatic dependent launch start before their predecessor ends, so a kernel's duration
says little about the step; what it adds to the step is how far it moves the latest end:
    added_i = max(0, end_i - max(end_j for j < i))   (kernels in start order)
The added times sum to the step's length. Printed per kernel name and grid, largest first.

    python3 timeline_summary.py trace.csv "llama3-8b exl2:4.0 batch 1"
"""
import csv
import sys
from collections import defaultdict


def rows_of(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    # nsys prints notes before the table: start at the header.
    start = next(i for i, l in enumerate(lines) if l.startswith('"Start') or l.startswith("Start"))
    return list(csv.DictReader(lines[start:]))


def column(row, *names):
    for n in names:
        if n in row and row[n] != "":
            return row[n]
    raise KeyError(names[0])


def without_parameters(name):
    """kernel<(Kind)0>(T1, int) -> kernel<(Kind)0>: drop the trailing parameter list."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


def main():
    path, label = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    kernels = []
    for r in rows_of(path):
        name = r.get("Name") or ""
        if not name or name.startswith("[CUDA"):  # memcpy / memset rows
            continue
        start = float(column(r, "Start (ns)", "Start"))
        dur = float(column(r, "Duration (ns)", "Duration"))
        grid = "(%s, %s, %s)" % (r.get("GrdX", "?"), r.get("GrdY", "?"), r.get("GrdZ", "?"))
        short = name.replace("(anonymous namespace)::", "").replace("hearth::kernels::", "")
        short = without_parameters(short.removeprefix("void "))
        kernels.append((start, start + dur, dur, short + " " + grid))
    if not kernels:
        print("no kernels in", path)
        return
    kernels.sort()
    t0 = kernels[0][0]
    latest = t0
    added = defaultdict(float)
    duration = defaultdict(float)
    count = defaultdict(int)
    for start, end, dur, key in kernels:
        added[key] += max(0.0, end - latest)
        latest = max(latest, end)
        duration[key] += dur
        count[key] += 1
    step = latest - t0
    print("timeline %s: one decode step %.1f us, %d kernels (graph nodes, real concurrency)"
          % (label, step / 1e3, len(kernels)))
    print("  added us | share |   n | added/n us | duration/n us | kernel (grid)")
    for key in sorted(added, key=lambda k: -added[k]):
        n = count[key]
        print("%10.1f | %4.1f%% | %3d | %10.2f | %13.2f | %s"
              % (added[key] / 1e3, 100 * added[key] / step, n, added[key] / n / 1e3,
                 duration[key] / n / 1e3, key))


if __name__ == "__main__":
    main()
