// HTTP/2 messages from frame ends and header-block pieces (http2_messages.h).
#include "reconcile/http2_messages.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace weft::reconcile {
namespace {

struct Frame {
  uint32_t stream = 0;
  std::string_view type;
  bool end_stream = false;
  bool end_headers = false;
  int64_t length = 0;
  uint32_t promised = 0;    // PUSH_PROMISE: the promised stream
  int64_t table_size = -1;  // SETTINGS: its SETTINGS_HEADER_TABLE_SIZE
};

bool ParseNumber(std::string_view text, int64_t* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && *value >= 0;
}

// The frame the processor described at a boundary; false if the attributes are not its.
bool ReadFrame(const capture::Boundary& b, Frame* frame) {
  bool stream = false, length = false;
  for (const auto& [key, value] : b.attributes) {
    int64_t n = 0;
    if (key == "http2.stream" && ParseNumber(value, &n) && n <= INT32_MAX) {
      frame->stream = uint32_t(n);
      stream = true;
    } else if (key == "http2.length" && ParseNumber(value, &n) && n < (int64_t(1) << 24)) {
      frame->length = n;
      length = true;
    } else if (key == "http2.promised" && ParseNumber(value, &n) && n <= INT32_MAX) {
      frame->promised = uint32_t(n);
    } else if (key == "http2.header_table_size" && ParseNumber(value, &n) && n <= UINT32_MAX) {
      frame->table_size = n;
    } else if (key == "http2.frame") {
      std::string_view words = value;
      size_t space = words.find(' ');
      frame->type = words.substr(0, space);
      frame->end_stream = words.find("END_STREAM") != std::string_view::npos;
      frame->end_headers = words.find("END_HEADERS") != std::string_view::npos;
    }
  }
  return stream && length && !frame->type.empty();
}

// The header-block pieces of one direction, walked in offset order.
class PieceReader {
 public:
  PieceReader(std::span<const StreamBoundary* const> pieces, const BoundaryLookup& lookup)
      : pieces_(pieces.begin(), pieces.end()), lookup_(lookup) {
    std::stable_sort(
        pieces_.begin(), pieces_.end(),
        [](const StreamBoundary* a, const StreamBoundary* b) { return a->offset < b->offset; });
  }
  // Appends the logged bytes that lie in [begin, end) (a frame's payload) to `block`;
  // false if a piece's record cannot be found.
  bool Take(int64_t begin, int64_t end, std::string* block) {
    while (next_ < pieces_.size() && pieces_[next_]->offset < begin) ++next_;
    while (next_ < pieces_.size() && pieces_[next_]->offset < end) {
      const capture::Boundary* b = lookup_(*pieces_[next_]);
      if (b == nullptr) return false;
      int64_t room = end - pieces_[next_]->offset;
      std::string_view bytes = b->header_block;
      if (int64_t(bytes.size()) > room) bytes = bytes.substr(0, size_t(room));
      block->append(bytes);
      ++next_;
    }
    return true;
  }

