// cubin_line_info.hpp — whether a cubin carries line information (built with
// -lineinfo or -G): only those are kept for source correlation, so that the
// memory the collector keeps follows the code a user can read, not every
// library kernel a program loads. No libcupti calls: unit-tested without a GPU.
#pragma once

#include <cstddef>

namespace ferret::cupti {

/// True when `image` is an ELF file with a ".debug_line" or ".nv_debug_line_sass"
/// section. Reads only within `size` bytes; false for anything malformed.
bool cubin_has_line_info(const void* image, std::size_t size) noexcept;

}  // namespace ferret::cupti
