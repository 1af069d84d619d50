/* ferret/c_api.h — the annotation API as plain C functions of libferret_runtime,
 * for languages that call C (Python's ctypes: backends/collectors/python/module/ferret).
 * C++ code uses ferret/ferret.hpp instead: its hot path is inline.
 *
 *   const void* step = ferret_name("step", NULL, NULL, NULL, 0);   once
 *   ferret_region_begin(step);  ...  ferret_region_end(step);      per use
 *
 * Names are registered once and used by handle; every call returns quietly
 * when nothing is recorded (FERRET_BACKEND unset). Strings are copied. */
#ifndef FERRET_C_API_H
#define FERRET_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRET_C_API_VERSION 1

/* FERRET_C_API_VERSION of the library (a binding checks it before use). */
int ferret_c_api_version(void);
/* 1 while events are recorded (a backend is active and not paused), else 0. */
int ferret_recording(void);

/* A name handle for regions, marks and counters, valid for the life of the
 * process; the same arguments give the same handle. domain, function and file
 * may be NULL; line 0 means none. NULL when no runtime session exists. */
const void* ferret_name(const char* name, const char* domain, const char* function,
                        const char* file, uint32_t line);

void ferret_region_begin(const void* name);
void ferret_region_end(const void* name);
void ferret_mark(const void* name);
void ferret_counter_record(const void* name, double value);

/* memory_kind: 0 host, 1 pinned, 2 device, 3 managed; device -1 for host
 * memory. Returns the object's id, 0 if refused (see ferret.hpp). */
uint64_t ferret_data_object_register(const char* name, uintptr_t address, size_t bytes,
                                     int memory_kind, int device);
void ferret_data_object_unregister(uint64_t id);

void ferret_set_thread_name(const char* name);
void ferret_set_metadata_string(const char* key, const char* value);
/* is_integer: the value is written as an integer where it is one within 64
 * bits, else as the number it is. */
void ferret_set_metadata_number(const char* key, double value, int is_integer);
/* An integer exactly: the bits of an int64_t when is_signed, else of a uint64_t. */
void ferret_set_metadata_integer(const char* key, uint64_t bits, int is_signed);
void ferret_flush(void);
void ferret_pause(void);
void ferret_resume(void);

#ifdef __cplusplus
}
#endif

#endif /* FERRET_C_API_H */
