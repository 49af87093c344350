/*
 * ChaCha20-Poly1305 (RFC 8439) through the OpenSSL that Node.js itself is linked with, writing into the
 * caller's buffers: no allocation and no copy per call. node:crypto reaches the same OpenSSL code, but it
 * allocates and returns a new buffer for every update(); libsodium's implementation has no AVX-512 path.
 *
 *   seal(out, key, nonce, plaintext[, aad]) -> plaintext.length + 16  (out = ciphertext || 16-byte tag)
 *   open(out, key, nonce, ciphertext[, aad]) -> ciphertext.length - 16, or -1 when the tag does not verify
 *   sealTransports(key, receiverIndex, firstCounter, datagrams) -> datagrams.length
 *
 * sealTransports builds a run of WireGuard transport datagrams in one call: each element of `datagrams` is a
 * whole datagram (16-byte header, padded plaintext, 16 bytes for the tag) whose plaintext is already in
 * place; the call writes each header (type 4, receiverIndex, counter firstCounter + i) and seals the
 * plaintext in place under the counter's nonce (4 zero bytes, the counter little-endian). firstCounter is an
 * integer below 2^53 (JavaScript's exact range); datagrams: 1-1024 byte arrays of 32 bytes or more.
 *
 * key: 32 bytes; nonce: 12 bytes; out: at least the returned length; out may be the input itself (in place)
 * but must not overlap it otherwise. When open returns -1 the bytes of out are unspecified (decryption runs
 * while the tag is computed, as in Go's chacha20poly1305.Open): callers drop the packet. Wrong argument types
 * or sizes throw a TypeError or RangeError; arguments after aad are ignored.
 * Each Node.js environment (main thread, worker) holds its own pair of cipher contexts.
 */
#include <limits.h>
#include <node_api.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LEN 32
#define NONCE_LEN 12
#define TAG_LEN 16

typedef struct {
  EVP_CIPHER_CTX *enc;
  EVP_CIPHER_CTX *dec;
} contexts;

typedef struct {
  uint8_t *p;
  size_t n;
} bytes;

/* A Buffer or any TypedArray/DataView view; 0 (with a pending TypeError) otherwise. */
static int get_bytes(napi_env env, napi_value v, const char *name, bytes *out) {
  bool is;
  void *data = NULL;
  size_t len = 0;
  if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type type;
    napi_value ab;
    size_t off;
    if (napi_get_typedarray_info(env, v, &type, &len, &data, &ab, &off) != napi_ok) return 0;
    if (type != napi_uint8_array && type != napi_int8_array && type != napi_uint8_clamped_array) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", name);
      return 0;
    }
  } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
    napi_value ab;
    size_t off;
    if (napi_get_dataview_info(env, v, &len, &data, &ab, &off) != napi_ok) return 0;
  } else {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", name);
    return 0;
  }
  out->p = data;
  out->n = len;
  return 1;
}

/* Reads (out, key, nonce, input[, aad]) and checks the fixed sizes; 0 with a pending exception otherwise. */
static int get_args(napi_env env, napi_callback_info info, contexts **ctx, bytes a[5], size_t *argc) {
  napi_value v[5];
  *argc = 5;
  if (napi_get_cb_info(env, info, argc, v, NULL, (void **)ctx) != napi_ok) return 0;
  if (*argc > 5) *argc = 5; /* napi reports the count passed, which may exceed the 5 slots read */
  if (*argc < 4) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "expected (out, key, nonce, input[, aad])");
    return 0;
  }
  static const char *names[5] = {"out must be a byte array", "key must be a byte array",
                                 "nonce must be a byte array", "input must be a byte array",
                                 "aad must be a byte array"};
  for (size_t i = 0; i < *argc; i++) {
    if (i == 4) {
      napi_valuetype t;
      if (napi_typeof(env, v[4], &t) != napi_ok) return 0;
      if (t == napi_undefined || t == napi_null) {
        *argc = 4;
        break;
      }
    }
    if (!get_bytes(env, v[i], names[i], &a[i])) return 0;
  }
  if (a[1].n != KEY_LEN) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "key must be 32 bytes");
    return 0;
  }
  if (a[2].n != NONCE_LEN) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "nonce must be 12 bytes");
    return 0;
  }
  if (a[3].n > (size_t)INT_MAX - TAG_LEN || (*argc == 5 && a[4].n > (size_t)INT_MAX)) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "input too large");
    return 0;
  }
  return 1;
}

static napi_value int_value(napi_env env, int n) {
  napi_value r = NULL;
  napi_create_int32(env, n, &r);
  return r;
}

