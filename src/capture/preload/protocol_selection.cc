// The protocol selection: parsing WEFT_PROTOCOLS once at start (protocol_selection.h).
#include "capture/preload/protocol_selection.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/preload/log_file.h"
#include "capture/preload/protocol_streams.h"
#include "capture/program_name.h"
#include "capture/protocols/descriptor.h"
#include "capture/protocols/spec.h"

namespace weft_preload {

Selection g_selection;
static_assert(protocols::kMaxSpecPath == kMaxPath, "a spec path must fit a rule");

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

// This program's name, as reconcile names its node (capture/program_name.h).
size_t ProgramName(char* out, size_t capacity) {
  char exe[1024];
  long exe_size = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe);
  if (exe_size < 0) exe_size = 0;
  char argv0[1024];
  size_t argv0_size = ReadSmallFile("/proc/self/cmdline", argv0, sizeof argv0);
  size_t end = 0;
  while (end < argv0_size && argv0[end] != '\0') ++end;
  weft::capture::ProgramNameText name =
      weft::capture::ProgramName(exe, size_t(exe_size), argv0, end);
  size_t size = name.size < capacity ? name.size : capacity;
  memcpy(out, name.data, size);
  return size;
}

// One item of the spec, read by protocols::SpecReader (capture/protocols/spec.h).
void AddItem(const protocols::SpecItem& item) {
  switch (item.kind) {
    case protocols::SpecItemKind::kAuto:
      for (const protocols::ProtocolDescriptor& d : protocols::kProtocolTable) {
        if (d.auto_port != 0) AddPortRule(d.protocol, d.auto_port);
      }
      g_selection.detect = ~0u;
      return;
    case protocols::SpecItemKind::kNone:
      return;
    case protocols::SpecItemKind::kDetect:
      g_selection.detect |= 1u << item.protocol;
      return;
    case protocols::SpecItemKind::kPort:
      AddPortRule(item.protocol, item.port);
      return;
    case protocols::SpecItemKind::kPath: {
      if (g_selection.rule_count == kMaxRules || item.value_length > kMaxPath) return;
      Rule& r = g_selection.rules[g_selection.rule_count++];
      r.protocol = item.protocol;
      r.port = 0;
      r.path_length = uint8_t(item.value_length);
      memcpy(r.path, item.value, item.value_length);
      if (r.path[0] == '@') r.path[0] = '\0';  // the abstract namespace, as the kernel names it
      return;
    }
    case protocols::SpecItemKind::kProgram: {
      char program[256];
      size_t n = ProgramName(program, sizeof program);
      if (n == item.value_length && memcmp(program, item.value, n) == 0) {
        g_selection.program = item.protocol;
      }
      return;
    }
  }
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
  // Items the CLI would have refused are skipped: a traced program is never stopped.
  protocols::SpecReader reader(spec, strlen(spec));
  protocols::SpecItem item;
  protocols::SpecError error;
  while (reader.Next(&item, &error)) {
    if (error == protocols::SpecError::kOk) AddItem(item);
  }
  g_selection.enabled = g_selection.rule_count > 0 || g_selection.dns_port_count > 0 ||
                        g_selection.detect != 0 || g_selection.program != protocols::kNone;
}

bool ProtocolsEnabled() { return g_selection.enabled; }

}  // namespace weft_preload
