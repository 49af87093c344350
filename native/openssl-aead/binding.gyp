{
  "targets": [
    {
      "target_name": "openssl_aead",
      "sources": ["src/openssl-aead.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
