// A message's payload and protocol attributes (message_attributes.h).
#include "reconcile/message_attributes.h"

#include <algorithm>
#include <string_view>

#include "capture/protocols/descriptor.h"

namespace weft::reconcile {

const std::string* FindWitness(uint8_t protocol, const capture::Boundary* logged) {
  const char* key =
      capture::protocols::Describe(capture::protocols::Protocol(protocol)).witness_key;
  if (key == nullptr || logged == nullptr) return nullptr;
  for (const auto& [name, value] : logged->attributes) {
    if (name == key) return &value;
  }
  return nullptr;
}

void MessageAttributes::AddPayload(uint32_t row, uint32_t log, int32_t payload, int64_t skip) {
  if (payload < 0) return;
  const std::string& all = logs_[log].payloads[size_t(payload)];
  if (skip < 0 || uint64_t(skip) >= all.size()) return;
  AddPayloadBytes(row, std::string_view(all).substr(size_t(skip)));
}

void MessageAttributes::AddStreamPayload(uint32_t row, const ConnectionEnd& definer, bool sends,
                                         const MessageSpan& span) {
  const StreamIo& opening = definer.io[span.first];
  // Logs written without the header's prefix length (none from weft capture) keep the
  // first call's prefix alone, as before prefixes were gathered.
  const uint32_t want = logs_[opening.log].header.payload_prefix;
  if (want == 0) {
    AddPayload(row, opening.log, opening.payload, span.begin - span.first_begin);
    return;
  }
  std::string bytes;
  int64_t offset = span.first_begin;  // of the first byte the call at `i` moved
  for (size_t i = span.first; i <= span.last && bytes.size() < want; ++i) {
    const StreamIo& io = definer.io[i];
    if (io.send != sends) continue;  // the other direction's, between this one's
    if (io.payload < 0) break;
    const std::string& logged = logs_[io.log].payloads[size_t(io.payload)];
    const int64_t from = std::max(offset, span.begin);
    const int64_t to = std::min(offset + int64_t(logged.size()), span.end);
    if (from < to) bytes.append(logged, size_t(from - offset), size_t(to - from));
    // A call that logged less than it moved leaves a gap: what follows is not next.
    if (int64_t(logged.size()) < io.bytes) break;
    offset += io.bytes;
  }
  if (bytes.size() > want) bytes.resize(want);
  if (!bytes.empty()) AddPayloadBytes(row, bytes);
}

void MessageAttributes::AddPayloadBytes(uint32_t row, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kDigits[uint8_t(bytes[i]) >> 4];
    hex[2 * i + 1] = kDigits[uint8_t(bytes[i]) & 0xf];
  }
  builder_.AddAttribute(row, payload_key_, builder_.String(hex));
}

void MessageAttributes::AddProtocol(uint32_t row, uint8_t protocol,
                                    const capture::Boundary* logged) {
  std::string_view name = capture::protocols::Describe(capture::protocols::Protocol(protocol)).name;
  builder_.AddAttribute(row, protocol_key_, builder_.String(name));
  ++summary_.protocol_messages[std::string(name)];
  if (logged == nullptr) return;
  for (const auto& [key, value] : logged->attributes) {
    builder_.AddAttribute(row, builder_.String(key), builder_.String(value));
  }
}

}  // namespace weft::reconcile
