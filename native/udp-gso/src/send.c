/*
 * Sends a run of UDP datagrams to one destination in one sendmsg(2) with Linux UDP GSO (UDP_SEGMENT): the
 * kernel walks its UDP/IP stack once for the run and cuts it into datagrams at the segment size, on the
 * way out or (where the device offloads it) in the NIC. node:dgram makes one sendmsg per datagram.
 *
 *   sendSegments(fd, address, port, segmentSize, datagrams[, dontFragment]) -> bytes sent (>= 0), or -errno
 *
 * fd: a bound UDP socket's descriptor; address: 4 bytes (IPv4 socket) or 16 bytes (IPv6 socket, IPv4
 * destinations as ::ffff:a.b.c.d); port: 1-65535; datagrams: an Array of 1-64 Uint8Arrays, each exactly
 * segmentSize bytes except the last, which may be shorter (not empty); their sum at most 65,000 bytes.
 * One datagram is sent without the UDP_SEGMENT control message. The call does not block (the socket is
 * non-blocking: EAGAIN comes back as -EAGAIN) and copies nothing itself: the kernel copies the bytes
 * before it returns, so the caller may reuse them at once. Wrong argument types or sizes throw a
 * TypeError or RangeError. Errors of the send itself are returned, never thrown: -EIO or -EINVAL where
 * the route cannot take GSO (no checksum offload on the device), -EAGAIN/-ENOBUFS when the socket's
 * buffer is full, -EPERM when a firewall drops the datagrams, -EMSGSIZE for a don't-fragment datagram larger
 * than the interface's MTU.
 *
 * dontFragment true: these datagrams leave with DF set whatever the kernel knows of the path
 * (IP_PMTUDISC_PROBE, and IPV6_PMTUDISC_PROBE on an IPv6 socket, for this one call), so a router whose next
 * link is smaller drops them instead of fragmenting them: what a path MTU probe needs. Other sends keep the
 * socket's setting (the kernel's default: DF while a datagram fits the path MTU it knows, fragmented at the
 * sender once an ICMP "fragmentation needed" lowered it).
 */
#include "udp-gso.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* The datagrams into iov; 0 with a pending error when one breaks the GSO rules above. */
static int get_segments(napi_env env, napi_value list, int32_t segment, struct iovec *iov, uint32_t *count) {
  bool is = false;
  if (napi_is_array(env, list, &is) != napi_ok || !is) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "datagrams must be an Array");
    return 0;
  }
  if (napi_get_array_length(env, list, count) != napi_ok) return 0;
  if (*count < 1 || *count > MAX_SEGMENTS) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "datagrams must hold 1 to 64 entries");
    return 0;
  }
  size_t total = 0;
  for (uint32_t i = 0; i < *count; i++) {
    napi_value item;
    if (napi_get_element(env, list, i, &item) != napi_ok) return 0;
    if (!get_u8(env, item, "each datagram must be a Uint8Array", &iov[i].iov_base, &iov[i].iov_len)) return 0;
    size_t n = iov[i].iov_len;
    int last = i + 1 == *count;
    if (n == 0 || n > (size_t)segment || (!last && n != (size_t)segment)) {
      napi_throw_range_error(env, "ERR_OUT_OF_RANGE",
                             "each datagram must be segmentSize bytes, the last one at most that (not empty)");
      return 0;
    }
    total += n;
  }
  if (total > MAX_TOTAL) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "the datagrams add up to more than 65,000 bytes");
    return 0;
  }
  return 1;
}

/* Sets IP_MTU_DISCOVER (and IPV6_MTU_DISCOVER on an IPv6 socket) to `mode`, keeping the old values in saved. */
typedef struct {
  int v4, v6, have_v4, have_v6;
} pmtu_modes;

static void set_pmtu_mode(int fd, int family, int v4_mode, int v6_mode, pmtu_modes *saved) {
  socklen_t len = sizeof(int);
  if (saved) saved->have_v4 = getsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &saved->v4, &len) == 0;
  setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v4_mode, sizeof(v4_mode));
  if (family != AF_INET6) return;
  len = sizeof(int);
  if (saved) saved->have_v6 = getsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &saved->v6, &len) == 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v6_mode, sizeof(v6_mode));
}

napi_value send_segments(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 5) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "sendSegments(fd, address, port, segmentSize, datagrams)");
    return NULL;
  }
  int32_t fd, port, segment;
  destination to;
  struct iovec iov[MAX_SEGMENTS];
  uint32_t count;
  if (!get_int(env, argv[0], "fd must be a non-negative integer", 0, INT32_MAX, &fd) ||
      !get_int(env, argv[2], "port must be 1-65535", 1, 65535, &port) ||
      !get_int(env, argv[3], "segmentSize must be 1-65000", 1, MAX_TOTAL, &segment) ||
      !get_destination(env, argv[1], port, &to) || !get_segments(env, argv[4], segment, iov, &count))
    return NULL;

  union {
    char buf[CMSG_SPACE(sizeof(uint16_t))];
    struct cmsghdr align;
  } control;
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_name = &to.storage;
  msg.msg_namelen = to.len;
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  if (count > 1) {
    memset(&control, 0, sizeof(control));
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    uint16_t size = (uint16_t)segment;
    memcpy(CMSG_DATA(c), &size, sizeof(size));
  }
  bool dont_fragment = false;
  if (argc > 5) napi_get_value_bool(env, argv[5], &dont_fragment);
  pmtu_modes saved = {0, 0, 0, 0};
  int family = to.storage.ss_family;
  if (dont_fragment) set_pmtu_mode(fd, family, IP_PMTUDISC_PROBE, IPV6_PMTUDISC_PROBE, &saved);
  ssize_t sent;
  do {
    sent = sendmsg(fd, &msg, MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  int err = errno;
  if (dont_fragment && saved.have_v4) set_pmtu_mode(fd, saved.have_v6 ? family : AF_INET, saved.v4, saved.v6, NULL);
  napi_value result;
  napi_create_int64(env, sent < 0 ? -(int64_t)err : (int64_t)sent, &result);
  return result;
}

