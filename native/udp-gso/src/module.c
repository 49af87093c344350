/* The addon's exports: sendSegments (send.c), open, waitWritable and close (socket.c). */
#include "udp-gso.h"

static int export_function(napi_env env, napi_value exports, const char *name, napi_callback fn) {
  napi_value value;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, NULL, &value) == napi_ok &&
         napi_set_named_property(env, exports, name, value) == napi_ok;
}

NAPI_MODULE_INIT() {
  if (!export_function(env, exports, "sendSegments", send_segments) ||
      !export_function(env, exports, "open", socket_open) || !export_function(env, exports, "close", socket_close) ||
      !export_function(env, exports, "waitWritable", socket_wait_writable))
    return NULL;
  return exports;
}
