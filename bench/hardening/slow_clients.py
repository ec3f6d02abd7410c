#!/usr/bin/env python3
"""Slow-header clients (slowloris) for bench/hardening/hostile_inputs.sh.

Opens `count` connections to 127.0.0.1:PORT, spread over `addresses` source addresses
(127.0.0.2, 127.0.0.3, ...: all of 127/8 is loopback), sends part of a request's headers on
each and then one more byte every `trickle` seconds, for `seconds` in all. Prints one JSON line:
how many connections were answered at once (and with what), how many the server cut and after
how long, how many were still open at the end.
Usage: slow_clients.py PORT COUNT ADDRESSES SECONDS [TRICKLE]
"""
import json
import select
import socket
import sys
import time

port, count, addresses, seconds = (int(a) for a in sys.argv[1:5])
trickle = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
start = time.monotonic()
conns = {}  # socket -> opened at
answered, cut_after = {}, []
for i in range(count):
    s = socket.socket()
    s.bind((f"127.0.0.{2 + i % addresses}", 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: controller\r\nX-Slow: ")
    conns[s] = time.monotonic()
next_byte = time.monotonic() + trickle
while conns and time.monotonic() - start < seconds:
    ready, _, _ = select.select(list(conns), [], [], 0.05)
    for s in ready:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else None
        if status:
            answered[status] = answered.get(status, 0) + 1
        else:
            cut_after.append(time.monotonic() - conns[s])
        s.close()
        del conns[s]
    if time.monotonic() >= next_byte:
        for s in list(conns):
            try:
                s.send(b"x")
            except OSError:
                pass
        next_byte += trickle
cut_after.sort()
print(json.dumps({
    "connections": count,
    "addresses": addresses,
    "answered_at_once": answered,
    "cut": len(cut_after),
    "cut_after_s": {"min": round(cut_after[0], 2), "max": round(cut_after[-1], 2)} if cut_after else None,
    "still_open": len(conns),
}))
for s in conns:
    s.close()
