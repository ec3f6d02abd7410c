#!/usr/bin/env python3
"""Submit-to-running of a busybox container beside a plain process (issue 19).

Starts one controller and one agent (fake GPUs, podman with --podman-arg limits for hosts
whose hard limits are below podman's defaults) on loopback ports in a temporary directory,
imports an image from the static busybox (busybox-static), then submits RUNS jobs of
`touch $GANGWAY_CHECKPOINT_DIR/up; sleep 2` (no GPU) as a process and RUNS in a container,
one at a time, and polls each every millisecond: until the controller reports it running
(for a container: its podman process started), and until the file it touches exists (the
command itself ran, inside the container for the second kind). Prints p50, p90 and max of each;
nothing is asserted. Needs root and podman.

  bench/containers/start_latency.py [--gangway build/release/gangway] [--runs 20]
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, token, body=None):
    req = urllib.request.Request(url, method=method, data=body)
    req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=5) as res:
        return json.loads(res.read())


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    sys.exit("timed out waiting for " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gangway", default="build/release/gangway")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.access("/usr/bin/podman", os.X_OK):
        sys.exit("needs root and /usr/bin/podman")
    gangway = os.path.abspath(args.gangway)
    work = tempfile.mkdtemp(prefix="gangway-ctr-bench-")
    image = "localhost/gangway-bench-busybox:%d" % os.getpid()
    procs = []
    try:
        root = os.path.join(work, "rootfs")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copy("/bin/busybox", os.path.join(root, "bin/busybox"))
        for tool in ("sh", "sleep", "true"):
            os.symlink("busybox", os.path.join(root, "bin", tool))
        subprocess.run(["tar", "-C", root, "-cf", work + "/rootfs.tar", "."], check=True)
        subprocess.run(["podman", "import", "-q", work + "/rootfs.tar", image], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        log = open(work + "/server.log", "w")
        procs.append(subprocess.Popen([gangway, "server", "--data", work + "/server",
                                       "--listen", "127.0.0.1:%d" % port], stdout=log, stderr=log))
        wait(lambda: os.path.exists(work + "/server/client.json"), 10, "the controller")
        token = json.load(open(work + "/server/client.json"))["token"]
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        procs.append(subprocess.Popen(
            [gangway, "agent", "--server", url, "--join-token-file", work + "/server/join.token",
             "--name", "n1", "--fake-gpus", "8xH100-80GB", "--data", work + "/agent",
             "--podman-arg=--ulimit=nofile=%d:%d" % (soft, hard),
             "--podman-arg=--ulimit=nproc=1024:1024"],
            stdout=subprocess.DEVNULL, stderr=open(work + "/agent.log", "w")))

        def ready():
            try:
                return call("GET", url + "/v1/nodes/n1", token)["node"]["state"] == "ready"
            except OSError:
                return False
        wait(ready, 20, "the agent")
        for kind in ("process", "container"):
            running, output = [], []
            for _ in range(args.runs):
                job = {"name": kind, "gpu": 0,
                       "command": ["sh", "-c", "touch $GANGWAY_CHECKPOINT_DIR/up; sleep 2"]}
                if kind == "container":
                    job["container"] = {"image": image}
                t0 = time.monotonic()
                job_id = call("POST", url + "/v1/jobs", token, json.dumps(job).encode())["job"]["id"]
                seen_running = None
                while True:
                    state = call("GET", "%s/v1/jobs/%d" % (url, job_id), token)["job"]["state"]
                    if state == "failed":
                        sys.exit("a %s job failed: see %s/agent.log" % (kind, work))
                    if seen_running is None and state in ("running", "succeeded"):
                        seen_running = time.monotonic() - t0
                    if seen_running is not None and os.path.exists(
                            "%s/server/checkpoints/%d/up" % (work, job_id)):
                        break
                    time.sleep(0.001)
                running.append(seen_running)
                output.append(time.monotonic() - t0)
            for what, times in (("running", running), ("its command", output)):
                times.sort()
                p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
                print("%-9s submit to %-12s over %d jobs: p50 %.1f ms, p90 %.1f ms, max %.1f ms"
                      % (kind, what, len(times), 1000 * statistics.median(times), 1000 * p90,
                         1000 * times[-1]), flush=True)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["podman", "rmi", "-f", image], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
