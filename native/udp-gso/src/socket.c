/*
 * A UDP socket the addon owns, read on Node's own event loop (a libuv poll handle) with UDP GRO on: where
 * the kernel coalesces a sender's datagrams (a GSO send, or GRO in the receiving device), one read returns
 * the whole run and its segment size, instead of one read and one JavaScript call per datagram.
 *
 *   open(address, port, onRead, onWritable) -> { handle, fd, port, address }
 *   waitWritable(handle)
 *   close(handle)
 *
 * address: 4 bytes (an IPv4 socket) or 16 (IPv6, dual-stack: IPv4 senders appear as ::ffff:a.b.c.d);
 * port: 0-65535 (0 picks one). open() throws an Error whose `code` is the errno name (EADDRINUSE,
 * EADDRNOTAVAIL...) when the socket cannot be made or bound. onRead(buffer, segmentSize, fromAddress,
 * fromPort) gets a fresh Buffer for every read: one datagram (segmentSize = its length) or a run of
 * datagrams of segmentSize bytes each but the last, which may be shorter. A read longer than any UDP
 * datagram can be (MSG_TRUNC) is dropped. Each wake-up reads at most 64 times, so other sockets get their
 * turn. After a send came back with EAGAIN, waitWritable() asks for one onWritable() call once the socket
 * takes data again. Both buffers are asked for 4 MiB (as root beyond net.core.[rw]mem_max), as wireguard-go
 * does, so bursts of runs do not overflow them. The socket keeps the event loop alive until close(), which
 * stops reading at once (no callback after it returns) and closes the descriptor on the loop's next turn.
 * fd serves sendSegments (send.c).
 */
#include "udp-gso.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#define READS_PER_WAKE 64
#define READ_BUFFER 65536
#define SOCKET_BUFFER (4 * 1024 * 1024)

typedef struct {
  napi_env env;
  napi_ref on_read;
  napi_ref on_writable;
  napi_ref resource;
  napi_async_context async;
  uv_poll_t poll;
  int fd;
  int closing;   /* close() or the finalizer has stopped reading */
  int closed;    /* the poll handle is closed and so is fd */
  int finalized; /* the JS handle is gone: free once closed */
  uint8_t buffer[READ_BUFFER];
} udp_socket;

static void throw_errno(napi_env env, const char *syscall, int err) {
  char code[32];
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  const char *name = strerrorname_np(err);
  snprintf(code, sizeof(code), "%s", name ? name : "EUNKNOWN");
#else
  snprintf(code, sizeof(code), "E%d", err);
#endif
  char text[160];
  snprintf(text, sizeof(text), "%s %s: %s", syscall, code, strerror(err));
  napi_value code_value, message, error;
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message);
  napi_create_error(env, code_value, message, &error);
  napi_throw(env, error);
}

static void on_closed(uv_handle_t *handle) {
  udp_socket *s = handle->data;
  close(s->fd);
  s->fd = -1;
  s->closed = 1;
  napi_handle_scope scope;
  napi_open_handle_scope(s->env, &scope);
  napi_delete_reference(s->env, s->on_read);
  napi_delete_reference(s->env, s->on_writable);
  napi_delete_reference(s->env, s->resource);
  napi_async_destroy(s->env, s->async);
  napi_close_handle_scope(s->env, scope);
  if (s->finalized) free(s);
}

static void start_close(udp_socket *s) {
  s->closing = 1;
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_closed);
}

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  udp_socket *s = data;
  s->finalized = 1;
  if (!s->closing) start_close(s);
  else if (s->closed) free(s);
}

/* The sender's address as text and its port. */
static int format_source(const struct sockaddr_storage *from, char *text, size_t size) {
  if (from->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)from;
    inet_ntop(AF_INET, &a->sin_addr, text, size);
    return ntohs(a->sin_port);
  }
  const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)from;
  inet_ntop(AF_INET6, &a->sin6_addr, text, size);
  return ntohs(a->sin6_port);
}

/* One recvmsg into s->buffer: the bytes read (segment size in *segment), 0 to skip, -1 when drained. */
static ssize_t read_one(udp_socket *s, struct sockaddr_storage *from, int *segment) {
  struct iovec iov = {s->buffer, READ_BUFFER};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_name = from;
  msg.msg_namelen = sizeof(*from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof(control.buf);
  ssize_t n;
  do {
    n = recvmsg(s->fd, &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  if (msg.msg_flags & MSG_TRUNC) return 0;
  *segment = (int)n;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int size;
      memcpy(&size, CMSG_DATA(c), sizeof(size));
      if (size > 0 && size < n) *segment = size;
    }
  }
  return n;
}

/* Calls one of the socket's callbacks; 0 when it threw (reported as an uncaught exception). */
static int call(udp_socket *s, napi_ref which, size_t argc, napi_value *argv) {
  napi_value callback, resource, result;
  napi_get_reference_value(s->env, which, &callback);
  napi_get_reference_value(s->env, s->resource, &resource);
  if (napi_make_callback(s->env, s->async, resource, callback, argc, argv, &result) == napi_pending_exception) {
    napi_value error;
    napi_get_and_clear_last_exception(s->env, &error);
    napi_fatal_exception(s->env, error);
    return 0;
  }
  return 1;
}

/* Hands one read to onRead; 0 when the callback threw. */
static int deliver(udp_socket *s, size_t n, int segment, const struct sockaddr_storage *from) {
  napi_env env = s->env;
  char text[INET6_ADDRSTRLEN];
  int port = format_source(from, text, sizeof(text));
  napi_value argv[4];
  napi_create_buffer_copy(env, n, s->buffer, NULL, &argv[0]);
  napi_create_int32(env, segment, &argv[1]);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &argv[2]);
  napi_create_int32(env, port, &argv[3]);
  return call(s, s->on_read, 4, argv);
}

