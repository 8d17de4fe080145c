// The protocol selection: parsing WEFT_PROTOCOLS once at start (protocol_selection.h).
#include "capture/preload/protocol_selection.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/preload/protocol_streams.h"

namespace weft_preload {

Selection g_selection;

namespace {

void AddPortRule(protocols::Protocol protocol, uint16_t port) {
  if (protocol == protocols::kDns && g_selection.dns_port_count < kMaxDnsPorts) {
    g_selection.dns_ports[g_selection.dns_port_count++] = port;
  }
  if (g_selection.rule_count == kMaxRules) return;
  Rule& r = g_selection.rules[g_selection.rule_count++];
  r.protocol = protocol;
  r.port = port;
  r.path_length = 0;
}

// The basename of this program's executable (reconcile names nodes by it too).
size_t ProgramName(char* out, size_t capacity) {
  char path[1024];
  long n = syscall(SYS_readlink, "/proc/self/exe", path, sizeof path);
  if (n <= 0) return 0;
  long start = n;
  while (start > 0 && path[start - 1] != '/') --start;
  size_t length = size_t(n - start) < capacity ? size_t(n - start) : capacity;
  memcpy(out, path + start, length);
  return length;
}

// One item of the list: "auto", "PROTO=PORT", "PROTO=/path", "PROTO=@name", "PROTO=auto",
// "PROTO=PROGRAM".
void AddItem(const char* item, size_t length) {
  if (length == 4 && memcmp(item, "auto", 4) == 0) {
    AddPortRule(protocols::kPostgres, 5432);
    AddPortRule(protocols::kRedis, 6379);
    AddPortRule(protocols::kDns, 53);
    g_selection.detect = ~0u;
    return;
  }
  size_t equals = 0;
  while (equals < length && item[equals] != '=') ++equals;
  protocols::Protocol protocol;
  if (equals == length || !protocols::ParseProtocol(item, equals, &protocol) ||
      protocol == protocols::kNone) {
    return;
  }
  const char* value = item + equals + 1;
  size_t value_length = length - equals - 1;
  if (value_length == 0) return;
  if (value_length == 4 && memcmp(value, "auto", 4) == 0) {
    g_selection.detect |= 1u << protocol;
    return;
  }
  if (value[0] >= '0' && value[0] <= '9') {
    uint32_t port = 0;
    for (size_t i = 0; i < value_length && port <= 65535; ++i) {
      if (value[i] < '0' || value[i] > '9') return;
      port = port * 10 + uint32_t(value[i] - '0');
    }
    if (port == 0 || port > 65535) return;
    AddPortRule(protocol, uint16_t(port));
    return;
  }
  if (value[0] == '/' || value[0] == '@') {
    if (g_selection.rule_count == kMaxRules || value_length > kMaxPath) return;
    Rule& r = g_selection.rules[g_selection.rule_count++];
    r.protocol = protocol;
    r.port = 0;
    r.path_length = uint8_t(value_length);
    memcpy(r.path, value, value_length);
    if (r.path[0] == '@') r.path[0] = '\0';  // the abstract namespace, as the kernel names it
    return;
  }
  char program[256];
  size_t n = ProgramName(program, sizeof program);
  if (n == value_length && memcmp(program, value, n) == 0) g_selection.program = protocol;
}
}  // namespace

bool IsDnsPort(uint16_t port) {
  for (int i = 0; i < g_selection.dns_port_count; ++i) {
    if (g_selection.dns_ports[i] == port) return true;
  }
  return false;
}

void ConfigureProtocols(const char* spec) {
  memset(&g_selection, 0, sizeof g_selection);
  if (spec == nullptr || spec[0] == '\0') return;
  for (const char* p = spec; *p != '\0';) {
    const char* end = p;
    while (*end != '\0' && *end != ',') ++end;
    if (!(end - p == 4 && memcmp(p, "none", 4) == 0)) AddItem(p, size_t(end - p));
    p = *end == ',' ? end + 1 : end;
  }
  g_selection.enabled = g_selection.rule_count > 0 || g_selection.dns_port_count > 0 ||
                        g_selection.detect != 0 || g_selection.program != protocols::kNone;
}

bool ProtocolsEnabled() { return g_selection.enabled; }

}  // namespace weft_preload
