#!/usr/bin/env python3
"""One controller on SQLite beside a group of three on etcd, in one run (issue 18).

Starts a three-member etcd cluster on loopback ports, then runs gangway_live_load twice per
mode, alternating: once against a single controller on SQLite, once against a leader on etcd
with two standbys beside it (`--etcd ... --standbys 2`). Modes: `latency` (submit to running,
idle cluster) and `throughput` (/bin/true jobs, submit to exit). Prints each run's summary
lines and nothing is asserted.

  bench/ha/throughput.py [--build build/release] [--jobs 3000] [--rounds 2]
                         [--modes latency,throughput] [--submitters 4]
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import etcd_members



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default="latency,throughput")
    ap.add_argument("--submitters", type=int, default=4, help="throughput: concurrent clients")
    args = ap.parse_args()
    gangway = os.path.abspath(os.path.join(args.build, "gangway"))
    load = os.path.abspath(os.path.join(args.build, "bench", "gangway_live_load"))
    work = tempfile.mkdtemp(prefix="gangway-ha-throughput-")
    members = []
    try:
        members, clients = etcd_members.start(work)
        etcd = ",".join(clients)
        run = 0
        for mode in args.modes.split(","):
            for _ in range(args.rounds):
                for label, extra in (("sqlite, 1 controller", []),
                                     ("etcd, 3 controllers", ["--etcd", etcd, "--standbys", "2"])):
                    run += 1
                    data = "%s/run-%d" % (work, run)
                    cmd = [load, "--gangway", gangway, "--mode", mode, "--data", data]
                    if mode == "throughput":
                        cmd += ["--jobs", str(args.jobs), "--submitters", str(args.submitters)]
                    cmd += extra
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                    print("== %s: %s" % (mode, label), flush=True)
                    print(out.stdout.strip() or out.stderr.strip(), flush=True)
                    if extra:
                        # A fresh group for the next run: its log and leader key go.
                        body = json.dumps({"key": base64.b64encode(b"/gangway").decode(),
                                           "range_end": base64.b64encode(b"/gangwaz").decode()})
                        urllib.request.urlopen(urllib.request.Request(
                            clients[0] + "/v3/kv/deleterange", data=body.encode(),
                            method="POST"), timeout=10).read()
    finally:
        etcd_members.stop(members)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
