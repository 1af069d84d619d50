// Which Python frames become calling-context nodes (frame_folding.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "frame_folding.hpp"

using ferret::python::classify_file;
using ferret::python::fold_frames;
using ferret::python::max_nodes;

TEST_CASE("files of the standard library and of installed packages are library code") {
  CHECK_FALSE(classify_file("/home/me/train.py").library);
  CHECK_FALSE(classify_file("train.py").library);
  CHECK_FALSE(classify_file("<stdin>").library);
  CHECK_FALSE(classify_file("/home/me/python3.11/mine.py").library);  // not under lib/
  const auto torch = classify_file("/usr/lib/python3/dist-packages/torch/nn/modules/module.py");
  CHECK(torch.library);
  CHECK(torch.package == "torch");
  CHECK(classify_file("/opt/venv/lib/python3.12/site-packages/numpy/core/numeric.py").package == "numpy");
  CHECK(classify_file("/opt/venv/lib/python3.12/site-packages/six.py").package == "six");
  CHECK(classify_file("/usr/lib/python3.11/threading.py").package == "python");
  CHECK(classify_file("/root/.pyenv/versions/3.9.18/lib/python3.9/asyncio/events.py").package == "python");
  CHECK(classify_file("/usr/lib64/python3.10/json/decoder.py").package == "python");
  CHECK(classify_file("<frozen importlib._bootstrap>").package == "python");
}

TEST_CASE("node names") {
  CHECK(ferret::python::user_frame_name("/home/me/train.py", 42, "train_step") == "train.py:42 train_step");
  CHECK(ferret::python::library_frame_name("torch", "Tensor.backward") == "[torch] Tensor.backward");
}

namespace {
// Frames innermost first, as letters: 'u' user, 'l' library. Returns the
// chosen frame indices, outermost first.
std::vector<std::size_t> fold(const std::string& frames, bool deeper, bool& truncated) {
  std::vector<char> library;  // vector<bool> has no data()
  for (char kind : frames) library.push_back(kind == 'l');
  std::size_t nodes[max_nodes];
  const std::size_t kept = fold_frames(reinterpret_cast<const bool*>(library.data()), frames.size(),
                                       deeper, nodes, truncated);
  return {nodes, nodes + kept};
}
}  // namespace

TEST_CASE("a run of library frames is one node named after its outermost frame") {
  bool truncated = true;
  // innermost: 3 torch frames, then the user's step, then the user's main.
  CHECK(fold("llluu", false, truncated) == std::vector<std::size_t>{4, 3, 2});
  CHECK_FALSE(truncated);
  // user code called back from a library (a module's forward from __call__).
  CHECK(fold("ulluu", false, truncated) == std::vector<std::size_t>{4, 3, 2, 0});
  // a thread: the standard library's bootstrap outside the user's function.
  CHECK(fold("ulll", false, truncated) == std::vector<std::size_t>{3, 0});
  CHECK(fold("", false, truncated).empty());
}

TEST_CASE("only the innermost nodes are kept") {
  bool truncated = false;
  const std::vector<std::size_t> nodes = fold(std::string(40, 'u'), false, truncated);
  CHECK(truncated);
  REQUIRE(nodes.size() == max_nodes);
  CHECK(nodes.front() == max_nodes - 1);
  CHECK(nodes.back() == 0);
  fold("uu", true, truncated);
  CHECK(truncated);  // frames beyond the walk's limit
}
