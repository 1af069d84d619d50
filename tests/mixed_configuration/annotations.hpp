// annotations.hpp — one set of annotations, compiled twice into one program:
// annotations.cpp with FERRET_ENABLED=0 (annotate_disabled) and enabled
// (annotate_enabled). See mixed_configuration_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

struct annotation_results {
  bool name_registered = false;
  std::uint64_t object_id = 0;
  std::uint64_t raw_object_id = 0;
};

annotation_results annotate_disabled(const char* thread_name, void* memory, std::size_t bytes,
                                     int metadata_value);
annotation_results annotate_enabled(const char* thread_name, void* memory, std::size_t bytes,
                                    int metadata_value);

// shared_object.cpp, in two shared objects: each records a mark and returns
// its own mode flag (ferret::detail::g_mode).
extern "C" int first_shared_object_mode();
extern "C" int second_shared_object_mode();
