// cubin_sections.hpp — what a cubin's section headers say: whether it carries
// line information (built with -lineinfo or -G: only those are kept for
// source correlation, so that the memory the collector keeps follows the code
// a user can read, not every library kernel a program loads), and which
// functions it holds. No libcupti calls: unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ferret::cupti {

/// True when `image` is an ELF file with a ".debug_line" or ".nv_debug_line_sass"
/// section. Reads only within `size` bytes; false for anything malformed.
bool cubin_has_line_info(const void* image, std::size_t size) noexcept;

/// The (mangled) names of the functions the cubin holds, kernels and device
/// functions alike: each has its own ".text.<name>" section. Empty for
/// anything malformed.
std::vector<std::string> cubin_function_names(const void* image, std::size_t size);

}  // namespace ferret::cupti
