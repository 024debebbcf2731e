#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log of one decode step per kernel.

    ncu_step_summary.py NCU_CSV_LOG [LABEL]

Prints the step's total and one line per kernel and grid size: total time, launches, time per
launch, largest first. Lines of the log that are not CSV rows (the program's own output) are
skipped. Times are ncu's, kernels run one at a time: programmatic dependent launch overlaps them
in a real step, so the total is above the measured step time.
"""
import collections
import csv
import re
import sys


def main():
    path = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else path
    with open(path, encoding="utf-8", errors="replace") as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    if not rows:
        print(f"profile {label}: no kernels in {path}")
        return 1
    col = {name: i for i, name in enumerate(rows[0])}
    total = collections.defaultdict(float)
    count = collections.Counter()
    for r in rows[1:]:
        if r[col["Metric Name"]] != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\(.*", "", r[col["Kernel Name"]]).replace("void ", "").split("::")[-1]
        key = f"{name} {r[col['Grid Size']]}"
        total[key] += float(r[col["Metric Value"]].replace(",", ""))
        count[key] += 1
    print(f"profile {label}: one decode step, {sum(total.values()) / 1e3:.1f} us "
          f"in {sum(count.values())} kernels (serialized)")
    for key, ns in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"  {ns / 1e3:8.1f} us  {count[key]:3d}x  {ns / count[key] / 1e3:6.2f} us  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