static napi_value seal(napi_env env, napi_callback_info info) {
  contexts *ctx;
  bytes a[5];
  size_t argc;
  if (!get_args(env, info, &ctx, a, &argc)) return NULL;
  int n = (int)a[3].n;
  if (a[0].n < (size_t)n + TAG_LEN) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "out is shorter than input + 16");
    return NULL;
  }
  EVP_CIPHER_CTX *c = ctx->enc;
  int len = 0;
  int ok = EVP_EncryptInit_ex(c, NULL, NULL, a[1].p, a[2].p) == 1;
  if (ok && argc == 5 && a[4].n > 0) ok = EVP_EncryptUpdate(c, NULL, &len, a[4].p, (int)a[4].n) == 1;
  if (ok && n > 0) ok = EVP_EncryptUpdate(c, a[0].p, &len, a[3].p, n) == 1;
  if (ok) ok = EVP_EncryptFinal_ex(c, a[0].p + n, &len) == 1;
  if (ok) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, a[0].p + n) == 1;
  if (!ok) {
    napi_throw_error(env, "ERR_CRYPTO_OPERATION_FAILED", "ChaCha20-Poly1305 seal failed");
    return NULL;
  }
  return int_value(env, n + TAG_LEN);
}

static napi_value open_(napi_env env, napi_callback_info info) {
  contexts *ctx;
  bytes a[5];
  size_t argc;
  if (!get_args(env, info, &ctx, a, &argc)) return NULL;
  if (a[3].n < TAG_LEN) return int_value(env, -1);
  int n = (int)a[3].n - TAG_LEN;
  if (a[0].n < (size_t)n) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "out is shorter than input - 16");
    return NULL;
  }
  EVP_CIPHER_CTX *c = ctx->dec;
  int len = 0;
  /* The tag is copied into the context before the ciphertext is decrypted, so in place is safe. */
  int ok = EVP_DecryptInit_ex(c, NULL, NULL, a[1].p, a[2].p) == 1;
  if (ok) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, a[3].p + n) == 1;
  if (ok && argc == 5 && a[4].n > 0) ok = EVP_DecryptUpdate(c, NULL, &len, a[4].p, (int)a[4].n) == 1;
  if (ok && n > 0) ok = EVP_DecryptUpdate(c, a[0].p, &len, a[3].p, n) == 1;
  /* Final fails when the tag does not verify: the plaintext already written is garbage to the caller. */
  if (ok) ok = EVP_DecryptFinal_ex(c, a[0].p + n, &len) == 1;
  return int_value(env, ok ? n : -1);
}

#define DATA_HEADER_LEN 16
#define MAX_RUN 1024

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* One transport datagram: header at d, plaintext d[16 .. n-16) sealed in place, tag in the last 16 bytes. */
static int seal_datagram(EVP_CIPHER_CTX *c, const uint8_t *key, uint32_t receiver, uint64_t counter, uint8_t *d,
                         size_t n) {
  uint8_t nonce[NONCE_LEN] = {0};
  put_le32(nonce + 4, (uint32_t)counter);
  put_le32(nonce + 8, (uint32_t)(counter >> 32));
  put_le32(d, 4); /* type 4, three reserved zero bytes */
  put_le32(d + 4, receiver);
  memcpy(d + 8, nonce + 4, 8);
  int body = (int)(n - DATA_HEADER_LEN - TAG_LEN);
  int len = 0;
  uint8_t *p = d + DATA_HEADER_LEN;
  int ok = EVP_EncryptInit_ex(c, NULL, NULL, key, nonce) == 1;
  if (ok && body > 0) ok = EVP_EncryptUpdate(c, p, &len, p, body) == 1;
  if (ok) ok = EVP_EncryptFinal_ex(c, p + body, &len) == 1;
  if (ok) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, p + body) == 1;
  return ok;
}

