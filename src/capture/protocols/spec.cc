// The --protocols reader (spec.h).
#include "capture/protocols/spec.h"

#include <string.h>

namespace weft::capture::protocols {
namespace {

bool Equals(const char* text, size_t length, const char* word) {
  return strlen(word) == length && memcmp(text, word, length) == 0;
}

// A decimal port in 1..65535, every byte a digit.
bool ParsePort(const char* text, size_t length, uint16_t* port) {
  if (length == 0 || length > 5) return false;
  uint32_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + uint32_t(text[i] - '0');
  }
  if (value == 0 || value > 65535) return false;
  *port = uint16_t(value);
  return true;
}

// Fills the protocol and value parts of a PROTO=VALUE item.
SpecError ReadAssignment(SpecItem* item) {
  size_t equals = 0;
  while (equals < item->length && item->text[equals] != '=') ++equals;
  item->name_length = equals;
  if (equals + 1 >= item->length) return SpecError::kNoValue;
  if (!ParseProtocol(item->text, equals, &item->protocol) || item->protocol == kNone) {
    return SpecError::kUnknownProtocol;
  }
  item->value = item->text + equals + 1;
  item->value_length = item->length - equals - 1;
  const char first = item->value[0];
  if (first >= '0' && first <= '9') {
    item->kind = SpecItemKind::kPort;
    return ParsePort(item->value, item->value_length, &item->port) ? SpecError::kOk
                                                                   : SpecError::kBadPort;
  }
  if (first == '/' || first == '@') {
    item->kind = SpecItemKind::kPath;
    return item->value_length <= kMaxSpecPath ? SpecError::kOk : SpecError::kPathTooLong;
  }
  item->kind = Equals(item->value, item->value_length, "auto") ? SpecItemKind::kDetect
                                                               : SpecItemKind::kProgram;
  return SpecError::kOk;
}

}  // namespace

const char* SpecErrorText(SpecError error) {
  switch (error) {
    case SpecError::kOk:
      return "ok";
    case SpecError::kNoValue:
      return "expected auto, none, or PROTOCOL=PORT|/PATH|@NAME|auto|PROGRAM";
    case SpecError::kUnknownProtocol:
      return "unknown protocol (http, testbed, postgres, redis, dns, line, oneshot, mysql, "
             "memcached)";
    case SpecError::kBadPort:
      return "port out of range";
    case SpecError::kPathTooLong:
      return "a Unix path has at most 108 bytes";
  }
  return "?";
}

bool SpecReader::Next(SpecItem* item, SpecError* error) {
  if (done_ || length_ == 0) return false;
  size_t end = offset_;
  while (end < length_ && spec_[end] != ',') ++end;
  memset(static_cast<void*>(item), 0, sizeof(*item));
  item->text = spec_ + offset_;
  item->length = end - offset_;
  item->name_length = item->length;
  item->protocol = kNone;
  done_ = end == length_;
  offset_ = end + 1;
  *error = SpecError::kOk;
  if (Equals(item->text, item->length, "auto")) {
    item->kind = SpecItemKind::kAuto;
  } else if (Equals(item->text, item->length, "none")) {
    item->kind = SpecItemKind::kNone;
  } else {
    *error = ReadAssignment(item);
  }
  return true;
}

}  // namespace weft::capture::protocols
