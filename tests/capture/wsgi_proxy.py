# A WSGI service for tests/capture/real_servers_handoff_test.cc, run by uWSGI behind nginx
# (uwsgi_pass, the uwsgi protocol): every request sent on to the backend (WEFT_BACKEND,
# host:port) on a connection of its own, the request's X-Weft-Ids header passed on, the
# backend's reply and its X-Weft-Ids sent back.
import http.client
import os

host, port = os.environ["WEFT_BACKEND"].rsplit(":", 1)


def application(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else None
    connection = http.client.HTTPConnection(host, int(port))
    connection.request(environ["REQUEST_METHOD"], environ.get("REQUEST_URI", "/"), body=body,
                       headers={"X-Weft-Ids": environ.get("HTTP_X_WEFT_IDS", "")})
    reply = connection.getresponse()
    content = reply.read()
    connection.close()
    start_response(f"{reply.status} {reply.reason}",
                   [("X-Weft-Ids", reply.getheader("X-Weft-Ids", "")),
                    ("Content-Length", str(len(content)))])
    return [content]
