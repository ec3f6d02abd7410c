#!/usr/bin/env python3
"""From a gang's submission to its nodes asked for, booted and running (issue 22).

Starts `gangway server` with an autoscaled pool (all nodes off) and a resume program that
starts one `gangway agent --fake-gpus` per node asked for after --boot seconds, as a cloud
would, and a suspend program that stops them. RUNS times: submits a gang of --nodes x 8 GPUs
and measures, by polling the REST API every 10 ms, the time to the resume request (the
program's first line, stamped by the program itself), to the last node registered, and to
the job running; then waits until the idle nodes are powered off (--idle seconds) before the
next run. Prints every run and the medians; nothing is asserted.

  bench/live/autoscale_boot.py [--gangway build/release/gangway] [--runs 5] [--nodes 2]
                               [--boot 2] [--idle 2]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

TOKEN = "bench-admin-token-0123456789abcdef"
JOIN = "bench-join-token-0123456789abcdef"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None):
    req = urllib.request.Request(url, method=method, data=body)
    req.add_header("Authorization", "Bearer " + TOKEN)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=2.0) as res:
            return res.status, json.loads(res.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}
    except (OSError, ValueError):
        return 0, {}


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    sys.exit("timed out waiting for " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gangway", default="build/release/gangway")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--boot", type=float, default=2.0)
    ap.add_argument("--idle", type=int, default=2)
    args = ap.parse_args()
    gangway = os.path.abspath(args.gangway)
    work = tempfile.mkdtemp(prefix="gangway-autoscale-bench-")
    server = None
    try:
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        with open(work + "/auth.yaml", "w") as f:
            f.write("joinToken: %s\nusers:\n  - name: admin\n    token: %s\n    role: admin\n"
                    % (JOIN, TOKEN))
        with open(work + "/config.yaml", "w") as f:
            f.write("queues:\n  - name: default\npools:\n"
                    "  - {name: cloud, max: %d, bootTime: %ds, bootTimeout: 60s, idleTime: %ds,\n"
                    "     gpus: 8, model: H100-80GB, cpu: 1, memory: 1Gi}\n"
                    % (args.nodes, max(1, int(args.boot)), args.idle))
        nodes_of = ("printf '%s' \"$req\" | sed 's/.*\"nodes\":\\[\\([^]]*\\)\\].*/\\1/' | "
                    "tr -d '\"' | tr ',' ' '")
        with open(work + "/resume.sh", "w") as f:
            f.write("#!/bin/sh\nreq=$(cat)\ndate +%%s.%%N >> %s/resumed\n"
                    "for n in $(%s); do\n"
                    "  ( sleep %s; exec %s agent --server %s --join-token %s --name \"$n\" "
                    "--pool cloud --address 127.0.0.1 --fake-gpus 8xH100-80GB --data %s/agent-$n "
                    "--heartbeat 1s --shutdown-grace 1s ) > %s/agent-$n.log 2>&1 &\n"
                    "  echo $! > %s/pid-$n\n"
                    "done\n" % (work, nodes_of, args.boot, gangway, url, JOIN, work, work, work))
        with open(work + "/suspend.sh", "w") as f:
            f.write("#!/bin/sh\nreq=$(cat)\nfor n in $(%s); do\n"
                    "  [ -f %s/pid-$n ] && kill -TERM $(cat %s/pid-$n) 2>/dev/null\ndone\n"
                    "exit 0\n" % (nodes_of, work, work))
        for hook in ("resume.sh", "suspend.sh"):
            os.chmod(work + "/" + hook, 0o755)
        log = open(work + "/server.log", "w")
        server = subprocess.Popen(
            [gangway, "server", "--data", work + "/data", "--listen", "127.0.0.1:%d" % port,
             "--auth", work + "/auth.yaml", "--config", work + "/config.yaml",
             "--resume-program", work + "/resume.sh", "--suspend-program",
             work + "/suspend.sh", "--batch", "1ms"],
            stdout=log, stderr=log)
        wait(lambda: http("GET", url + "/healthz")[0] == 200, 10, "the controller")
        names = ["cloud-%d" % i for i in range(args.nodes)]

        def states():
            code, body = http("GET", url + "/v1/nodes")
            return {n["name"]: n["state"] for n in body.get("nodes", [])} if code == 200 else {}

        rows = []
        for run in range(args.runs):
            wait(lambda: all(states().get(n) == "off" for n in names), 60, "the nodes off")
            if os.path.exists(work + "/resumed"):
                os.remove(work + "/resumed")
            job = json.dumps({"name": "gang-%d" % run, "replicas": args.nodes, "gpu": 8,
                              "maxPerNode": 1, "command": ["true"]}).encode()
            t0 = time.time()
            code, body = http("POST", url + "/v1/jobs", job)
            if code not in (200, 201):
                sys.exit("submit failed: %d %s" % (code, body))
            job_id = body["job"]["id"]
            joined = None
            running = None
            while running is None and time.time() - t0 < 60:
                if joined is None and all(states().get(n) == "ready" for n in names):
                    joined = time.time()
                code, body = http("GET", url + "/v1/jobs/%d" % job_id)
                if code == 200 and body["job"]["state"] in ("running", "succeeded"):
                    running = time.time()
                    joined = joined or running
                time.sleep(0.01)
            if running is None:
                sys.exit("run %d: the job did not run" % run)
            resumed = float(open(work + "/resumed").read().split()[0])
            rows.append((resumed - t0, joined - t0, running - t0))
            print("run %d: resume requested %.3f s, nodes joined %.3f s, job running %.3f s"
                  % (run, *rows[-1]), flush=True)
        med = [statistics.median(r[i] for r in rows) for i in range(3)]
        print("median over %d runs (%d nodes, %.1f s boot): resume requested %.3f s, nodes "
              "joined %.3f s, job running %.3f s" % (len(rows), args.nodes, args.boot, *med))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        subprocess.run(["sh", "-c", "for p in %s/pid-*; do [ -f \"$p\" ] && "
                        "kill -TERM $(cat \"$p\") 2>/dev/null; done; true" % work])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
