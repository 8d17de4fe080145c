// The inode of the other end of a connected Unix socket, asked of the kernel through
// NETLINK_SOCK_DIAG (what `ss -x` shows as "Peer"). With it, reconcile pairs the two ends
// of every Unix connection exactly, even many connections between the same two processes
// on the same path (WAP5 Table 1 matches them by path and peer pid only, which cannot).
//
// Asked at accept (and for a connected socket found open): the connecting end is known
// then, unless it was already closed. Not at connect, where the other end is still an
// embryo without an inode. Paid once per connection: a netlink socket, one request, one
// reply, all raw system calls so the library does not log them. Where the kernel has no
// unix_diag, the answer is 0 ("unknown").
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/preload/log_file.h"
#include "capture/preload/runtime.h"

namespace weft_preload {

uint64_t UnixPeerInode(uint64_t inode) {
  if (inode == 0 || inode > 0xffffffffu) return 0;  // unix_diag names sockets by u32
  int fd = int(syscall(SYS_socket, AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (fd < 0) return 0;
  struct {
    nlmsghdr header;
    unix_diag_req request;
  } message;
  memset(&message, 0, sizeof message);
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.header.nlmsg_seq = 1;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0u;
  message.request.udiag_ino = uint32_t(inode);
  message.request.udiag_show = UDIAG_SHOW_PEER;
  message.request.udiag_cookie[0] = message.request.udiag_cookie[1] = ~0u;  // no cookie
  uint64_t peer = 0;
  if (syscall(SYS_sendto, fd, &message, sizeof message, 0, nullptr, 0) == long(sizeof message)) {
    alignas(nlmsghdr) char reply[1024];
    long n;
    do {
      n = syscall(SYS_recvfrom, fd, reply, sizeof reply, 0, nullptr, nullptr);
    } while (n < 0 && errno == EINTR);
    auto* header = reinterpret_cast<nlmsghdr*>(reply);
    if (n > 0 && NLMSG_OK(header, uint32_t(n)) && header->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      auto* diag = static_cast<unix_diag_msg*>(NLMSG_DATA(header));
      int left = int(header->nlmsg_len) - int(NLMSG_LENGTH(sizeof *diag));
      for (auto* attribute = reinterpret_cast<rtattr*>(diag + 1); RTA_OK(attribute, left);
           attribute = RTA_NEXT(attribute, left)) {
        if (attribute->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(attribute) >= sizeof(uint32_t)) {
          uint32_t value;
          memcpy(&value, RTA_DATA(attribute), sizeof value);
          peer = value;
        }
      }
    }
  }
  SysClose(fd);
  return peer;
}

}  // namespace weft_preload
