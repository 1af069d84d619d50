// ferret/config.hpp — compile-time switches and portability macros.
#pragma once

#define FERRET_VERSION_MAJOR 0
#define FERRET_VERSION_MINOR 1
#define FERRET_VERSION_PATCH 0
#define FERRET_VERSION_STRING "0.1.0"

// FERRET_ENABLED=0 turns every annotation into an empty inline: the object
// file is then identical to the same file without annotations (and without
// the header; tests/compile_out proves it). Per-library switches are domains,
// see ferret::domain_enabled in ferret.hpp.
#ifndef FERRET_ENABLED
#define FERRET_ENABLED 1
#endif

// The inline namespace of everything in ferret.hpp whose code depends on
// FERRET_ENABLED. Enabled and disabled translation units of one program (a
// library built with FERRET_ENABLED=0 inside a traced application) then
// define different names, each keeping the code it was compiled with, as
// NVTX3 does with its versioned namespace. "v1": change it when an inline
// function's behaviour changes incompatibly. The ABI with the runtime
// (detail/abi.hpp) stays outside it.
#if FERRET_ENABLED
#define FERRET_CONFIGURATION v1_enabled
#else
#define FERRET_CONFIGURATION v1_disabled
#endif

#if defined(__GNUC__) || defined(__clang__)
#define FERRET_LIKELY(x) __builtin_expect(!!(x), 1)
#define FERRET_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FERRET_ALWAYS_INLINE inline __attribute__((always_inline))
#define FERRET_NOINLINE __attribute__((noinline, cold))
// Per shared object: each DSO that includes the header keeps its own copy, so
// the hot path never goes through the GOT or a TLS resolver call.
#define FERRET_DSO_LOCAL __attribute__((visibility("hidden")))
// Shared objects use initial-exec TLS (no __tls_get_addr call on the hot
// path); executables let the compiler pick local-exec, one instruction cheaper.
#if defined(__PIC__) && !defined(__PIE__)
#define FERRET_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define FERRET_TLS_MODEL
#endif
#define FERRET_WEAK __attribute__((weak))
#else
#error "ferret needs GCC or Clang (it relies on their attributes)"
#endif

#define FERRET_CONCAT_IMPL(a, b) a##b
#define FERRET_CONCAT(a, b) FERRET_CONCAT_IMPL(a, b)
