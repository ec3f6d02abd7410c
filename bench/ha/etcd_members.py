"""etcd members on loopback ports for the high-availability benchmarks (bench/ha/*.py)."""

import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(work, count=3):
    """Starts `count` members with their data and logs under `work`; waits until the first
    answers. Returns (processes, client URLs)."""
    clients = ["http://127.0.0.1:%d" % free_port() for _ in range(count)]
    peers = ["http://127.0.0.1:%d" % free_port() for _ in range(count)]
    initial = ",".join("m%d=%s" % (i + 1, p) for i, p in enumerate(peers))
    members = []
    for i in range(count):
        members.append(subprocess.Popen(
            ["etcd", "--name", "m%d" % (i + 1), "--data-dir", "%s/etcd-%d" % (work, i + 1),
             "--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
             "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
             "--initial-cluster", initial],
            stdout=subprocess.DEVNULL, stderr=open("%s/etcd-%d.log" % (work, i + 1), "w")))
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(clients[0] + "/health", timeout=1)
            return members, clients
        except OSError:
            if time.monotonic() > deadline:
                stop(members)
                sys.exit("etcd did not start; see " + work)
            time.sleep(0.1)


def stop(processes):
    """SIGTERM to each, then SIGKILL to any still there after 10 s."""
    for p in processes:
        if p and p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        if p:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
