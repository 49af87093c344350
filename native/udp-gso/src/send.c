/*
 * Sends a run of UDP datagrams to one destination in one sendmsg(2) with Linux UDP GSO (UDP_SEGMENT): the
 * kernel walks its UDP/IP stack once for the run and cuts it into datagrams at the segment size, on the
 * way out or (where the device offloads it) in the NIC. node:dgram makes one sendmsg per datagram.
 *
 *   sendSegments(fd, address, port, segmentSize, datagrams) -> bytes sent (>= 0), or -errno
 *
 * fd: a bound UDP socket's descriptor; address: 4 bytes (IPv4 socket) or 16 bytes (IPv6 socket, IPv4
 * destinations as ::ffff:a.b.c.d); port: 1-65535; datagrams: an Array of 1-64 Uint8Arrays, each exactly
 * segmentSize bytes except the last, which may be shorter (not empty); their sum at most 65,000 bytes.
 * One datagram is sent without the UDP_SEGMENT control message. The call does not block (the socket is
 * non-blocking: EAGAIN comes back as -EAGAIN) and copies nothing itself: the kernel copies the bytes
 * before it returns, so the caller may reuse them at once. Wrong argument types or sizes throw a
 * TypeError or RangeError. Errors of the send itself are returned, never thrown: -EIO or -EINVAL where
 * the route cannot take GSO (no checksum offload on the device), -EAGAIN/-ENOBUFS when the socket's
 * buffer is full, -EPERM when a firewall drops the datagrams.
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

napi_value send_segments(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
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
  ssize_t sent;
  do {
    sent = sendmsg(fd, &msg, MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  napi_value result;
  napi_create_int64(env, sent < 0 ? -(int64_t)errno : (int64_t)sent, &result);
  return result;
}

