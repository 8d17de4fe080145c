// A reverse proxy in Node.js for tests/capture/real_servers_handoff_test.cc: one event
// loop, every request sent on to the backend over a pool of kept connections (8 at most)
// that any request may use, the request's headers (the testbed's X-Weft-Ids among them)
// passed on, the backend's reply piped back.
//   node node_proxy.js PORT BACKEND_PORT
'use strict';
const http = require('http');

const [port, backend] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

http.createServer((request, response) => {
  const upstream = http.request({
    host: '127.0.0.1',
    port: backend,
    method: request.method,
    path: request.url,
    headers: request.headers,
    agent,
  }, (reply) => {
    response.writeHead(reply.statusCode, reply.headers);
    reply.pipe(response);
  });
  upstream.on('error', () => {
    response.writeHead(502);
    response.end();
  });
  request.pipe(upstream);
}).listen(port, '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
