// What the protocol processors share (BorderPatrol §3.3): the per-processor entry points
// that protocols.cc dispatches to, typed access to Parser::state, and attribute setting.
// Internal to capture/protocols; callers use protocol.h.
//
// Every processor is a byte-driven state machine whose state lives in Parser::state, so a
// stream gives the same boundaries and attributes however it is split into calls. A
// processor's Consume is called with length > 0 and parser->failed clear; it returns how
// many bytes it took and sets *ended when the message ended at the last of them. It calls
// Fail to give up on a stream. protocols.cc keeps parser->consumed and parser->messages.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <new>
#include <type_traits>

#include "capture/protocols/protocol.h"

namespace weft::capture::protocols::internal {

// The processor's state object in parser->state. The state types are trivially copyable
// (implicit-lifetime) structs constructed by placement new in InitState, so a parser may be
// copied with memcpy and read back through StateOf.
template <typename State>
constexpr void CheckState() {
  static_assert(sizeof(State) <= kParserStateBytes, "processor state too large");
  static_assert(alignof(State) <= 8, "processor state over-aligned");
  static_assert(std::is_trivially_copyable_v<State> && std::is_trivially_destructible_v<State>,
                "processor state must be plain data");
}
template <typename State>
State* InitState(Parser* parser) {
  CheckState<State>();
  return ::new (static_cast<void*>(parser->state)) State();
}
template <typename State>
State* StateOf(Parser* parser) {
  CheckState<State>();
  return std::launder(reinterpret_cast<State*>(parser->state));
}

// Gives up on the stream: every later call consumes everything and reports no end.
inline size_t Fail(Parser* parser, size_t length, bool* ended) {
  parser->failed = true;
  *ended = false;
  return length;
}

// Appends key=value (value cut to kMaxValue bytes); a key beyond kMaxAttributes is dropped.
// Inline, so that a literal key's length is known when compiled.
inline void AddAttribute(Attributes& a, const char* key, const void* value, size_t length) {
  if (a.count >= kMaxAttributes) return;
  Attribute& item = a.items[a.count++];
  item.key = key;
  item.key_length = uint8_t(strlen(key));
  item.length = uint8_t(length < size_t(kMaxValue) ? length : size_t(kMaxValue));
  memcpy(item.value, value, item.length);
}
inline void AddAttribute(Parser* parser, const char* key, const void* value, size_t length) {
  AddAttribute(parser->attributes, key, value, length);
}
// Written straight into the attribute's value (HTTP/2 frames make two or three a frame).
inline void AddDecimalAttribute(Attributes& a, const char* key, uint64_t value) {
  if (a.count >= kMaxAttributes) return;
  Attribute& item = a.items[a.count++];
  item.key = key;
  item.key_length = uint8_t(strlen(key));
  uint8_t n = 1;
  for (uint64_t v = value; v >= 10; v /= 10) ++n;
  item.length = n;
  do {
    item.value[--n] = char('0' + value % 10);
    value /= 10;
  } while (n != 0);
}
inline void AddDecimalAttribute(Parser* parser, const char* key, uint64_t value) {
  AddDecimalAttribute(parser->attributes, key, value);
}

// Starts the attributes of a message that has just ended.
inline void ClearAttributes(Parser* parser) { parser->attributes.count = 0; }

inline bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }
inline uint8_t ToLower(uint8_t c) { return c >= 'A' && c <= 'Z' ? uint8_t(c + 32) : c; }
inline uint8_t ToUpper(uint8_t c) { return c >= 'a' && c <= 'z' ? uint8_t(c - 32) : c; }
inline size_t Min(size_t a, uint64_t b) { return b < a ? size_t(b) : a; }

// One per processor: Init constructs the state, Consume follows the contract above.
void InitHttp(Parser* parser);
size_t ConsumeHttp(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitTestbed(Parser* parser);
size_t ConsumeTestbed(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitPostgres(Parser* parser);
size_t ConsumePostgres(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitRedis(Parser* parser);
size_t ConsumeRedis(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitDns(Parser* parser);
size_t ConsumeDns(Parser* parser, const uint8_t* data, size_t length, bool* ended);
// A whole DNS message (a datagram, or one taken from a TCP stream): dns.id and dns.name.
void SetDnsAttributes(Parser* parser, const uint8_t* data, size_t length);
void InitLine(Parser* parser);
size_t ConsumeLine(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitMysql(Parser* parser);
size_t ConsumeMysql(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitMemcached(Parser* parser);
size_t ConsumeMemcached(Parser* parser, const uint8_t* data, size_t length, bool* ended);
void InitHttp2(Parser* parser);
// Turns an HTTP/1.1 parser into the http2 processor after an upgrade to h2c (http.cc),
// `done` bytes into a Consume call's `length` at `data`, and consumes the rest as
// ConsumeHttp2 would: `preface_bytes` of the client's connection preface were already read
// (the request direction), 0 for the response direction.
size_t UpgradeToHttp2(Parser* parser, uint32_t preface_bytes, const uint8_t* data, size_t length,
                      size_t done, bool* ended);
size_t ConsumeHttp2(Parser* parser, const uint8_t* data, size_t length, bool* ended);

}  // namespace weft::capture::protocols::internal
