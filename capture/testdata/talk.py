#!/usr/bin/python3
"""Makes known TCP traffic on loopback for the capture fixtures: one IPv4 and
one IPv6 connection to PORT; the client sends REQUEST, the server answers
RESPONSE, then both close."""
import socket, sys, threading

PORT = int(sys.argv[1])
REQUEST = b"request bytes " * 300   # 4200 bytes: several segments
RESPONSE = b"response bytes\n" * 10

def serve(family, addr, ready):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, PORT))
    s.listen(1)
    ready.set()
    c, _ = s.accept()
    got = b""
    while len(got) < len(REQUEST):
        got += c.recv(65536)
    c.sendall(RESPONSE)
    c.close()
    s.close()

for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    ready = threading.Event()
    t = threading.Thread(target=serve, args=(family, addr, ready))
    t.start()
    ready.wait()
    c = socket.create_connection((addr, PORT))
    c.sendall(REQUEST)
    got = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
    assert got == RESPONSE
    c.close()
    t.join()
