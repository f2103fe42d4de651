#!/usr/bin/env python3
"""soak_stranger.py - a stranger hammering a rill task's port, for scripts/soak.sh.

    scripts/soak_stranger.py HOST:PORT --seconds N [--threads K] [--spec SPEC --task NAME]

Until N seconds have passed, K threads open connection after connection to the port (at most
--rate a second in all: closed connections wait out TIME_WAIT on their ports, and a flood of
them would take the ephemeral ports the cluster's own tasks need), each doing one of the quick
things below at random, while 2 more threads keep slow ones going (half handshakes and stalled
payloads). src/distributed/wire.h has the frames, transport.c the handshake.

  close        connect and close at once
  garbage      random bytes (1 B - 8 KiB), then close
  half         read the CHALLENGE, send part of a HANDSHAKE frame, then wait for the server to
               give up on it (its handshake deadline, 2 s)
  big_meta     a HANDSHAKE header announcing 1 MiB of meta (a handshake is at most 512 B)
  big_payload  a header announcing a 1 TiB payload, before any handshake
  no_cluster   a well-formed handshake naming no cluster (refused: PERMISSION_DENIED)
  bad_version  a handshake of another wire version

and, with --spec (the cluster spec as the tasks print it: its BLAKE2b is the cluster's id) and
--task (a task of that cluster to claim to be; without a secret the identity is a claim), it
gets past the handshake and then sends:

  junk_request  a REQUEST with random meta (answered with an error, or the connection closed)
  junk_push     a PUSH with random meta (dropped)
  huge_request  a REQUEST announcing a 4 GiB payload (over the 1 GiB limit: closed at the header)
  stall_payload a REQUEST announcing 64 MiB of payload, a little of it, then nothing (the
                server's frame deadline, or the stranger hangs up after up to 3 s)
  heartbeat     a HEARTBEAT, whose ACK it reads

Every socket operation has a timeout, so a thread never blocks for long. At the end it prints
one line: "stranger: N connections in S s: mode=count ..." (on SIGTERM, once the threads'
  current connections end).
Only the standard library is used.
"""
import argparse
import hashlib
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

MAGIC = b"RILL"
VERSION = 2
CHALLENGE, HANDSHAKE, HANDSHAKE_OK, REQUEST, RESPONSE, ERROR, HEARTBEAT, HEARTBEAT_ACK, PUSH = range(1, 10)
RPC_TENSOR_GUESS = 7  # any u32: a wrong RPC type is an answered error too


def header(typ, meta_len, payload_len=0, request_id=0, version=VERSION):
    return struct.pack("<4sBBHQIIQ", MAGIC, version, typ, 0, request_id, meta_len, 0, payload_len)


def read_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise ConnectionError("closed")
        out += b
    return out


def read_frame(s):
    h = read_exact(s, 32)
    _, _, typ, _, _, mlen, _, plen = struct.unpack("<4sBBHQIIQ", h)
    if mlen > (1 << 20) or plen > (1 << 20):
        raise ConnectionError("oversized frame from the server")
    read_exact(s, mlen + plen)
    return typ


def hello(cluster_id, task, version=VERSION):
    t = task.encode()
    return (struct.pack("<II", version, 0) + os.urandom(32) + cluster_id + bytes(16) +
            struct.pack("<H", len(t)) + t)


