// Reading an event log (docs/formats.md): its header, then its blocks (version 1) or its
// chunks' segments (version 2), each checked, damage skipped and counted, never fatal.
// event_names.cc has the operations' names and an event as a line of text.
#include "capture/event_log.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "capture/protocols/protocol.h"
#include "core/file.h"

namespace weft::capture {
namespace {

// A time the log can hold: non-negative and below 2^62 ns (146 years), so that a clock
// reference and an event time add and subtract without overflow. A damaged record or
// header outside it is corrupt.
bool PlausibleTime(int64_t t) { return t >= 0 && t < (int64_t(1) << 62); }

using wire::BlockHeader;
using wire::FileHeader;
using wire::SegmentHeader;

// Chunk sizes a version 2 header may give; anything else is damage.
constexpr uint32_t kMinChunkSize = 4096;
constexpr uint32_t kMaxChunkSize = 64 << 20;

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t Checksum32(const void* data, size_t size) {
  return static_cast<uint32_t>(XXH3_64bits(data, size));
}

bool ValidBlockHeader(std::span<const uint8_t> data, uint64_t at) {
  if (at + sizeof(BlockHeader) > data.size()) return false;
  auto h = Load<BlockHeader>(data.data() + at);
  return h.magic == wire::kBlockMagic && h.payload_size % 8 == 0 &&
         h.header_checksum == Checksum32(data.data() + at, 28);
}

Address DecodeAddress(const wire::WireAddress& w, std::string_view path) {
  Address a;
  a.family = static_cast<wire::AddressFamily>(w.family);
  a.port = w.port;
  a.scope_id = w.scope_id;
  std::memcpy(a.ip.data(), w.addr, 16);
  a.path = path;
  return a;
}

// Decodes the records of one block's payload into `log`. Stops at the first record that
// does not fit or makes no sense and returns the bytes it consumed.
class BlockDecoder {
 public:
  BlockDecoder(EventLog& log, int32_t tid) : log_(log), tid_(tid) {}

  uint64_t Decode(const uint8_t* p, uint64_t size) {
    uint64_t at = 0;
    while (size - at >= 8) {
      uint8_t type = p[at];
      uint16_t record_size = Load<uint16_t>(p + at + 2);
      if (record_size < 8 || record_size % 8 != 0 || record_size > size - at) break;
      if (!DecodeRecord(type, p + at, record_size)) break;
      at += record_size;
    }
    return at;
  }

