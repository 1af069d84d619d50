#include "frame_folding.hpp"

#include <cctype>

namespace ferret::python {
namespace {

// "…/lib/python3.11/…" or "…/lib64/python3.9/…": a standard-library folder.
bool in_standard_library(std::string_view file) {
  for (std::size_t at = file.find("/python3."); at != std::string_view::npos;
       at = file.find("/python3.", at + 1)) {
    const std::string_view before = file.substr(0, at);
    if (!(before.size() >= 4 && (before.substr(before.size() - 4) == "/lib" ||
                                 (before.size() >= 6 && before.substr(before.size() - 6) == "/lib64"))))
      continue;
    std::size_t digit = at + 9;
    if (digit >= file.size() || !std::isdigit(static_cast<unsigned char>(file[digit]))) continue;
    while (digit < file.size() && std::isdigit(static_cast<unsigned char>(file[digit]))) ++digit;
    if (digit < file.size() && file[digit] == '/') return true;
  }
  return false;
}

}  // namespace

frame_origin classify_file(std::string_view file) {
  for (const std::string_view packages : {std::string_view{"/site-packages/"},
                                          std::string_view{"/dist-packages/"}}) {
    const std::size_t at = file.rfind(packages);
    if (at == std::string_view::npos) continue;
    std::string_view package = file.substr(at + packages.size());
    package = package.substr(0, package.find('/'));
    if (package.size() > 3 && package.substr(package.size() - 3) == ".py")
      package.remove_suffix(3);  // a single-file module (six.py)
    return {true, std::string{package.empty() ? std::string_view{"python"} : package}};
  }
  if (file.rfind("<frozen ", 0) == 0 || in_standard_library(file)) return {true, "python"};
  return {false, {}};
}

std::string user_frame_name(std::string_view file, int line, std::string_view function) {
  const std::size_t slash = file.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  std::string name{base};
  name += ':';
  name += std::to_string(line);
  name += ' ';
  name += function;
  return name;
}

std::string library_frame_name(std::string_view package, std::string_view function) {
  std::string name = "[";
  name += package;
  name += "] ";
  name += function;
  return name;
}

std::size_t fold_frames(const bool* is_library, std::size_t count, bool deeper,
                        std::size_t* nodes, bool& truncated) noexcept {
  // Innermost first: a library frame starts a node only when the frame
  // outside it (i + 1) is not library code, i.e. it is its run's outermost.
  std::size_t kept = 0;
  truncated = false;
  std::size_t innermost_first[max_nodes];
  for (std::size_t i = 0; i < count; ++i) {
    const bool starts_node = !is_library[i] || i + 1 == count || !is_library[i + 1];
    if (!starts_node) continue;
    if (kept == max_nodes) {
      truncated = true;
      break;
    }
    innermost_first[kept++] = i;
  }
  if (deeper) truncated = true;
  for (std::size_t i = 0; i < kept; ++i) nodes[i] = innermost_first[kept - 1 - i];
  return kept;
}

}  // namespace ferret::python
