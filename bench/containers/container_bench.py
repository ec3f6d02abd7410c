#!/usr/bin/env python3
"""Containers beside plain processes (issue 19): start latency and throughput.

Starts one controller and AGENTS agents (8 fake GPUs each; podman with --podman-arg limits for
hosts whose hard limits are below podman's defaults) on loopback ports in a temporary
directory and imports an image from the static busybox (busybox-static). Then:

  latency     RUNS jobs of `touch $GANGWAY_CHECKPOINT_DIR/up; sleep 2` (no GPU) as a process
              and RUNS in a container, one at a time, each polled every millisecond: until
              the controller reports it running (for a container: its podman process
              started), and until the file it touches exists (the command itself ran, inside
              the container for the second kind). Prints p50, p90 and max of each.
  throughput  JOBS one-GPU jobs of `true` submitted at once as processes, then JOBS in
              containers; prints the time from the first submit to the last job succeeded,
              and jobs per second.

Nothing is asserted. Needs root and podman.

  bench/containers/container_bench.py [--gangway build/release/gangway] latency [--runs 20]
  bench/containers/container_bench.py throughput [--agents 4] [--jobs 256]
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


def throughput(url, token, image, jobs, nodes, work):
    for kind in ("process", "container"):
        job = {"name": kind, "gpu": 1, "command": ["true"]}
        if kind == "container":
            job["container"] = {"image": image}
        body = json.dumps(job).encode()
        t0 = time.monotonic()
        ids = [call("POST", url + "/v1/jobs", token, body)["job"]["id"] for _ in range(jobs)]
        submitted = time.monotonic() - t0
        left = set(ids)
        while left:
            for job_id in list(left):
                state = call("GET", "%s/v1/jobs/%d" % (url, job_id), token)["job"]["state"]
                if state == "failed":
                    sys.exit("a %s job failed: see %s/agent-*.log" % (kind, work))
                if state == "succeeded":
                    left.discard(job_id)
            time.sleep(0.05)
        total = time.monotonic() - t0
        print("%-9s %d one-GPU jobs on %d agents x 8 GPUs: submitted in %.2f s, all succeeded "
              "after %.2f s: %.1f jobs/s" % (kind, jobs, nodes, submitted, total, jobs / total),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gangway", default="build/release/gangway")
    ap.add_argument("mode", choices=("latency", "throughput"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--agents", type=int, default=None, help="default: 1 (latency), 4")
    ap.add_argument("--jobs", type=int, default=256)
    args = ap.parse_args()
    agents = args.agents or (1 if args.mode == "latency" else 4)
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
        nodes = ["n%d" % (i + 1) for i in range(agents)]
        for node in nodes:
            procs.append(subprocess.Popen(
                [gangway, "agent", "--server", url, "--join-token-file",
                 work + "/server/join.token", "--name", node, "--fake-gpus", "8xH100-80GB",
                 "--data", work + "/agent-" + node,
                 "--podman-arg=--ulimit=nofile=%d:%d" % (soft, hard),
                 "--podman-arg=--ulimit=nproc=1024:1024"],
                stdout=subprocess.DEVNULL, stderr=open(work + "/agent-%s.log" % node, "w")))

        def ready():
            try:
                return all(call("GET", url + "/v1/nodes/" + n, token)["node"]["state"] == "ready"
                           for n in nodes)
            except OSError:
                return False
        wait(ready, 20, "the agents")
        if args.mode == "throughput":
            throughput(url, token, image, args.jobs, len(nodes), work)
            return
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
