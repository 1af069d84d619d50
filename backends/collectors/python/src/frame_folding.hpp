// frame_folding.hpp — which Python frames become calling-context nodes, and
// their names. Pure functions over file names, so the tests need no Python.
//
// A frame is *library* code when its file is in the standard library
// (…/lib/python3.N/…, frozen modules "<frozen …>") or in an installed package
// (…/site-packages/<package>/…, …/dist-packages/<package>/…); everything else
// is the user's. From the outermost frame to the innermost:
//   - every user frame is a node            "train.py:42 train_step"
//   - every run of library frames is ONE    "[torch] Tensor.backward"
//     node, named after the run's outermost frame: the library function the
//     user's code called (its package in brackets; "python" for the
//     standard library)
//   - only the innermost `max_nodes` nodes are kept; a node "[…]" stands for
//     the outer ones.
// So `loss.backward()` on line 42 of train_step, whose kernels torch launches
// twenty frames deeper, gives the path
//   train.py:57 <module> / train.py:42 train_step / [torch] Tensor.backward
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ferret::python {

struct frame_origin {
  bool library;
  std::string package;  // library frames: "torch", "numpy", "python" (standard library)
};

frame_origin classify_file(std::string_view file);

// "train.py:42 train_step" (the file's base name).
std::string user_frame_name(std::string_view file, int line, std::string_view function);
// "[torch] Tensor.backward".
std::string library_frame_name(std::string_view package, std::string_view function);
// The node that stands for frames dropped beyond the depth limit.
inline constexpr const char* outer_frames_name = "[…]";

inline constexpr std::size_t max_frames = 64;  // walked, innermost first
inline constexpr std::size_t max_nodes = 16;   // kept, innermost

// Folds `count` frames (innermost first; is_library[i] for frame i) into
// nodes. Writes the frame index of each node, outermost node first, to
// `nodes` (room for max_nodes) and returns how many; `truncated` says whether
// outer nodes were dropped (beyond max_nodes, or frames beyond max_frames when
// `deeper` is set).
std::size_t fold_frames(const bool* is_library, std::size_t count, bool deeper,
                        std::size_t* nodes, bool& truncated) noexcept;

}  // namespace ferret::python
