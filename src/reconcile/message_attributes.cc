// A message's payload and protocol attributes (message_attributes.h).
#include "reconcile/message_attributes.h"

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
  std::string_view bytes = std::string_view(all).substr(size_t(skip));
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
