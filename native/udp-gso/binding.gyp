{
  "targets": [
    {
      "target_name": "udp_gso",
      "conditions": [
        ["OS=='linux'", {
          "sources": ["src/args.c", "src/send.c", "src/socket.c", "src/module.c"],
          "cflags": ["-O2", "-Wall", "-Wextra"],
          "defines": ["NAPI_VERSION=8"]
        }]
      ]
    }
  ]
}
