// OpenBus: from a URL to one of the transports (bus.h).
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "pivot/bus.h"
#include "pivot/bus_unix.h"
#include "pivot/untraced.h"

namespace weft::pivot {
namespace {

// Checks "nats://HOST:PORT": a host of letters, digits, '.', '-', ':' (IPv6 in brackets)
// and a port 1..65535.
bool ValidNatsUrl(std::string_view url) {
  std::string_view rest = url.substr(std::string_view("nats://").size());
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr(".-:[]_", c))) return false;
  }
  if (port.empty() || port.size() > 5) return false;
  int value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= 65535;
}

// Creates /tmp/weft-pivot-UID mode 0700, or checks that the one there is ours and closed
// to others (another user could otherwise host a hub that reads our queries).
Status PrepareDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::IoError("cannot create {}: {}", dir, std::strerror(errno));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    return Status::IoError("cannot stat {}: {}", dir, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return Status::InvalidArgument(
        "{} must be a directory of this user, closed to others (mode 0700); remove it", dir);
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultBusUrl() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] != '\0') {
    return std::string("unix:") + runtime + "/weft-pivot.sock";
  }
  return "unix:/tmp/weft-pivot-" + std::to_string(geteuid()) + "/bus.sock";
}

Result<std::unique_ptr<Bus>> OpenBus(std::string_view url, const OpenBusOptions& options) {
  // The bus's sockets, eventfd and threads (libnats's too) are weft's own: a capture of
  // the program never records them (untraced.h).
  ScopedUntraced untraced;
  std::string name(url);
  if (name.empty()) {
    const char* env = std::getenv("WEFT_PIVOT_BUS");
    name = env != nullptr ? env : "";
    if (name.empty()) {
      name = DefaultBusUrl();
      if (std::getenv("XDG_RUNTIME_DIR") == nullptr || std::getenv("XDG_RUNTIME_DIR")[0] == '\0') {
        std::string path = name.substr(5);
        WEFT_RETURN_IF_ERROR(PrepareDirectory(path.substr(0, path.rfind('/'))));
      }
    }
  }
  if (name == "local") return MakeLocalBus();
  if (name.starts_with("unix:")) return OpenUnixBus(name.substr(5), options);
  if (name.starts_with("nats://")) {
    if (!ValidNatsUrl(name)) {
      return Status::InvalidArgument("bad bus URL '{}': expected nats://HOST:PORT", name);
    }
    return OpenNatsBus(name, options);
  }
  return Status::InvalidArgument("bad bus URL '{}': expected local, unix:PATH or nats://HOST:PORT",
                                 name);
}

}  // namespace weft::pivot
