// The hash that ties gRPC's C API to the wire (docs/capture.md "gRPC"): the preload
// library hashes the metadata a program hands to grpc_call_start_batch or gets with a new
// server call, reconcile the header fields it decodes from the HTTP/2 stream that carried
// them. Equal hashes in one process say the two observations are one message; they say
// nothing across processes and are never read for what the metadata means.
//
// Only the application's own fields count: gRPC adds pseudo-headers, `te`,
// `content-type`, `user-agent` and `grpc-*` fields on the wire (and hands some of them to
// the server), and sends binary (`-bin`) values base64-encoded. The hash is a sum over
// fields, so their order does not matter. Plain C++, no library: the preload library
// links it.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace weft::capture {

inline bool GrpcApplicationField(const char* key, size_t length) {
  auto is = [&](const char* word) {
    size_t i = 0;
    for (; word[i] != 0; ++i) {
      if (i >= length || key[i] != word[i]) return false;
    }
    return i == length;
  };
  if (length == 0 || key[0] == ':') return false;
  if (length >= 5 && key[0] == 'g' && key[1] == 'r' && key[2] == 'p' && key[3] == 'c' &&
      key[4] == '-')
    return false;
  if (length >= 4 && key[length - 4] == '-' && key[length - 3] == 'b' && key[length - 2] == 'i' &&
      key[length - 1] == 'n')
    return false;
  return !is("te") && !is("content-type") && !is("user-agent");
}

// One field's share of the hash (FNV-1a over key, a zero byte, value); 0 for a field that
// is not the application's.
inline uint64_t GrpcFieldHash(const char* key, size_t key_length, const char* value,
                              size_t value_length) {
  if (!GrpcApplicationField(key, key_length)) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint8_t byte) { h = (h ^ byte) * 0x100000001b3ull; };
  for (size_t i = 0; i < key_length; ++i) mix(uint8_t(key[i]));
  mix(0);
  for (size_t i = 0; i < value_length; ++i) mix(uint8_t(value[i]));
  return h;
}

}  // namespace weft::capture
