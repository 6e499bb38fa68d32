#!/usr/bin/env python3
"""Pre-auth floods against the installed coordinator's web view (issue 28, item 2).

Run inside a host's network namespace by cluster_test.sh, against the
coordinator's --http-listen (TLS, the CA from gen-certs.sh). No credential is
sent except by `authorised`, which reads the token from a file (never argv).

  flood.py headers ADDR PORT CA     10 connections x 30,000 headers (431 each),
                                    then POST /login chunked, length-less and
                                    with a 32 MiB Content-Length (411, 411,
                                    413), each answered before a body byte
                                    is read; the body is sent after anyway
  flood.py slowloris ADDR PORT CA   16 clients sending a byte every 2 s; each
                                    must be cut (408) or refused (503), none
                                    left hanging past the deadline
  flood.py authorised ADDR PORT CA TOKEN_FILE [SOURCE]
                                    GET / with the bearer token, from SOURCE
                                    (an address of this host; by default
                                    the kernel's choice): prints the status
                                    and the seconds it took

Exits 1 with the reason when an answer is not the one expected.
"""
import socket
import ssl
import sys
import threading
import time


def connect(addr, port, ca, timeout=10, source=None):
    ctx = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection((addr, port), timeout=timeout,
                                   source_address=(source, 0) if source else None)
    return ctx.wrap_socket(raw, server_hostname=addr)


def read_reply(sock, seconds):
    """What the server sends until it closes or `seconds` pass."""
    sock.settimeout(seconds)
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ssl.SSLError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return data.decode("latin-1")


def status_of(reply):
    parts = reply.split(" ", 2)
    return parts[1] if len(parts) > 1 and parts[0].startswith("HTTP/") else "(none)"


def send_quietly(sock, data):
    """Sends until the server stops taking it; False once it has closed."""
    try:
        sock.sendall(data)
        return True
    except (ssl.SSLError, OSError):
        return False


def in_parallel(n, one):
    """Runs one(0) ... one(n - 1) on threads of their own; returns when all end."""
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def headers(addr, port, ca):
    head = b"GET / HTTP/1.1\r\nHost: head\r\n" + b"".join(
        b"X-Flood-%d: %s\r\n" % (i, b"f" * 64) for i in range(30000))
    statuses = [None] * 10

    def one(i):
        try:
            s = connect(addr, port, ca)
        except OSError as e:
            statuses[i] = f"connect: {e}"
            return
        send_quietly(s, head)
        statuses[i] = status_of(read_reply(s, 5))
        s.close()

    in_parallel(10, one)
    print(f"  header floods: {statuses.count('431')} of 10 answered 431")
    failures = [] if statuses.count("431") == 10 else [f"header floods answered {statuses}"]

    bodies = [
        (b"POST /login HTTP/1.1\r\nHost: head\r\nTransfer-Encoding: chunked\r\n\r\n", "411"),
        (b"POST /login HTTP/1.1\r\nHost: head\r\n\r\n", "411"),
        (b"POST /login HTTP/1.1\r\nHost: head\r\nContent-Length: 33554432\r\n\r\n", "413"),
    ]
    got = []
    for head_bytes, want in bodies:
        s = connect(addr, port, ca)
        send_quietly(s, head_bytes)
        status = status_of(read_reply(s, 3))
        got.append(status)
        if status != want:
            failures.append(f"{head_bytes.splitlines()[2]!r}: {status}, expected {want}")
        chunk = b"c" * (1 << 20)
        for _ in range(32):
            if not send_quietly(s, chunk):
                break
        s.close()
    print(f"  login bodies (chunked, length-less, 32 MiB): {' '.join(got)}")
    return failures


def slowloris(addr, port, ca):
    deadline_s = 10  # HttpLimits::request_deadline
    outcome = [None] * 16

    def one(i):
        try:
            s = connect(addr, port, ca)
        except OSError as e:
            outcome[i] = f"connect: {e}"
            return
        until = time.monotonic() + deadline_s + 4
        reply = ""
        alive = send_quietly(s, b"GET / HTTP/1.1\r\n")
        while alive and time.monotonic() < until:
            reply += read_reply(s, 2)
            if reply:
                break
            alive = send_quietly(s, b"X")
        reply += read_reply(s, 1)
        outcome[i] = status_of(reply)
        s.close()

    started = time.monotonic()
    in_parallel(16, one)
    took = time.monotonic() - started
    cut, refused = outcome.count("408"), outcome.count("503")
    print(f"  slow clients: {cut} cut at the deadline (408), {refused} refused (503), "
          f"all done in {took:.1f} s")
    failures = []
    if cut + refused != 16:
        failures.append(f"slow clients answered {outcome}")
    if took > deadline_s + 8:
        failures.append(f"slow clients held their connections for {took:.1f} s")
    return failures


def authorised(addr, port, ca, token_file, source):
    token = open(token_file, encoding="utf-8").read().strip()
    started = time.monotonic()
    s = connect(addr, port, ca, source=source)
    s.sendall(("GET / HTTP/1.1\r\nHost: head\r\nConnection: close\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode())
    status = status_of(read_reply(s, 10))
    took = time.monotonic() - started
    s.close()
    print(f"  an authorised GET / during the slow clients: {status} in {took:.2f} s")
    failures = []
    if status != "200":
        failures.append(f"the authorised request got {status}")
    if took >= 5:
        failures.append(f"the authorised request took {took:.2f} s (limit 5 s)")
    return failures


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mode, addr, port, ca = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if mode == "headers":
        failures = headers(addr, port, ca)
    elif mode == "slowloris":
        failures = slowloris(addr, port, ca)
    elif mode == "authorised" and len(sys.argv) in (6, 7):
        failures = authorised(addr, port, ca, sys.argv[5],
                              sys.argv[6] if len(sys.argv) == 7 else None)
    else:
        sys.exit(__doc__)
    for f in failures:
        print(f"flood.py {mode}: {f}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