/* Reads (key, receiverIndex, firstCounter, datagrams) and checks them; 0 with a pending exception otherwise. */
static int get_run_args(napi_env env, napi_callback_info info, contexts **ctx, bytes *key, uint32_t *receiver,
                        uint64_t *first, napi_value *list, uint32_t *count) {
  napi_value v[4];
  size_t argc = 4;
  if (napi_get_cb_info(env, info, &argc, v, NULL, (void **)ctx) != napi_ok) return 0;
  if (argc < 4) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "expected (key, receiverIndex, firstCounter, datagrams)");
    return 0;
  }
  if (!get_bytes(env, v[0], "key must be a byte array", key)) return 0;
  if (key->n != KEY_LEN) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "key must be 32 bytes");
    return 0;
  }
  double index, counter;
  if (napi_get_value_double(env, v[1], &index) != napi_ok || napi_get_value_double(env, v[2], &counter) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "receiverIndex and firstCounter must be numbers");
    return 0;
  }
  if (!(index >= 0 && index <= 4294967295.0 && index == (double)(uint32_t)index)) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "receiverIndex must be an integer 0..2^32-1");
    return 0;
  }
  if (!(counter >= 0 && counter <= 9007199254740991.0 && counter == (double)(uint64_t)counter)) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "firstCounter must be an integer 0..2^53-1");
    return 0;
  }
  bool is_array;
  if (napi_is_array(env, v[3], &is_array) != napi_ok || !is_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "datagrams must be an array");
    return 0;
  }
  if (napi_get_array_length(env, v[3], count) != napi_ok) return 0;
  if (*count == 0 || *count > MAX_RUN) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "datagrams must hold 1-1024 byte arrays");
    return 0;
  }
  *receiver = (uint32_t)index;
  *first = (uint64_t)counter;
  *list = v[3];
  return 1;
}

static napi_value seal_transports(napi_env env, napi_callback_info info) {
  contexts *ctx;
  bytes key;
  uint32_t receiver, count;
  uint64_t first;
  napi_value list;
  if (!get_run_args(env, info, &ctx, &key, &receiver, &first, &list, &count)) return NULL;
  /* Every element is checked before the first is written: a bad run changes nothing. */
  bytes d[MAX_RUN];
  for (uint32_t i = 0; i < count; i++) {
    napi_value e;
    if (napi_get_element(env, list, i, &e) != napi_ok) return NULL;
    if (!get_bytes(env, e, "each datagram must be a byte array", &d[i])) return NULL;
    if (d[i].n < DATA_HEADER_LEN + TAG_LEN || d[i].n - DATA_HEADER_LEN - TAG_LEN > (size_t)INT_MAX) {
      napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "each datagram must be 32 bytes or more");
      return NULL;
    }
  }
  for (uint32_t i = 0; i < count; i++) {
    if (!seal_datagram(ctx->enc, key.p, receiver, first + i, d[i].p, d[i].n)) {
      napi_throw_error(env, "ERR_CRYPTO_OPERATION_FAILED", "ChaCha20-Poly1305 seal failed");
      return NULL;
    }
  }
  return int_value(env, (int)count);
}

static void free_contexts(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  contexts *ctx = data;
  EVP_CIPHER_CTX_free(ctx->enc);
  EVP_CIPHER_CTX_free(ctx->dec);
  free(ctx);
}

NAPI_MODULE_INIT() {
  contexts *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) {
    napi_throw_error(env, "ERR_MEMORY_ALLOCATION_FAILED", "openssl-aead: out of memory");
    return NULL;
  }
  ctx->enc = EVP_CIPHER_CTX_new();
  ctx->dec = EVP_CIPHER_CTX_new();
  const EVP_CIPHER *cipher = EVP_chacha20_poly1305();
  if (ctx->enc == NULL || ctx->dec == NULL || cipher == NULL ||
      EVP_EncryptInit_ex(ctx->enc, cipher, NULL, NULL, NULL) != 1 ||
      EVP_DecryptInit_ex(ctx->dec, cipher, NULL, NULL, NULL) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx->enc, EVP_CTRL_AEAD_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx->dec, EVP_CTRL_AEAD_SET_IVLEN, NONCE_LEN, NULL) != 1) {
    free_contexts(env, ctx, NULL);
    napi_throw_error(env, "ERR_CRYPTO_UNKNOWN_CIPHER", "openssl-aead: chacha20-poly1305 is not available");
    return NULL;
  }
  napi_property_descriptor props[] = {
      {"seal", NULL, seal, NULL, NULL, NULL, napi_enumerable, ctx},
      {"open", NULL, open_, NULL, NULL, NULL, napi_enumerable, ctx},
      {"sealTransports", NULL, seal_transports, NULL, NULL, NULL, napi_enumerable, ctx},
  };
  if (napi_define_properties(env, exports, 3, props) != napi_ok) {
    free_contexts(env, ctx, NULL);
    return NULL;
  }
  /* The contexts live as long as the exports object of this environment (main thread or worker). */
  if (napi_wrap(env, exports, ctx, free_contexts, NULL, NULL) != napi_ok) {
    free_contexts(env, ctx, NULL);
    return NULL;
  }
  return exports;
}