static void on_events(uv_poll_t *poll, int status, int events);

static void on_writable(udp_socket *s) {
  uv_poll_start(&s->poll, UV_READABLE, on_events);
  napi_handle_scope scope;
  napi_open_handle_scope(s->env, &scope);
  call(s, s->on_writable, 0, NULL);
  napi_close_handle_scope(s->env, scope);
}

static void on_events(uv_poll_t *poll, int status, int events) {
  udp_socket *s = poll->data;
  if (status < 0) return;
  if ((events & UV_WRITABLE) && !s->closing) on_writable(s);
  if (!(events & UV_READABLE)) return;
  for (int i = 0; i < READS_PER_WAKE && !s->closing; i++) {
    struct sockaddr_storage from;
    int segment = 0;
    ssize_t n = read_one(s, &from, &segment);
    if (n < 0) break;
    if (n == 0 && segment == 0) continue;
    napi_handle_scope scope;
    napi_open_handle_scope(s->env, &scope);
    int ok = deliver(s, (size_t)n, segment, &from);
    napi_close_handle_scope(s->env, scope);
    if (!ok) break;
  }
}

/* Makes, binds and sets up the socket; -errno (with *syscall naming the call) when that fails. */
static int bind_socket(const destination *where, const char **syscall) {
  int family = where->storage.ss_family;
  *syscall = "socket";
  int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int off = 0, on = 1, size = SOCKET_BUFFER;
  if (family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  *syscall = "bind";
  if (bind(fd, (const struct sockaddr *)&where->storage, where->len) < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  /* Kernels before 5.0 have no UDP GRO: every read is then one datagram. */
  setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on));
  return fd;
}

static napi_value describe(napi_env env, udp_socket *s) {
  struct sockaddr_storage local;
  socklen_t len = sizeof(local);
  char text[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (getsockname(s->fd, (struct sockaddr *)&local, &len) == 0) port = format_source(&local, text, sizeof(text));
  napi_value out, handle, fd, port_value, address;
  napi_create_object(env, &out);
  napi_create_external(env, s, finalize, NULL, &handle);
  napi_create_int32(env, s->fd, &fd);
  napi_create_int32(env, port, &port_value);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &address);
  napi_set_named_property(env, out, "handle", handle);
  napi_set_named_property(env, out, "fd", fd);
  napi_set_named_property(env, out, "port", port_value);
  napi_set_named_property(env, out, "address", address);
  return out;
}

napi_value socket_open(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  napi_valuetype read_type = napi_undefined, writable_type = napi_undefined;
  if (argc < 4 || napi_typeof(env, argv[2], &read_type) != napi_ok || read_type != napi_function ||
      napi_typeof(env, argv[3], &writable_type) != napi_ok || writable_type != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "open(address, port, onRead, onWritable): both callbacks must be functions");
    return NULL;
  }
  int32_t port;
  destination where;
  if (!get_int(env, argv[1], "port must be 0-65535", 0, 65535, &port) ||
      !get_destination(env, argv[0], port, &where))
    return NULL;
  const char *syscall;
  int fd = bind_socket(&where, &syscall);
  if (fd < 0) {
    throw_errno(env, syscall, -fd);
    return NULL;
  }
  uv_loop_t *loop;
  udp_socket *s = calloc(1, sizeof(*s));
  if (s == NULL || napi_get_uv_event_loop(env, &loop) != napi_ok || uv_poll_init(loop, &s->poll, fd) != 0) {
    free(s);
    close(fd);
    throw_errno(env, "uv_poll_init", ENOMEM);
    return NULL;
  }
  s->env = env;
  s->fd = fd;
  s->poll.data = s;
  napi_value resource, name;
  napi_create_object(env, &resource);
  napi_create_string_utf8(env, "UDPGSOSOCKET", NAPI_AUTO_LENGTH, &name);
  napi_create_reference(env, argv[2], 1, &s->on_read);
  napi_create_reference(env, argv[3], 1, &s->on_writable);
  napi_create_reference(env, resource, 1, &s->resource);
  napi_async_init(env, resource, name, &s->async);
  uv_poll_start(&s->poll, UV_READABLE, on_events);
  return describe(env, s);
}

/* The socket behind the first argument; NULL with a pending TypeError when it is not open()'s handle. */
static udp_socket *socket_of(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void *data = NULL;
  napi_valuetype type = napi_undefined;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_external ||
      napi_get_value_external(env, argv[0], &data) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "handle must be what open() returned");
    return NULL;
  }
  return data;
}

napi_value socket_close(napi_env env, napi_callback_info info) {
  udp_socket *s = socket_of(env, info);
  if (s != NULL && !s->closing) start_close(s);
  return NULL;
}

napi_value socket_wait_writable(napi_env env, napi_callback_info info) {
  udp_socket *s = socket_of(env, info);
  if (s != NULL && !s->closing) uv_poll_start(&s->poll, UV_READABLE | UV_WRITABLE, on_events);
  return NULL;
}