class Stranger:
    def __init__(self, addr, seconds, spec, task, rate):
        host, port = addr.rsplit(":", 1)
        self.addr = (host, int(port))
        self.end = time.monotonic() + seconds
        self.start = time.monotonic()
        self.cluster = hashlib.blake2b(spec.encode(), digest_size=32).digest() if spec else None
        self.task = task or ""
        self.mu = threading.Lock()
        self.counts = {}
        self.admitted = 0
        self.stop = False
        self.gap = 1.0 / rate  # between one thread's connections
        self.modes = ["close", "garbage", "big_meta", "big_payload", "no_cluster", "bad_version"]
        self.slow = ["half"]
        if self.cluster:
            self.modes += ["junk_request", "junk_push", "huge_request", "heartbeat"] * 2
            self.slow += ["stall_payload"]

    def count(self, mode):
        with self.mu:
            self.counts[mode] = self.counts.get(mode, 0) + 1

    def connect(self):
        s = socket.create_connection(self.addr, timeout=2)
        s.settimeout(3)
        return s

    def admitted_conn(self):
        """A connection past the handshake, or None when the server refused it."""
        s = self.connect()
        if read_frame(s) != CHALLENGE:
            s.close()
            return None
        m = hello(self.cluster, self.task)
        s.sendall(header(HANDSHAKE, len(m)) + m)
        if read_frame(s) != HANDSHAKE_OK:
            s.close()
            return None
        with self.mu:
            self.admitted += 1
        return s

    def one(self, mode):
        s = None
        try:
            if mode in ("junk_request", "junk_push", "huge_request", "stall_payload", "heartbeat"):
                s = self.admitted_conn()
                if s is None:
                    return
                if mode == "junk_request":
                    m = struct.pack("<I", random.randrange(0, 64)) + os.urandom(random.randrange(0, 600))
                    s.sendall(header(REQUEST, len(m), 0, random.getrandbits(63)) + m)
                    read_frame(s)
                elif mode == "junk_push":
                    m = struct.pack("<I", RPC_TENSOR_GUESS) + os.urandom(random.randrange(0, 600))
                    p = os.urandom(random.randrange(0, 4096))
                    s.sendall(header(PUSH, len(m), len(p)) + m + p)
                elif mode == "huge_request":
                    m = struct.pack("<I", 1) + os.urandom(16)
                    s.sendall(header(REQUEST, len(m), 4 << 30, 1) + m)
                    s.recv(4096)  # the server closes it
                elif mode == "stall_payload":
                    m = struct.pack("<I", 1) + os.urandom(16)
                    s.sendall(header(REQUEST, len(m), 64 << 20, 1) + m + os.urandom(4096))
                    time.sleep(random.uniform(0, 3))
                else:
                    s.sendall(header(HEARTBEAT, 0, 0, 5))
                    read_frame(s)
                return
            s = self.connect()
            if mode == "close":
                pass
            elif mode == "garbage":
                s.sendall(os.urandom(random.randrange(1, 8192)))
            elif mode == "half":
                read_frame(s)
                m = hello(self.cluster or bytes(32), self.task)
                whole = header(HANDSHAKE, len(m)) + m
                s.sendall(whole[:random.randrange(1, len(whole))])
                s.recv(4096)  # the server's error, or its close at the deadline
                s.recv(4096)
            elif mode == "big_meta":
                s.sendall(header(HANDSHAKE, 1 << 20) + os.urandom(1024))
                s.recv(4096)
            elif mode == "big_payload":
                s.sendall(header(HANDSHAKE, 16, 1 << 40) + os.urandom(16))
                s.recv(4096)
            elif mode in ("no_cluster", "bad_version"):
                read_frame(s)
                m = hello(bytes(32), self.task or "/job:nobody/replica:0/task:0",
                          VERSION if mode == "no_cluster" else VERSION + 7)
                s.sendall(header(HANDSHAKE, len(m)) + m)
                read_frame(s)
        except (OSError, ConnectionError):
            pass  # refused, reset, closed, timed out: all expected
        finally:
            if s is not None:
                s.close()

    def loop(self, modes):
        while not self.stop and time.monotonic() < self.end:
            t = time.monotonic()
            mode = random.choice(modes)
            self.count(mode)
            self.one(mode)
            time.sleep(max(0.0, t + self.gap - time.monotonic()))

    def summary(self):
        with self.mu:
            n = sum(self.counts.values())
            parts = " ".join("%s=%d" % kv for kv in sorted(self.counts.items()))
            return "stranger: %d connections in %.0f s (%d admitted past the handshake): %s" % (
                n, time.monotonic() - self.start, self.admitted, parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("address", help="HOST:PORT of the task to hammer")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rate", type=float, default=200, help="connections a second, at most")
    ap.add_argument("--spec", default="", help="the cluster spec as the tasks print it")
    ap.add_argument("--task", default="", help="a task of the cluster to claim to be")
    a = ap.parse_args()
    st = Stranger(a.address, a.seconds, a.spec, a.task, a.rate / max(a.threads, 1))

    def on_term(*_):
        st.stop = True

    signal.signal(signal.SIGTERM, on_term)
    ts = [threading.Thread(target=st.loop, args=(st.modes,), daemon=True)
          for _ in range(a.threads)]
    ts += [threading.Thread(target=st.loop, args=(st.slow,), daemon=True) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        while t.is_alive():
            t.join(0.5)
    print(st.summary(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
