// A capture directory on disk with two good logs and two that cannot be read, built with
// the independent event log writer (tests/capture/event_log_writer.h): a client that sends
// an 11-byte request and reads a 17-byte reply, its server, a stray file named like a log,
// and a copy of the client's log whose header was damaged after it was written.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "capture/event_log_writer.h"

namespace weft::reconcile::testing {

struct DamagedDirectory {
  std::string stray;    // path of the stray file
  std::string damaged;  // path of the log with the damaged header
};

inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Writes the four files under `dir`/testhost/.
inline DamagedDirectory WriteDamagedDirectory(const std::filesystem::path& dir) {
  namespace t = capture::testing;
  namespace w = capture::wire;
  std::filesystem::path host = dir / "testhost";
  std::filesystem::create_directories(host);
  t::TestHeader client_header;
  client_header.pid = 100;
  client_header.executable = "/usr/bin/client";
  client_header.arguments = {"client"};
  std::string client = t::EncodeHeader(client_header) +
                       t::Block(100, 0,
                                {t::CallRecord(w::kOpConnect, 5, 120, 150, 0),
                                 t::TcpEndpointRecord(w::kOpConnect, 5, 150, 40000, 8080),
                                 t::CallRecord(w::kOpSend, 5, 200, 210, 11),
                                 t::CallRecord(w::kOpRecv, 5, 320, 330, 17)}) +
                       t::Block(0, 0, {t::EndRecord(0, 0, 0)});
  t::TestHeader server_header;
  server_header.pid = 200;
  server_header.executable = "/usr/bin/server";
  server_header.arguments = {"server"};
  std::string server = t::EncodeHeader(server_header) +
                       t::Block(200, 0,
                                {t::CallRecord(w::kOpAccept, 7, 100, 160, 7),
                                 t::TcpEndpointRecord(w::kOpAccept, 7, 160, 8080, 40000),
                                 t::CallRecord(w::kOpRecv, 7, 220, 230, 11),
                                 t::CallRecord(w::kOpSend, 7, 300, 310, 17)}) +
                       t::Block(0, 0, {t::EndRecord(0, 0, 0)});
  std::string damaged = client;
  damaged[sizeof(w::FileHeader)] ^= 0x20;  // the host name's first byte: the header sum fails
  WriteFile(host / "100.wev", client);
  WriteFile(host / "200.wev", server);
  WriteFile(host / "300.wev", damaged);
  WriteFile(host / "stray.wev", "notes, not a log\n");
  return {(host / "stray.wev").string(), (host / "300.wev").string()};
}

}  // namespace weft::reconcile::testing
