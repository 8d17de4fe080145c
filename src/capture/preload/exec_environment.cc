// The environment of an exec or a spawn: LD_PRELOAD and WEFT_* put back if the program
// removed them (runtime.h EnvironmentForExec). Memory comes from mmap, never the
// program's allocator, which may be in any state just before an exec.
#include <string.h>
#include <sys/mman.h>

#include "capture/preload/log_file.h"
#include "capture/preload/runtime.h"

namespace weft_preload {

ExecEnvironment EnvironmentForExec(char* const* envp) {
  ExecEnvironment unchanged{envp, nullptr, 0};
  if (g_settings.dir[0] == '\0') return unchanged;
  const char* preload = g_settings.preload_path;
  size_t count = 0;
  bool has_preload = false, has_dir = false, has_prefix = g_settings.payload_prefix == 0;
  bool has_protocols = g_settings.protocols[0] == '\0';
  bool has_isolate = !g_settings.isolate;
  int preload_index = -1;
  for (; envp != nullptr && envp[count] != nullptr; ++count) {
    const char* e = envp[count];
    if (strncmp(e, "LD_PRELOAD=", 11) == 0) {
      preload_index = int(count);
      has_preload = preload[0] == '\0' || strstr(e, preload) != nullptr;
    }
    has_dir |= strncmp(e, "WEFT_CAPTURE_DIR=", 17) == 0;
    has_prefix |= strncmp(e, "WEFT_PAYLOAD_PREFIX=", 20) == 0;
    has_protocols |= strncmp(e, "WEFT_PROTOCOLS=", 15) == 0;
    has_isolate |= strncmp(e, "WEFT_ISOLATE=", 13) == 0;
  }
  if (has_preload && has_dir && has_prefix && has_protocols && has_isolate) return unchanged;
  size_t strings = 5 * 1100 + (preload_index >= 0 ? strlen(envp[preload_index]) : 0);
  size_t size = (count + 6) * sizeof(char*) + strings;
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return unchanged;
  char** out = static_cast<char**>(memory);
  char* text = reinterpret_cast<char*>(out + count + 6);
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    if (int(i) != preload_index || has_preload) out[n++] = envp[i];
  }
  if (!has_preload) {  // ours first, then whatever the program preloads
    out[n++] = text;
    text += CopyString(text, 1100, "LD_PRELOAD=");
    text += CopyString(text, 1100, preload);
    if (preload_index >= 0 && envp[preload_index][11] != '\0') {
      *text++ = ':';
      text += CopyString(text, strlen(envp[preload_index]) + 1, envp[preload_index] + 11);
    }
    *text++ = '\0';
  }
  if (!has_dir) {
    out[n++] = text;
    text += CopyString(text, 1100, "WEFT_CAPTURE_DIR=");
    text += CopyString(text, 1100, g_settings.dir) + 1;
  }
  if (!has_prefix) {
    out[n++] = text;
    text += CopyString(text, 1100, "WEFT_PAYLOAD_PREFIX=");
    text += FormatDecimal(text, g_settings.payload_prefix) + 1;
  }
  if (!has_protocols) {
    out[n++] = text;
    text += CopyString(text, 1100, "WEFT_PROTOCOLS=");
    text += CopyString(text, 1100, g_settings.protocols) + 1;
  }
  if (!has_isolate) {
    out[n++] = text;
    text += CopyString(text, 1100, "WEFT_ISOLATE=1") + 1;
  }
  out[n] = nullptr;
  return {out, memory, size};
}

void ReleaseEnvironment(const ExecEnvironment& environment) {
  if (environment.mapping != nullptr) munmap(environment.mapping, environment.size);
}

}  // namespace weft_preload