 private:
  bool DecodeRecord(uint8_t type, const uint8_t* p, uint16_t size) {
    switch (type) {
      case wire::kCallRecord:
      case wire::kDatagramRecord: {
        bool datagram = type == wire::kDatagramRecord;
        if (size < (datagram ? sizeof(wire::DatagramRecord) : sizeof(wire::CallRecord))) {
          return false;
        }
        auto c = Load<wire::CallRecord>(p);
        bool sync_op =
            (c.op >= wire::kOpMutexLock && c.op <= wire::kOpLastSync) || wire::IsGrpcOp(c.op);
        if (c.op == wire::kOpNone || sync_op || c.op >= wire::kOpCount) return false;
        if (!PlausibleTime(c.entry_ns) || !PlausibleTime(c.exit_ns)) return false;
        Event e{.op = static_cast<EventOp>(c.op)};
        e.tid = tid_;
        e.fd = c.fd;
        e.entry_ns = c.entry_ns;
        e.exit_ns = c.exit_ns;
        e.result = c.result;
        e.arg = c.arg;
        if (datagram) {
          auto d = Load<wire::DatagramRecord>(p);
          e.datagram = true;
          e.payload_hash = d.payload_hash;
          if (d.peer.family != wire::kFamilyNone) {
            if (d.peer.family == wire::kFamilyUnix) {
              if (sizeof d + d.peer.path_length > size) return false;
              e.peer = Add(log_.addresses,
                           DecodeAddress(d.peer, {reinterpret_cast<const char*>(p) + sizeof d,
                                                  d.peer.path_length}));
            } else {
              e.peer = Add(log_.addresses, DecodeAddress(d.peer, {}));
            }
          }
        }
        log_.events.push_back(e);
        last_ = static_cast<int64_t>(log_.events.size()) - 1;
        return true;
      }
      case wire::kSyncRecord: {
        if (size < sizeof(wire::SyncRecord)) return false;
        auto r = Load<wire::SyncRecord>(p);
        if ((r.op < wire::kOpMutexLock || r.op > wire::kOpLastSync) && !wire::IsGrpcOp(r.op))
          return false;
        if (!PlausibleTime(r.entry_ns) || !PlausibleTime(r.exit_ns)) return false;
        Event e{.op = static_cast<EventOp>(r.op)};
        e.tid = tid_;
        e.entry_ns = r.entry_ns;
        e.exit_ns = r.exit_ns;
        e.result = r.result;
        e.object = r.object;
        e.second = r.second;
        log_.events.push_back(e);
        last_ = -1;  // a payload never follows a synchronisation record
        return true;
      }
      case wire::kEndpointRecord: {
        if (size < sizeof(wire::EndpointRecord)) return false;
        auto r = Load<wire::EndpointRecord>(p);
        uint32_t paths = uint32_t(r.local.path_length) + r.peer.path_length;
        if (sizeof r + paths > size || r.op >= wire::kOpCount || !PlausibleTime(r.time_ns))
          return false;
        const char* text = reinterpret_cast<const char*>(p) + sizeof r;
        Endpoint ep;
        ep.kind = static_cast<wire::SocketKind>(r.kind);
        ep.listening = r.listening != 0;
        ep.peer_pid = r.peer_pid;
        ep.inode = r.inode;
        ep.peer_inode = r.peer_inode;
        ep.local = DecodeAddress(r.local, {text, r.local.path_length});
        ep.peer = DecodeAddress(r.peer, {text + r.local.path_length, r.peer.path_length});
        Event e{.op = EventOp::kEndpoint};
        e.tid = tid_;
        e.fd = r.fd;
        e.entry_ns = e.exit_ns = r.time_ns;
        e.arg = r.op;
        e.endpoint = Add(log_.endpoints, std::move(ep));
        log_.events.push_back(e);
        last_ = -1;  // a payload never follows an endpoint record
        return true;
      }
      case wire::kPayloadRecord: {
        if (size < sizeof(wire::PayloadRecord)) return false;
        auto r = Load<wire::PayloadRecord>(p);
        if (sizeof r + uint64_t(r.length) > size) return false;
        if (last_ >= 0 && log_.events[last_].payload == kNone) {
          log_.events[last_].payload = Add(
              log_.payloads, std::string(reinterpret_cast<const char*>(p) + sizeof r, r.length));
        }
        return true;
      }
      case wire::kBoundaryRecord: {
        if (size < sizeof(wire::BoundaryRecord)) return false;
        auto r = Load<wire::BoundaryRecord>(p);
        if (sizeof r + uint64_t(r.attributes_length) > size || r.protocol == protocols::kNone ||
            r.protocol >= protocols::kProtocolCount || r.direction > wire::kBoundaryReceived ||
            r.message > wire::kBoundaryResponse || !PlausibleTime(r.entry_ns) ||
            !PlausibleTime(r.exit_ns) || r.offset > uint64_t(INT64_MAX)) {
          return false;
        }
        Boundary b = BoundaryAt(r.protocol, r.direction, r.message, r.offset);
        // "key=value" entries, each ended by NUL; an entry without '=' or an unended one
        // is damage.
        std::string_view text(reinterpret_cast<const char*>(p) + sizeof r, r.attributes_length);
        while (!text.empty()) {
          size_t end = text.find('\0');
          size_t equals = text.substr(0, end).find('=');
          if (end == std::string_view::npos || equals == std::string_view::npos || equals == 0) {
            return false;
          }
          b.attributes.emplace_back(text.substr(0, equals),
                                    text.substr(equals + 1, end - equals - 1));
          text.remove_prefix(end + 1);
        }
        AddBoundaryEvent(EventOp::kBoundary, r.fd, r.entry_ns, r.exit_ns, std::move(b));
        return true;
      }
      case wire::kHttp2FrameRecord: {
        if (size < sizeof(wire::Http2FrameRecord)) return false;
        auto r = Load<wire::Http2FrameRecord>(p);
        const uint8_t t = r.frame_type;  // a type the http2 processor reports
        const bool reported = t == 0 || t == 1 || t == 3 || t == 4 || t == 5 || t == 9;
        if (!reported || r.direction > wire::kBoundaryReceived ||
            r.message > wire::kBoundaryResponse || !PlausibleTime(r.entry_ns) ||
            !PlausibleTime(r.exit_ns) || r.offset > uint64_t(INT64_MAX) || r.stream > 0x7fffffff ||
            r.length >= (1u << 24)) {
          return false;
        }
        Boundary b = BoundaryAt(protocols::kHttp2, r.direction, r.message, r.offset);
        protocols::Attributes attributes;
        protocols::SetHttp2FrameAttributes({r.frame_type, r.flags, r.stream, r.length, r.extra},
                                           &attributes);
        for (int i = 0; i < attributes.count; ++i) {
          const protocols::Attribute& a = attributes.items[i];
          b.attributes.emplace_back(std::string(a.key, a.key_length),
                                    std::string(a.value, a.length));
        }
        AddBoundaryEvent(EventOp::kBoundary, r.fd, r.entry_ns, r.exit_ns, std::move(b));
        return true;
      }
      case wire::kHeaderBlockRecord: {
        if (size < sizeof(wire::HeaderBlockRecord)) return false;
        auto r = Load<wire::HeaderBlockRecord>(p);
        if (sizeof r + uint64_t(r.length) > size || r.length == 0 ||
            r.protocol == protocols::kNone || r.protocol >= protocols::kProtocolCount ||
            r.direction > wire::kBoundaryReceived || r.message > wire::kBoundaryResponse ||
            !PlausibleTime(r.entry_ns) || r.offset > uint64_t(INT64_MAX)) {
          return false;
        }
        Boundary b = BoundaryAt(r.protocol, r.direction, r.message, r.offset);
        b.header_block.assign(reinterpret_cast<const char*>(p) + sizeof r, r.length);
        AddBoundaryEvent(EventOp::kHeaderBlock, r.fd, r.entry_ns, r.entry_ns, std::move(b));
        return true;
      }
      case wire::kNameRecord: {
        if (size < sizeof(wire::NameRecord)) return false;
        auto r = Load<wire::NameRecord>(p);
        if (r.reason > wire::kNameRenamed || !PlausibleTime(r.time_ns)) return false;
        log_.thread_names.push_back({.tid = r.tid,
                                     .time_ns = r.time_ns,
                                     .renamed = r.reason == wire::kNameRenamed,
                                     .name = std::string(r.name, strnlen(r.name, sizeof r.name))});
        return true;
      }
      case wire::kImageRecord: {
        if (size < sizeof(wire::ImageRecord)) return false;
        auto r = Load<wire::ImageRecord>(p);
        if (r.runtime != wire::kRuntimeGo || !PlausibleTime(r.time_ns)) return false;
        log_.loss.go_runtime = true;
        return true;
      }
      case wire::kEndRecord: {
        if (size < 40) return false;  // a log from before event isolation's counters
        wire::EndRecord r{};
        memcpy(&r, p, size < sizeof r ? size : sizeof r);
        log_.loss.has_end_record = true;
        log_.loss.ended_by_exec = r.op == wire::kOpExec;
        log_.loss.dropped_events = r.dropped_events;
        log_.loss.untraced_io_calls = r.untraced_io_calls;
        log_.loss.failed_writes = r.failed_writes;
        log_.loss.isolated_reads = r.isolated_reads;
        log_.loss.held_reads = r.held_reads;
        log_.loss.held_bytes = r.held_bytes;
        log_.loss.split_waits = r.split_waits;
        log_.loss.tls_streams = r.tls_streams;
        log_.loss.tls_opaque_streams = r.tls_opaque_streams;
        return true;
      }
      default:
        return true;  // a later record type: skipped by its size
    }
  }

