#!/usr/bin/python3
# A CGI program for tests/capture/real_servers_handoff_test.cc, run by Apache's mod_cgid:
# the request sent on to the backend (WEFT_BACKEND, host:port, from Apache's SetEnv) on a
# connection of its own, its X-Weft-Ids header passed on, the backend's reply and its
# X-Weft-Ids sent back.
import http.client, os, sys
host, port = os.environ["WEFT_BACKEND"].split(":")
length = int(os.environ.get("CONTENT_LENGTH") or 0)
body = sys.stdin.buffer.read(length) if length else b""
conn = http.client.HTTPConnection(host, int(port))
conn.request(os.environ["REQUEST_METHOD"], os.environ["REQUEST_URI"], body,
             {"X-Weft-Ids": os.environ.get("HTTP_X_WEFT_IDS", ""), "Connection": "close"})
reply = conn.getresponse()
data = reply.read()
sys.stdout.buffer.write(b"X-Weft-Ids: " + (reply.getheader("X-Weft-Ids") or "").encode() +
                        b"\r\nContent-Type: application/octet-stream\r\n\r\n" + data)
sys.stdout.buffer.flush()
