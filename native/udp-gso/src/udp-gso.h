/* Shared declarations of the UDP GSO addon (send.c, socket.c, args.c). */
#ifndef UDP_GSO_H
#define UDP_GSO_H

#define _GNU_SOURCE
#include <netinet/in.h>
#include <node_api.h>
#include <stdint.h>
#include <sys/socket.h>

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Datagrams in one GSO send at most (the kernel's UDP_MAX_SEGMENTS), and their bytes together. */
#define MAX_SEGMENTS 64
#define MAX_TOTAL 65000

typedef struct {
  struct sockaddr_storage storage;
  socklen_t len;
} destination;

int get_int(napi_env env, napi_value v, const char *name, int32_t min, int32_t max, int32_t *out);
int get_u8(napi_env env, napi_value v, const char *name, void **data, size_t *len);
/* address: 4 bytes (AF_INET) or 16 (AF_INET6) */
int get_destination(napi_env env, napi_value address, int32_t port, destination *out);

napi_value send_segments(napi_env env, napi_callback_info info);
napi_value socket_open(napi_env env, napi_callback_info info);
napi_value socket_close(napi_env env, napi_callback_info info);
napi_value socket_wait_writable(napi_env env, napi_callback_info info);

#endif
