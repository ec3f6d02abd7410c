#!/usr/bin/env python3
"""etcd's size and the controllers' memory while a group of three runs many jobs (issue 18).

Starts three etcd members on loopback ports and runs gangway_live_load in `dispatch` mode (the
agents simulated in its process, each launch reported exited at once) against a leader on etcd
with two standbys. Every few seconds it samples: the state log's and the snapshots' keys in
etcd, the first member's database size and the part of it in use, and the resident memory of
every `gangway server` process. Prints the samples and the last one; nothing is asserted.

  bench/ha/log_size.py [--build build/release] [--jobs 200000] [--every 5]
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import etcd_members



def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    return json.load(urllib.request.urlopen(req, timeout=30))


def b64(s):
    return base64.b64encode(s.encode()).decode()


def count(client, prefix):
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    answer = post(client + "/v3/kv/range",
                  {"key": b64(prefix), "range_end": b64(end), "count_only": True})
    return int(answer.get("count", 0))


def servers_rss_mib():
    """Resident memory of each `gangway server` process, MiB, largest first."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            if len(argv) < 2 or not argv[0].endswith(b"gangway") or argv[1] != b"server":
                continue
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        out.append(int(line.split()[1]) / 1024)
        except OSError:
            pass
    return sorted(out, reverse=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--jobs", type=int, default=200000)
    ap.add_argument("--every", type=float, default=5, help="seconds between samples")
    args = ap.parse_args()
    gangway = os.path.abspath(os.path.join(args.build, "gangway"))
    load = os.path.abspath(os.path.join(args.build, "bench", "gangway_live_load"))
    work = tempfile.mkdtemp(prefix="gangway-ha-log-size-")
    members = []
    try:
        members, clients = etcd_members.start(work)

        samples = []
        done = threading.Event()
        start = time.monotonic()

        def sample():
            while not done.wait(args.every):
                try:
                    status = post(clients[0] + "/v3/maintenance/status", {})
                    samples.append((time.monotonic() - start, count(clients[0], "/gangway/log/"),
                                    count(clients[0], "/gangway/snap/"),
                                    int(status.get("dbSize", 0)) / 2**20,
                                    int(status.get("dbSizeInUse", 0)) / 2**20,
                                    servers_rss_mib()))
                    print("sample: %.0f s, %d log keys, %d snapshot keys, etcd %.1f MiB "
                          "(%.1f in use), controllers %s MiB" % (
                              samples[-1][:5] + (" ".join("%.0f" % r for r in samples[-1][5]),)),
                          file=sys.stderr, flush=True)
                except OSError as e:
                    print("sample failed: %s" % e, file=sys.stderr)

        sampler = threading.Thread(target=sample)
        sampler.start()
        cmd = [load, "--gangway", gangway, "--mode", "dispatch", "--jobs", str(args.jobs),
               "--data", work + "/run", "--etcd", ",".join(clients), "--standbys", "2",
               "--keep"]  # the leader's log says what each snapshot held
        out = subprocess.run(cmd, capture_output=True, text=True)
        done.set()
        sampler.join()
        print(out.stdout.strip() or out.stderr.strip())
        print("%8s %10s %10s %12s %12s  %s" % ("seconds", "log keys", "snap keys", "etcd MiB",
                                               "in use MiB", "controllers' RSS MiB"))
        for t, log, snap, size, used, rss in samples:
            print("%8.0f %10d %10d %12.1f %12.1f  %s" % (
                t, log, snap, size, used, " ".join("%.0f" % r for r in rss)))
        snaps = [line for line in open(work + "/run/server.log")
                 if "snapshot of the state" in line]
        print("%d snapshots; the last: %s" % (len(snaps), snaps[-1].strip() if snaps else "-"))
    finally:
        etcd_members.stop(members)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
