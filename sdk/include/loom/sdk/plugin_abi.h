/* Loom plugin ABI, layer 0: the frozen C entry point and the descriptors it returns.
 *
 * Contract: a plugin exports exactly one symbol, `loom_plugin_query`, returning a pointer to a
 * static `loom_plugin_desc`. The host reads `magic` and `struct_size` before any other field, then
 * the ABI numbers and the toolchain fingerprint, and only then touches a component. Every function
 * reached through these structs is noexcept and reports failure as a `loom_status` plus a message
 * written into a host-owned buffer. Structs grow only at the end (minor bump); anything else is a
 * major bump. See docs/plugins.md. This header is C and C++ compatible. */
#ifndef LOOM_SDK_PLUGIN_ABI_H
#define LOOM_SDK_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define LOOM_NOEXCEPT noexcept
extern "C" {
#else
#define LOOM_NOEXCEPT
#endif

/* 'LOOM' read as a little-endian uint32. */
#define LOOM_PLUGIN_MAGIC 0x4D4F4F4Cu
/* Before 1.0 the host requires an exact major match and a minor no newer than its own. */
#define LOOM_PLUGIN_ABI_MAJOR 0u
#define LOOM_PLUGIN_ABI_MINOR 5u

/* Component kinds. Values are frozen; new kinds are appended (minor bump). */
typedef enum loom_component_kind {
  LOOM_KIND_BACKEND = 1,
  LOOM_KIND_TOKENIZER = 2,
  LOOM_KIND_DATASET = 3,
  LOOM_KIND_BLOCK = 4,
  LOOM_KIND_OPTIMIZER = 5,
  LOOM_KIND_SCHEDULE = 6,
  LOOM_KIND_PRECISION = 7,
  LOOM_KIND_COMMUNICATOR = 8
} loom_component_kind;

/* Status codes returned across layer 0. Messages travel in the host's error buffer. */
typedef enum loom_status {
  LOOM_OK = 0,
  LOOM_E_INVALID_CONFIG = 1, /* the component's options are wrong; message lists every problem */
  LOOM_E_UNSUPPORTED = 2,    /* valid request this component cannot serve here (e.g. no device) */
  LOOM_E_OUT_OF_MEMORY = 3,
  LOOM_E_DEVICE = 4,
  LOOM_E_IO = 5,
  LOOM_E_INTERNAL = 6
} loom_status;

/* Host-owned buffer for an error message; always NUL-terminated, truncated with "..." when full. */
typedef struct loom_error_buffer {
  char* text;
  size_t capacity;
} loom_error_buffer;

/* Build environment of the plugin; C++ objects cross the boundary only when these match the host. */
typedef struct loom_toolchain {
  uint32_t struct_size;
  const char* stdlib;   /* "libstdc++" or "libc++" */
  int32_t cxx11_abi;    /* _GLIBCXX_USE_CXX11_ABI, or -1 when not libstdc++ */
  int64_t cplusplus;    /* __cplusplus of the plugin's build */
  const char* compiler; /* informational, e.g. "GCC 12.2.0" */
} loom_toolchain;

/* Services the host lends to components. Owned by the host; valid for the component's lifetime. */
typedef struct loom_host_services {
  uint32_t struct_size;
  void* context;
  /* level: 0 trace, 1 debug, 2 info, 3 warn, 4 error. */
  void (*log)(void* context, int32_t level, const char* component, const char* message) LOOM_NOEXCEPT;
} loom_host_services;

/* What the host hands to a component factory. */
typedef struct loom_create_args {
  uint32_t struct_size;
  /* The component's recipe table re-serialised as TOML text (UTF-8, not NUL-terminated). */
  const char* config_toml;
  size_t config_length;
  /* Where each key came from: lines "dotted.key<TAB>file:line:col", for error messages. */
  const char* config_origins;
  size_t config_origins_length;
  /* Where the table itself came from ("recipe.toml:12:1"), NUL-terminated. */
  const char* table_origin;
  /* Non-zero: validate options only; acquire no devices, files or large memory. */
  int32_t dry_run;
  const loom_host_services* host;
  /* The recipe table the options come from ("data", "eval_data"), NUL-terminated; used in
   * messages, since one kind may be configured by several tables. */
  const char* table_name;
} loom_create_args;

/* Factory: on LOOM_OK stores a pointer to the kind's C++ interface in *out. */
typedef loom_status (*loom_create_fn)(const loom_create_args* args, void** out,
                                      loom_error_buffer* error) LOOM_NOEXCEPT;
/* Destroys what `create` made; never fails. */
typedef void (*loom_destroy_fn)(void* component) LOOM_NOEXCEPT;

/* A component's named interfaces (loom/sdk/interfaces.hpp): `component`'s implementation of the
 * interface called `name` at `version`, or NULL when it offers no such thing. `component` is the
 * pointer `create` stored. Never fails, never throws. */
typedef void* (*loom_query_interface_fn)(void* component, const char* name, uint32_t version) LOOM_NOEXCEPT;

typedef struct loom_component_desc {
  uint32_t struct_size;
  uint32_t kind;              /* loom_component_kind */
  const char* name;           /* recipe name without the kind, e.g. "local" for communicator/local */
  const char* version;        /* semver of this component */
  uint32_t interface_version; /* version of the kind's C++ interface it implements */
  const char* summary;        /* one line for `loom plugins` */
  loom_create_fn create;
  loom_destroy_fn destroy;
  /* Added in ABI 0.3; NULL when the component offers no named interface. A descriptor whose
   * struct_size ends before this field (an older plugin) offers none. */
  loom_query_interface_fn query_interface;
} loom_component_desc;

typedef struct loom_plugin_desc {
  uint32_t magic;       /* LOOM_PLUGIN_MAGIC */
  uint32_t struct_size; /* sizeof(loom_plugin_desc) as the plugin compiled it */
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* sdk_version;
  loom_toolchain toolchain;
  const char* name;    /* plugin name; the file is libloom-<name>.so */
  const char* version; /* plugin semver */
  const char* description;
  uint32_t num_components;
  const loom_component_desc* components;
  void* reserved[4];
} loom_plugin_desc;

typedef const loom_plugin_desc* (*loom_plugin_query_fn)(void);

#define LOOM_PLUGIN_ENTRY_SYMBOL "loom_plugin_query"

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SDK_PLUGIN_ABI_H */
