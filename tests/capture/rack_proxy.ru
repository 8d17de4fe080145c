# A Rack service for tests/capture/real_servers_handoff_test.cc, served by Puma (one
# process, a pool of threads): every request sent on to the backend (WEFT_BACKEND,
# host:port) on a connection of its own, the request's X-Weft-Ids header passed on, the
# backend's reply and its X-Weft-Ids sent back.
require 'net/http'

host, port = ENV.fetch('WEFT_BACKEND').split(':')

run lambda { |env|
  request = Net::HTTPGenericRequest.new(env['REQUEST_METHOD'], true, true, env['REQUEST_URI'] || '/')
  request['X-Weft-Ids'] = env['HTTP_X_WEFT_IDS'].to_s
  body = env['rack.input'].read
  request.body = body unless body.empty?
  reply = Net::HTTP.start(host, port.to_i) { |http| http.request(request) }
  [reply.code.to_i, { 'X-Weft-Ids' => reply['X-Weft-Ids'].to_s, 'Content-Length' => reply.body.bytesize.to_s },
   [reply.body]]
}
