// An independent writer of the event log layout (docs/formats.md "Event log"), so reader
// tests and fuzz seeds can build exact logs, damaged ones included, without running the
// preload library.
#pragma once

#include <xxhash.h>

#include <cstring>
#include <string>
#include <vector>

#include "capture/event_log_format.h"
#include "capture/protocols/protocol.h"

namespace weft::capture::testing {

namespace w = weft::capture::wire;

inline uint32_t Sum32(const void* p, size_t n) { return static_cast<uint32_t>(XXH3_64bits(p, n)); }

template <typename T>
void Append(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

inline void Pad8(std::string& out) { out.append((8 - out.size() % 8) % 8, '\0'); }

struct TestHeader {
  uint32_t version = w::kBlockVersion;  // blocks; w::kVersion for chunks
  uint32_t chunk_size = 65536;          // block_size field
  int32_t pid = 4242;
  int32_t parent_pid = 4241;
  uint32_t exec_index = 0;
  std::string host = "testhost";
  std::string executable = "/usr/bin/probe";
  std::vector<std::string> arguments = {"probe", "--flag"};
};

inline std::string EncodeHeader(const TestHeader& t) {
  w::FileHeader h{};
  std::memcpy(h.magic, w::kFileMagic, 8);
  h.version = t.version;
  h.pid = t.pid;
  h.parent_pid = t.parent_pid;
  h.exec_index = t.exec_index;
  h.clock_realtime_ns = 1'700'000'000'000'000'000;
  h.clock_monotonic_ns = 1'000'000'000;
  h.clock_uncertainty_ns = 40;
  for (int i = 0; i < 16; ++i) h.boot_id[i] = uint8_t(i + 1);
  h.block_size = t.chunk_size;
  std::string args;
  for (size_t i = 0; i < t.arguments.size(); ++i) {
    if (i > 0) args.push_back('\0');
    args += t.arguments[i];
  }
  h.host_length = uint32_t(t.host.size());
  h.executable_length = uint32_t(t.executable.size());
  h.arguments_length = uint32_t(args.size());
  h.argument_count = uint32_t(t.arguments.size());
  std::string out;
  Append(out, h);
  out += t.host + t.executable + args;
  Pad8(out);
  uint32_t size = uint32_t(out.size());
  std::memcpy(out.data() + offsetof(w::FileHeader, header_size), &size, 4);
  uint32_t sum = Sum32(out.data(), out.size());
  std::memcpy(out.data() + offsetof(w::FileHeader, header_checksum), &sum, 4);
  return out;
}

inline std::string CallRecord(uint8_t op, int32_t fd, int64_t entry, int64_t exit, int32_t result,
                              int32_t arg = 0) {
  w::CallRecord r{w::kCallRecord, op, sizeof(w::CallRecord), fd, entry, exit, result, arg};
  std::string out;
  Append(out, r);
  return out;
}

inline std::string DatagramRecord(uint8_t op, int32_t fd, int64_t entry, int32_t result,
                                  uint64_t hash, uint16_t port) {
  w::DatagramRecord r{};
  r.call = {w::kDatagramRecord, op, sizeof(w::DatagramRecord), fd, entry, entry + 10, result, 0};
  r.payload_hash = hash;
  r.peer.family = w::kFamilyIpv4;
  r.peer.port = port;
  r.peer.addr[0] = 127;
  r.peer.addr[3] = 1;
  std::string out;
  Append(out, r);
  return out;
}

inline std::string TcpEndpointRecord(uint8_t op, int32_t fd, int64_t time, uint16_t local_port,
                                     uint16_t peer_port) {
  w::EndpointRecord r{};
  r.type = w::kEndpointRecord;
  r.op = op;
  r.size = sizeof r;
  r.fd = fd;
  r.time_ns = time;
  r.kind = w::kKindTcp;
  r.inode = 777;
  r.local.family = w::kFamilyIpv4;
  r.local.port = local_port;
  r.local.addr[0] = 127;
  r.local.addr[3] = 1;
  r.peer = r.local;
  r.peer.port = peer_port;
  std::string out;
  Append(out, r);
  return out;
}

inline std::string UnixEndpointRecord(int32_t fd, int64_t time, const std::string& peer_path,
                                      int32_t peer_pid) {
  w::EndpointRecord r{};
  r.type = w::kEndpointRecord;
  r.op = w::kOpConnect;
  r.size = uint16_t(w::RoundUp8(sizeof r + peer_path.size()));
  r.fd = fd;
  r.time_ns = time;
  r.kind = w::kKindUnixStream;
  r.peer_pid = peer_pid;
  r.local.family = w::kFamilyUnix;
  r.peer.family = w::kFamilyUnix;
  r.peer.path_length = uint8_t(peer_path.size());
  std::string out;
  Append(out, r);
  out += peer_path;
  Pad8(out);
  return out;
}

inline std::string ImageRecord(uint8_t runtime, int64_t time) {
  w::ImageRecord r{};
  r.type = w::kImageRecord;
  r.runtime = runtime;
  r.size = sizeof r;
  r.time_ns = time;
  std::string out;
  Append(out, r);
  return out;
}

inline std::string PayloadRecord(uint8_t op, int32_t fd, const std::string& bytes) {
  w::PayloadRecord r{w::kPayloadRecord,      op, uint16_t(w::RoundUp8(16 + bytes.size())), fd,
                     uint32_t(bytes.size()), 0};
  std::string out;
  Append(out, r);
  out += bytes;
  Pad8(out);
  return out;
}

// `attributes` as they go on the wire: "key=value\0key=value\0".
inline std::string BoundaryRecord(int32_t fd, int64_t entry, int64_t exit, uint64_t offset,
                                  uint8_t protocol, bool sent, bool request,
                                  const std::string& attributes) {
  w::BoundaryRecord r{};
  r.type = w::kBoundaryRecord;
  r.protocol = protocol;
  r.size = uint16_t(w::RoundUp8(uint32_t(sizeof r + attributes.size())));
  r.fd = fd;
  r.entry_ns = entry;
  r.exit_ns = exit;
  r.offset = offset;
  r.direction = sent ? w::kBoundarySent : w::kBoundaryReceived;
  r.message = request ? w::kBoundaryRequest : w::kBoundaryResponse;
  r.attributes_length = uint16_t(attributes.size());
  std::string out;
  Append(out, r);
  out += attributes;
  Pad8(out);
  return out;
}

// Header-block bytes (HTTP/2) at stream `offset`.
inline std::string HeaderBlockRecord(int32_t fd, int64_t entry, uint64_t offset, bool sent,
                                     bool request, const std::string& bytes,
                                     uint8_t protocol = weft::capture::protocols::kHttp2) {
  w::HeaderBlockRecord r{};
  r.type = w::kHeaderBlockRecord;
  r.protocol = protocol;
  r.size = uint16_t(w::RoundUp8(uint32_t(sizeof r + bytes.size())));
  r.fd = fd;
  r.entry_ns = entry;
  r.offset = offset;
  r.direction = sent ? w::kBoundarySent : w::kBoundaryReceived;
  r.message = request ? w::kBoundaryRequest : w::kBoundaryResponse;
  r.length = uint16_t(bytes.size());
  std::string out;
  Append(out, r);
  out += bytes;
  Pad8(out);
  return out;
}

// An HTTP/2 frame's end, as numbers.
inline std::string Http2FrameRecord(int32_t fd, int64_t entry, int64_t exit, uint64_t offset,
                                    bool sent, bool request, uint8_t frame_type, uint8_t flags,
                                    uint32_t stream, uint32_t length, uint32_t extra = 0) {
  w::Http2FrameRecord r{};
  r.type = w::kHttp2FrameRecord;
  r.frame_type = frame_type;
  r.size = sizeof r;
  r.fd = fd;
  r.entry_ns = entry;
  r.exit_ns = exit;
  r.offset = offset;
  r.direction = sent ? w::kBoundarySent : w::kBoundaryReceived;
  r.message = request ? w::kBoundaryRequest : w::kBoundaryResponse;
  r.flags = flags;
  r.stream = stream;
  r.length = length;
  r.extra = extra;
  std::string out;
  Append(out, r);
  return out;
}

inline std::string EndRecord(uint64_t dropped, uint64_t untraced, uint64_t failed) {
  w::EndRecord r{w::kEndRecord, w::kOpNone, sizeof(w::EndRecord), 0, 5'000'000'000, dropped,
                 untraced,      failed};
  std::string out;
  Append(out, r);
  return out;
}

// One block: header and the records concatenated, with both checksums.
inline std::string Block(int32_t tid, uint64_t dropped, const std::vector<std::string>& records) {
  std::string payload;
  for (const std::string& r : records) payload += r;
  w::BlockHeader h{w::kBlockMagic,
                   uint32_t(payload.size()),
                   uint32_t(records.size()),
                   tid,
                   dropped,
                   Sum32(payload.data(), payload.size()),
                   0};
  h.header_checksum = Sum32(&h, 28);
  std::string out;
  Append(out, h);
  return out + payload;
}

// One version 2 segment: header and the records committed. Sealed (size and checksum
// set) or left open, as a killed process leaves its threads' last segments.
inline std::string Segment(int32_t tid, uint64_t dropped, const std::vector<std::string>& records,
                           bool sealed) {
  std::string payload;
  for (const std::string& r : records) payload += r;
  w::SegmentHeader h{};
  h.magic = w::kSegmentMagic;
  h.tid = tid;
  h.dropped_events = dropped;
  h.header_checksum = Sum32(&h, 16);
  if (sealed) {
    h.sealed_size = uint32_t(payload.size());
    h.sealed_checksum = Sum32(payload.data(), payload.size());
  }
  std::string out;
  Append(out, h);
  return out + payload;
}

// One version 2 chunk of `chunk_size` bytes: segments back to back, then zeros.
inline std::string Chunk(const std::vector<std::string>& segments, uint32_t chunk_size = 65536) {
  std::string out;
  for (const std::string& s : segments) out += s;
  out.resize(chunk_size, '\0');
  return out;
}

}  // namespace weft::capture::testing
