/* Argument readers shared by the addon's functions: each returns 0 with a pending JS exception on bad input. */
#include "udp-gso.h"

#include <string.h>

int get_int(napi_env env, napi_value v, const char *name, int32_t min, int32_t max, int32_t *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", name);
    return 0;
  }
  if (napi_get_value_int32(env, v, out) != napi_ok) return 0;
  if (*out < min || *out > max) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", name);
    return 0;
  }
  return 1;
}

/* A Uint8Array (Buffer) view; 0 with a pending TypeError otherwise. */
int get_u8(napi_env env, napi_value v, const char *name, void **data, size_t *len) {
  bool is = false;
  napi_typedarray_type type;
  napi_value ab;
  size_t off;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is ||
      napi_get_typedarray_info(env, v, &type, len, data, &ab, &off) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", name);
    return 0;
  }
  return 1;
}

int get_destination(napi_env env, napi_value address, int32_t port, destination *out) {
  void *ip;
  size_t n;
  if (!get_u8(env, address, "address must be a Uint8Array", &ip, &n)) return 0;
  memset(out, 0, sizeof(*out));
  if (n == 4) {
    struct sockaddr_in *a = (struct sockaddr_in *)&out->storage;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    memcpy(&a->sin_addr, ip, 4);
    out->len = sizeof(*a);
    return 1;
  }
  if (n == 16) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->storage;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    memcpy(&a->sin6_addr, ip, 16);
    out->len = sizeof(*a);
    return 1;
  }
  napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "address must be 4 or 16 bytes");
  return 0;
}

