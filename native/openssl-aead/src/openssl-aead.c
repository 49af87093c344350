/*
 * ChaCha20-Poly1305 (RFC 8439) through the OpenSSL that Node.js itself is linked with, writing into the
 * caller's buffers: no allocation and no copy per call. node:crypto reaches the same OpenSSL code, but it
 * allocates and returns a new buffer for every update(); libsodium's implementation has no AVX-512 path.
 *
 *   seal(out, key, nonce, plaintext[, aad]) -> plaintext.length + 16  (out = ciphertext || 16-byte tag)
 *   open(out, key, nonce, ciphertext[, aad]) -> ciphertext.length - 16, or -1 when the tag does not verify
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
  };
  if (napi_define_properties(env, exports, 2, props) != napi_ok) {
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