 private:
  std::vector<const StreamBoundary*> pieces_;
  const BoundaryLookup& lookup_;
  size_t next_ = 0;
};

const std::string* FieldValue(const std::vector<HeaderField>& fields, std::string_view name) {
  for (const HeaderField& f : fields) {
    if (f.name == name) return &f.value;
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Http2Attributes(const Http2Message& m) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("http2.stream", std::to_string(m.stream));
  const std::string* method = FieldValue(m.headers, ":method");
  const std::string* path = FieldValue(m.headers, ":path");
  const std::string* status = FieldValue(m.headers, ":status");
  const std::string* type = FieldValue(m.headers, "content-type");
  if (method != nullptr) out.emplace_back("http.method", *method);
  if (path != nullptr) out.emplace_back("http.url", *path);
  if (status != nullptr) out.emplace_back("http.status", *status);
  // The witnesses HTTP/1.x requests carry (docs/precise.md "Witnesses"), from the same
  // fields (HTTP/2 names are lower case).
  const std::string* request_id = FieldValue(m.headers, "x-request-id");
  const std::string* traceparent = FieldValue(m.headers, "traceparent");
  if (request_id != nullptr) out.emplace_back("http.request_id", request_id->substr(0, 64));
  if (traceparent != nullptr) out.emplace_back("http.traceparent", traceparent->substr(0, 64));
  if (m.pushed_by != 0) {
    out.emplace_back("http2.pushed_by", std::to_string(m.pushed_by));
    const std::string* promised_method = FieldValue(m.promised_request, ":method");
    const std::string* promised_path = FieldValue(m.promised_request, ":path");
    if (promised_method != nullptr) out.emplace_back("http.method", *promised_method);
    if (promised_path != nullptr) out.emplace_back("http.url", *promised_path);
  }
  if (type != nullptr && type->starts_with("application/grpc")) {
    if (path != nullptr) out.emplace_back("grpc.method", *path);
    // A reply with trailers carries grpc-status there; a trailers-only reply in its headers.
    const std::string* grpc = FieldValue(m.trailers, "grpc-status");
    if (grpc == nullptr) grpc = FieldValue(m.headers, "grpc-status");
    if (grpc != nullptr) out.emplace_back("grpc.status", *grpc);
  }
  return out;
}

uint32_t PeerHeaderTableSize(std::span<const StreamBoundary* const> frames,
                             const BoundaryLookup& lookup) {
  int64_t largest = 4096;
  for (const StreamBoundary* b : frames) {
    const capture::Boundary* logged = lookup(*b);
    Frame f;
    if (logged != nullptr && ReadFrame(*logged, &f) && f.type == "SETTINGS")
      largest = std::max(largest, f.table_size);
  }
  return uint32_t(largest);
}

std::vector<Http2Message> AssembleHttp2Messages(std::span<const StreamBoundary* const> frames,
                                                std::span<const StreamBoundary* const> pieces,
                                                const BoundaryLookup& lookup,
                                                uint32_t table_size_limit, uint64_t* late_frames) {
  std::vector<Http2Message> done;
  std::map<uint32_t, Http2Message> open;  // by stream
  std::set<uint32_t> ended;               // streams whose message in this direction ended
  std::map<uint32_t, std::pair<uint32_t, std::vector<HeaderField>>> promises;  // promised ->
  PieceReader reader(pieces, lookup);
  Http2HeaderDecoder decoder;
  // A block that went undecoded leaves the table unknown: no later block is trusted.
  bool table_lost = table_size_limit > 4096 && !decoder.SetTableSizeLimit(table_size_limit).ok();
  // The header block being gathered (HEADERS or PUSH_PROMISE, then CONTINUATIONs): frames of
  // other streams cannot come between (RFC 9113 §6.10).
  std::string block;
  bool block_lost = false;
  bool block_is_push = false;
  uint32_t block_stream = 0, block_promised = 0;
  auto finish = [&](uint32_t stream) {
    auto it = open.find(stream);
    if (it == open.end()) return;
    it->second.complete = true;
    done.push_back(std::move(it->second));
    open.erase(it);
    ended.insert(stream);
  };
  for (const StreamBoundary* b : frames) {
    const capture::Boundary* logged = lookup(*b);
    Frame f;
    if (logged == nullptr || !ReadFrame(*logged, &f) || f.stream == 0) continue;
    int64_t begin = b->offset - 9 - f.length;
    bool carries_block =
        f.type == "HEADERS" || f.type == "CONTINUATION" || f.type == "PUSH_PROMISE";
    // Every header block is decoded, whoever it belongs to: HPACK's table is the
    // connection's.
    std::vector<HeaderField> fields;
    bool decoded = false;
    if (carries_block) {
      if (f.type != "CONTINUATION") {
        block.clear();
        block_lost = false;
        block_is_push = f.type == "PUSH_PROMISE";
        block_stream = f.stream;
        block_promised = f.promised;
      }
      if (!reader.Take(begin + 9, b->offset, &block)) block_lost = true;
      if (f.end_headers && block_stream == f.stream && !table_lost) {
        table_lost = block_lost || !decoder.Decode(block, &fields).ok();
        decoded = !table_lost;
      }
    }
    if (block_is_push && (f.type == "PUSH_PROMISE" || f.type == "CONTINUATION")) {
      // Its block is the promised request; the response comes on the promised stream.
      if (f.end_headers && block_promised != 0) {
        promises[block_promised] = {block_stream,
                                    decoded ? std::move(fields) : std::vector<HeaderField>{}};
      }
      continue;
    }
    if (ended.count(f.stream) != 0) {
      if (late_frames != nullptr) ++*late_frames;
      continue;
    }
    Http2Message& m = open[f.stream];
    if (m.bytes == 0) {
      m.stream = f.stream;
      m.begin = begin;
      if (auto promise = promises.find(f.stream); promise != promises.end()) {
        m.pushed_by = promise->second.first;
        m.promised_request = std::move(promise->second.second);
        promises.erase(promise);
      }
    }
    m.end = b->offset;
    m.bytes += 9 + f.length;
    m.last = b;
    if (f.type == "HEADERS" && f.end_stream) m.complete = true;  // after the block ends
    if (carries_block && f.end_headers && block_stream == f.stream) {
      if (decoded) {
        if (!m.headers_known) {
          m.headers = std::move(fields);
          m.headers_known = true;
        } else {
          m.trailers = std::move(fields);
        }
      }
      if (m.complete) finish(f.stream);
    } else if ((f.type == "DATA" && f.end_stream) || f.type == "RST_STREAM") {
      finish(f.stream);
    }
  }
  for (auto& [stream, m] : open) {
    m.complete = false;
    done.push_back(std::move(m));
  }
  std::stable_sort(done.begin(), done.end(),
                   [](const Http2Message& a, const Http2Message& b) { return a.end < b.end; });
  return done;
}

}  // namespace weft::reconcile