  // The part every protocol record shares: where in which stream the message ended.
  static Boundary BoundaryAt(uint8_t protocol, uint8_t direction, uint8_t message,
                             uint64_t offset) {
    Boundary b;
    b.protocol = protocol;
    b.sent = direction == wire::kBoundarySent;
    b.request = message == wire::kBoundaryRequest;
    b.offset = offset;
    return b;
  }
  // A boundary or header-block event of the block's thread (never followed by a payload).
  void AddBoundaryEvent(EventOp op, int32_t fd, int64_t entry, int64_t exit, Boundary b) {
    Event e{.op = op};
    e.tid = tid_;
    e.fd = fd;
    e.entry_ns = entry;
    e.exit_ns = exit;
    e.boundary = Add(log_.boundaries, std::move(b));
    log_.events.push_back(e);
    last_ = -1;
  }

  template <typename T>
  static int32_t Add(std::vector<T>& v, T item) {
    v.push_back(std::move(item));
    return static_cast<int32_t>(v.size() - 1);
  }

  EventLog& log_;
  int32_t tid_;
  int64_t last_ = -1;
};

Status DecodeHeader(std::span<const uint8_t> data, std::string_view name, EventLog& log) {
  if (data.size() < 8 || std::memcmp(data.data(), wire::kFileMagic, 8) != 0) {
    return Status::Corruption("{}: not a weft event log (bad magic at byte 0)", name);
  }
  if (data.size() < sizeof(FileHeader)) {
    return Status::Corruption("{}: truncated: {} bytes, shorter than the {}-byte header", name,
                              data.size(), sizeof(FileHeader));
  }
  auto h = Load<FileHeader>(data.data());
  if (h.version != wire::kVersion && h.version != wire::kBlockVersion) {
    return Status::Corruption(
        "{}: unsupported version {} at byte 8 (this weft reads versions {} and {})", name,
        h.version, wire::kBlockVersion, wire::kVersion);
  }
  uint64_t strings = uint64_t(h.host_length) + h.executable_length + h.arguments_length;
  if (h.header_size % 8 != 0 || h.header_size < sizeof(FileHeader) + strings) {
    return Status::Corruption(
        "{}: header size {} at byte 12 is not a multiple of 8 holding its {} string bytes", name,
        h.header_size, strings);
  }
  if (h.header_size > data.size()) {
    return Status::Corruption("{}: truncated: the {}-byte header is cut at byte {}", name,
                              h.header_size, data.size());
  }
  std::vector<uint8_t> copy(data.data(), data.data() + h.header_size);
  std::memset(copy.data() + offsetof(FileHeader, header_checksum), 0, 4);
  uint32_t computed = Checksum32(copy.data(), copy.size());
  if (computed != h.header_checksum) {
    return Status::Corruption("{}: header checksum mismatch (recorded {:08x}, computed {:08x})",
                              name, h.header_checksum, computed);
  }
  if (!PlausibleTime(h.clock_realtime_ns) || !PlausibleTime(h.clock_monotonic_ns)) {
    return Status::Corruption("{}: clock reference out of range (realtime {}, monotonic {})", name,
                              h.clock_realtime_ns, h.clock_monotonic_ns);
  }
  if (h.version == wire::kVersion &&
      (h.block_size < kMinChunkSize || h.block_size > kMaxChunkSize || h.block_size % 8 != 0)) {
    return Status::Corruption("{}: chunk size {} at byte 72 is not a multiple of 8 from {} to {}",
                              name, h.block_size, kMinChunkSize, kMaxChunkSize);
  }
  EventLogHeader& out = log.header;
  out.version = h.version;
  out.pid = h.pid;
  out.parent_pid = h.parent_pid;
  out.exec_index = h.exec_index;
  out.payload_prefix = h.payload_prefix;
  out.clock_realtime_ns = h.clock_realtime_ns;
  out.clock_monotonic_ns = h.clock_monotonic_ns;
  out.clock_uncertainty_ns = h.clock_uncertainty_ns;
  std::memcpy(out.boot_id.data(), h.boot_id, 16);
  out.block_size = h.block_size;
  const char* text = reinterpret_cast<const char*>(data.data()) + sizeof(FileHeader);
  out.host.assign(text, h.host_length);
  out.executable.assign(text + h.host_length, h.executable_length);
  // Arguments joined by NUL: n NULs make n + 1 arguments, empty ones included (a log whose
  // command line ended in NULs, written before the writer dropped them, counted one for
  // each).
  std::string_view args(text + h.host_length + h.executable_length, h.arguments_length);
  for (size_t start = 0; !args.empty();) {
    size_t end = args.find('\0', start);
    out.arguments.emplace_back(
        args.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (out.arguments.size() != h.argument_count) {
    return Status::Corruption("{}: header lists {} arguments, records {} at byte 92", name,
                              out.arguments.size(), h.argument_count);
  }
  return Status::Ok();
}

void Report(Reporter* reporter, uint64_t offset, uint64_t bytes, std::string_view reason) {
  if (reporter != nullptr) reporter->Lost(offset, bytes, reason);
}

// Version 1: blocks written with write(), back to back.
void DecodeBlocks(std::span<const uint8_t> data, EventLog& log, Reporter* reporter) {
  uint64_t at = Load<FileHeader>(data.data()).header_size;
  while (at < data.size()) {
    uint64_t left = data.size() - at;
    if (!ValidBlockHeader(data, at)) {
      if (left < sizeof(BlockHeader)) {
        log.loss.truncated_bytes += left;
        Report(reporter, at, left, "log cut short inside a block header");
        break;
      }
      // Damage (or a block cut short by a failed write, then more blocks): skip to the
      // next valid block header.
      uint64_t next = at + 1;
      while (next < data.size() && !ValidBlockHeader(data, next)) ++next;
      log.loss.corrupt_bytes += next - at;
      ++log.loss.corrupt_blocks;
      Report(reporter, at, next - at, "no valid block header; skipped to the next one");
      at = next;
      continue;
    }
    auto h = Load<BlockHeader>(data.data() + at);
    const uint8_t* payload = data.data() + at + sizeof(BlockHeader);
    uint64_t available = left - sizeof(BlockHeader);
    log.loss.dropped_events = std::max(log.loss.dropped_events, h.dropped_events);
    if (h.payload_size > available) {
      // The last block, cut short by a killed process or a full disk: keep its whole
      // records (they cannot be checked against the checksum of the whole payload).
      BlockDecoder decoder(log, h.tid);
      uint64_t used = decoder.Decode(payload, available);
      ++log.blocks;
      log.loss.truncated_bytes += available - used;
      Report(reporter, at + sizeof(BlockHeader) + used, available - used,
             fmt::format("log cut short: block of {} bytes has {}; bytes after the last whole "
                         "record lost",
                         h.payload_size, available));
      break;
    }
    uint32_t computed = Checksum32(payload, h.payload_size);
    if (computed != h.payload_checksum) {
      uint64_t next = at + 1;
      while (next < data.size() && !ValidBlockHeader(data, next)) ++next;
      log.loss.corrupt_bytes += next - at;
      ++log.loss.corrupt_blocks;
      Report(reporter, at, next - at,
             fmt::format("block payload checksum mismatch (recorded {:08x}, computed {:08x})",
                         h.payload_checksum, computed));
      at = next;
      continue;
    }
    BlockDecoder decoder(log, h.tid);
    uint64_t used = decoder.Decode(payload, h.payload_size);
    ++log.blocks;
    if (used != h.payload_size) {
      log.loss.corrupt_bytes += h.payload_size - used;
      Report(reporter, at + sizeof(BlockHeader) + used, h.payload_size - used,
             "record that does not fit its block");
    }
    at += sizeof(BlockHeader) + h.payload_size;
  }
}

bool AllZero(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Version 2: chunks (wire::ChunkSize) from the end of the header, each holding
// segments back to back (wire::SegmentHeader). A sealed segment holds exactly its sealed
// bytes, checked whole, and may be followed by another; an open one (its process was
// killed, or it is still running) holds records up to the first one whose first 8 bytes
// are zero (not committed), and ends its chunk. Zeros after that are room never used;
// other bytes there are what was being written when the process died. The last chunk may
// be cut short: the writer trims the file after the end record.
void DecodeChunks(std::span<const uint8_t> data, EventLog& log, Reporter* reporter) {
  uint64_t chunk_size = 0;
  uint64_t header_size = Load<FileHeader>(data.data()).header_size;
  for (uint64_t chunk = header_size, k = 0; chunk < data.size(); chunk += chunk_size, ++k) {
    chunk_size = wire::ChunkSize(log.header.block_size, header_size, k);
    uint64_t size = std::min<uint64_t>(chunk_size, data.size() - chunk);
    const uint8_t* p = data.data() + chunk;
    // `at`: where the next segment would start; a segment that is not followed by
    // another ends the loop with `rest` set to where unread bytes begin.
    uint64_t at = 0;
    while (at < size) {
      uint64_t left = size - at;
      if (left < 8 || AllZero(p + at, 8)) {
        // No segment here: room never used, or a segment header not committed.
        uint64_t end = size;
        while (end > at && p[end - 1] == 0) --end;
        if (end > at) {
          log.loss.truncated_bytes += end - at;
          Report(reporter, chunk + at, end - at, "segment header not committed");
        }
        break;
      }
      if (left < sizeof(SegmentHeader)) {
        log.loss.truncated_bytes += left;
        Report(reporter, chunk + at, left, "log cut short inside a segment header");
        break;
      }
      auto h = Load<SegmentHeader>(p + at);
      if (h.magic != wire::kSegmentMagic || h.header_checksum != Checksum32(p + at, 16)) {
        log.loss.corrupt_bytes += left;
        ++log.loss.corrupt_blocks;
        Report(reporter, chunk + at, left, "segment header damaged; rest of the chunk skipped");
        break;
      }
      log.loss.dropped_events = std::max(log.loss.dropped_events, h.dropped_events);
      ++log.blocks;
      const uint8_t* records = p + at + sizeof(SegmentHeader);
      uint64_t room = left - sizeof(SegmentHeader);
      uint64_t records_at = chunk + at + sizeof(SegmentHeader);
      if (h.sealed_size != 0 && h.sealed_size <= room) {
        uint32_t computed = Checksum32(records, h.sealed_size);
        if (h.sealed_size % 8 != 0 || computed != h.sealed_checksum) {
          log.loss.corrupt_bytes += h.sealed_size;
          ++log.loss.corrupt_blocks;
          Report(reporter, chunk + at, sizeof(SegmentHeader) + h.sealed_size,
                 fmt::format("sealed segment checksum mismatch (recorded {:08x}, computed {:08x})",
                             h.sealed_checksum, computed));
        } else {
          BlockDecoder decoder(log, h.tid);
          uint64_t used = decoder.Decode(records, h.sealed_size);
          if (used != h.sealed_size) {
            log.loss.corrupt_bytes += h.sealed_size - used;
            Report(reporter, records_at + used, h.sealed_size - used,
                   "record that does not fit its segment");
          }
        }
        at += sizeof(SegmentHeader) + h.sealed_size;
        continue;
      }
      // Open (or sealed beyond the end of a file cut short): committed records only.
      BlockDecoder decoder(log, h.tid);
      uint64_t used = decoder.Decode(records, room);
      uint64_t end = room;
      while (end > used && records[end - 1] == 0) --end;
      if (end == used) break;  // room never used
      bool cut_short =
          size < chunk_size && room - used >= 8 && Load<uint16_t>(records + used + 2) > room - used;
      if (cut_short) {
        log.loss.truncated_bytes += room - used;
        Report(reporter, records_at + used, room - used,
               "log cut short: bytes after the last whole record lost");
      } else if (room - used < 8 || AllZero(records + used, 8)) {
        log.loss.truncated_bytes += end - used;
        Report(reporter, records_at + used, end - used,
               "record not committed when the process stopped");
      } else {
        log.loss.corrupt_bytes += end - used;
        ++log.loss.corrupt_blocks;
        Report(reporter, records_at + used, end - used,
               "record that makes no sense in an open segment; rest of the chunk skipped");
      }
      break;
    }
  }
}

}  // namespace

Result<EventLog> DecodeEventLog(std::span<const uint8_t> data, std::string_view name,
                                Reporter* reporter) {
  EventLog log;
  log.path = name;
  WEFT_RETURN_IF_ERROR(DecodeHeader(data, name, log));
  if (log.header.version == wire::kBlockVersion) {
    DecodeBlocks(data, log, reporter);
  } else {
    DecodeChunks(data, log, reporter);
  }
  std::stable_sort(log.events.begin(), log.events.end(),
                   [](const Event& a, const Event& b) { return a.entry_ns < b.entry_ns; });
  return log;
}

Result<EventLog> ReadEventLog(const std::string& path, Reporter* reporter) {
  WEFT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return DecodeEventLog({file.data(), file.size()}, path, reporter);
}

Result<std::vector<std::string>> FindEventLogs(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> logs;
  if (std::filesystem::is_regular_file(dir, ec)) return std::vector<std::string>{dir};
  std::filesystem::recursive_directory_iterator it(dir, ec), end;
  if (ec) return Status::NotFound("{}: {}", dir, ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::IoError("{}: {}", dir, ec.message());
    if (it->is_regular_file(ec) && it->path().extension() == ".wev") {
      logs.push_back(it->path().string());
    }
  }
  std::sort(logs.begin(), logs.end());
  return logs;
}

}  // namespace weft::capture
