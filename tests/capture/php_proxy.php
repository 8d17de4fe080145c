<?php
// A PHP service for tests/capture/real_servers_handoff_test.cc, run by php-fpm behind
// nginx (FastCGI): every request sent on to the backend (WEFT_BACKEND, host:port, from
// the php-fpm master's environment) on a connection of its own, the request's X-Weft-Ids
// header passed on, the backend's reply and its X-Weft-Ids sent back.
$ids = $_SERVER['HTTP_X_WEFT_IDS'] ?? '';
$context = stream_context_create(['http' => [
  'method' => $_SERVER['REQUEST_METHOD'],
  'header' => "X-Weft-Ids: $ids\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n",
  'content' => file_get_contents('php://input'),
  'ignore_errors' => true,
  'protocol_version' => 1.1,
]]);
$body = file_get_contents('http://' . getenv('WEFT_BACKEND') . $_SERVER['REQUEST_URI'], false,
                          $context);
foreach ($http_response_header as $line) {
  if (stripos($line, 'X-Weft-Ids:') === 0) header($line);
}
echo $body;
