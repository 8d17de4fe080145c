#!/usr/bin/python3
"""An HTTP server that accepts the upgrade to h2c (RFC 7540 §3.2), for the http2
processor's real-server test: nginx does not implement `Upgrade: h2c`, and Debian packages
no server that does (nghttpd is not packaged), so this one is built on python3-h2.

    h2c_upgrade_server.py PORT [CONNECTIONS]

Each connection: reads the HTTP/1.1 request, answers 101 Switching Protocols with
`Upgrade: h2c`, then speaks HTTP/2 (python3-h2): the upgraded request is stream 1, every
later stream is answered the same way, `200` with a body naming the path. Requests without
`Upgrade: h2c` get a plain HTTP/1.1 answer. Serves one connection at a time, and exits
after CONNECTIONS of them (a test's log is then whole: it ends as programs end), or runs
until killed.
"""
import socket
import sys

import h2.config
import h2.connection
import h2.events


def answer(conn, stream, path):
    body = ("you asked for " + path + "\n").encode()
    conn.send_headers(stream, [(":status", "200"), ("content-length", str(len(body)))])
    conn.send_data(stream, body, end_stream=True)


def serve(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(65536)
        if not data:
            return
        head += data
    head, rest = head.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "h2c" not in fields.get("upgrade", "").lower():
        body = b"no upgrade\n"
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        return
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    conn.initiate_upgrade_connection(fields.get("http2-settings", ""))
    sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
    answer(conn, 1, path)
    sock.sendall(conn.data_to_send())
    data = rest
    while True:
        if not data:
            data = sock.recv(65536)
            if not data:
                return
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                headers = {k.decode() if isinstance(k, bytes) else k:
                           v.decode() if isinstance(v, bytes) else v for k, v in event.headers}
                answer(conn, event.stream_id, headers.get(":path", "/"))
            elif isinstance(event, h2.events.ConnectionTerminated):
                sock.sendall(conn.data_to_send())
                return
        data = b""
        out = conn.data_to_send()
        if out:
            sock.sendall(out)


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen(16)
    left = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    while left != 0:
        left -= 1
        sock, _ = listener.accept()
        try:
            serve(sock)
        except Exception as error:  # a broken connection ends it, not the server
            print("h2c_upgrade_server:", error, file=sys.stderr)
        finally:
            sock.close()


if __name__ == "__main__":
    main()
