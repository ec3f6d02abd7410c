#!/usr/bin/env python3
"""Reproduce the FGD paper's openb table (Weng et al., ATC'23) and compare with the published runs.

Runs `gangway sim compare --mode fill` for the six policies x seeds 42-51 on the openb default
workload (tune 1.3) and prints, per policy, our mean GPU allocation ratio, the published mean
(fgd_expected_results/analysis_allo_discrete.csv.xz, the same policy, workload and seeds) and
the difference, at 100% and 130% of capacity arrived; then fragmentation at 100%
(analysis_frag_discrete / analysis_frag_ratio_discrete). Exit status 1 if an allocation mean is
more than --tolerance points off (default 1.0, the acceptance bound), 2 on other errors.

Python 3 standard library only. Usage:
  scripts/fgd_compare.py [--gangway build/sim/gangway] [--traces ../shared/data/traces]
                         [--seeds 42-51] [--threads N] [--tolerance 1.0]
"""

import argparse
import csv
import io
import json
import lzma
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Our scorer names and the paper's policy ids, in the paper's order.
POLICIES = [
    ("random", "01-Random"),
    ("dot-product", "02-DotProd"),
    ("gpu-clustering", "03-GpuClustering"),
    ("gpu-packing", "04-GpuPacking"),
    ("best-fit", "05-BestFit"),
    ("fgd", "06-FGD"),
]
WORKLOAD = "openb_pod_list_default"
MARKS = ("100", "130")


def parse_seeds(text):
    seeds = []
    for item in text.split(","):
        if "-" in item:
            lo, hi = item.split("-", 1)
            seeds.extend(range(int(lo), int(hi) + 1))
        else:
            seeds.append(int(item))
    return seeds


def published(path, seeds, columns):
    """{policy id: {column: mean over the seeds}} for the default workload."""
    sums = {}
    with lzma.open(path, "rt", newline="") as f:
        for row in csv.DictReader(f):
            if row["workload"] != WORKLOAD or int(row["seed"]) not in seeds:
                continue
            if abs(float(row["tune"]) - 1.3) > 1e-9:
                continue
            per = sums.setdefault(row["sc_policy"], {c: [] for c in columns})
            for c in columns:
                if row.get(c, "") != "":
                    per[c].append(float(row[c]))
    return {p: {c: (sum(v) / len(v) if v else None) for c, v in cols.items()}
            for p, cols in sums.items()}


def ours(summary, column, key):
    """{policy: mean over runs of runs[i][key][column]}."""
    k = int(column)
    values = {}
    for run in summary["runs"]:
        series = run[key]
        if k < len(series) and series[k] is not None:
            values.setdefault(run["policy"], []).append(series[k])
    return {p: sum(v) / len(v) for p, v in values.items()}


def fmt(x, width=7):
    return ("%*.2f" % (width, x)) if x is not None else " " * (width - 1) + "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gangway", default=os.environ.get("GANGWAY", os.path.join(REPO, "build/sim/gangway")))
    ap.add_argument("--traces", default=os.path.join(REPO, "..", "shared", "data", "traces"))
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=1.0)
    args = ap.parse_args()

    openb = os.path.join(args.traces, "alibaba-gpu-v2023-openb")
    expected = os.path.join(openb, "fgd_expected_results")
    seeds = set(parse_seeds(args.seeds))
    cmd = [args.gangway, "sim", "compare", "--mode", "fill",
           "--policies", ",".join(p for p, _ in POLICIES), "--seeds", args.seeds, "--tune", "1.3",
           "--openb-nodes", os.path.join(openb, "openb_node_list_gpu_node.csv"),
           "--trace", os.path.join(openb, "openb_pod_list_default.csv"),
           "--threads", str(args.threads), "-o", "json"]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("fgd_compare: %s failed: %s" % (" ".join(cmd), e), file=sys.stderr)
        return 2
    seconds = time.monotonic() - start
    summary = json.loads(proc.stdout)

    alloc_pub = published(os.path.join(expected, "analysis_allo_discrete.csv.xz"), seeds, MARKS)
    frag_pub = published(os.path.join(expected, "analysis_frag_discrete.csv.xz"), seeds, ("100",))
    ratio_pub = published(os.path.join(expected, "analysis_frag_ratio_discrete.csv.xz"), seeds,
                          ("100",))
    alloc_ours = {m: ours(summary, m, "alloc_pct") for m in MARKS}
    frag_ours = ours(summary, "100", "frag_amount_pct")
    ratio_ours = ours(summary, "100", "frag_ratio_pct")

    print("FGD openb default workload, tune 1.3, seeds %s: GPU allocation ratio, %% of capacity"
          % args.seeds)
    print("%-16s %27s   %27s" % ("", "arrived 100%", "arrived 130%"))
    print("%-16s %7s %9s %7s   %7s %9s %7s" % ("policy", "ours", "published", "diff",
                                               "ours", "published", "diff"))
    worst = 0.0
    for name, pid in POLICIES:
        cells = []
        for m in MARKS:
            o = alloc_ours[m].get(name)
            p = alloc_pub.get(pid, {}).get(m)
            d = o - p if o is not None and p is not None else None
            if d is not None:
                worst = max(worst, abs(d))
            cells.append("%s %9s %s" % (fmt(o), fmt(p, 9), fmt(d)))
        print("%-16s %s   %s" % (pid, cells[0], cells[1]))
    print()
    print("Fragmentation at 100% arrived: amount (% of capacity) and ratio (% of idle GPU)")
    print("%-16s %7s %9s %7s   %7s %9s %7s" % ("policy", "ours", "published", "diff",
                                               "ours", "published", "diff"))
    for name, pid in POLICIES:
        row = []
        for mine, theirs in ((frag_ours, frag_pub), (ratio_ours, ratio_pub)):
            o = mine.get(name)
            p = theirs.get(pid, {}).get("100")
            d = o - p if o is not None and p is not None else None
            row.append("%s %9s %s" % (fmt(o), fmt(p, 9), fmt(d)))
        print("%-16s %s   %s" % (pid, row[0], row[1]))
    print()
    print("%d runs in %.1f s; largest allocation difference %.2f points (tolerance %.2f)"
          % (len(summary["runs"]), seconds, worst, args.tolerance))
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
