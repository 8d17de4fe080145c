# A Flask service for tests/capture/real_servers_handoff_test.cc, served by gunicorn: every
# request sent on to the backend (WEFT_BACKEND, host:port) with the requests library over
# one session's pool of kept connections, shared by the worker's threads; the request's
# X-Weft-Ids header passed on, the backend's reply and its X-Weft-Ids sent back.
import os

import flask
import requests

app = flask.Flask(__name__)
backend = "http://" + os.environ["WEFT_BACKEND"]
session = requests.Session()
session.mount("http://", requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=8))


@app.route("/<path:path>", methods=["GET", "POST"])
def proxy(path):
    headers = {"X-Weft-Ids": flask.request.headers.get("X-Weft-Ids", "")}
    reply = session.request(flask.request.method, backend + "/" + path,
                            data=flask.request.get_data(), headers=headers)
    response = flask.Response(reply.content, status=reply.status_code)
    response.headers["X-Weft-Ids"] = reply.headers.get("X-Weft-Ids", "")
    return response
