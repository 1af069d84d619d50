# carried_libraries.sh — sourced by the GPU checks that also run standalone
# (peer_copies.sh, stall_check.sh): puts on LD_LIBRARY_PATH what run.sh puts
# there — the build's libraries, libcupti from the toolkit alone (not the
# toolkit's other libraries: PyTorch brings its own), and the libraries a
# carried build brought (tests/gpu/carry.sh) that this machine lacks.
#   use_carried_libraries BUILD LINKS   (LINKS: a folder for the links, emptied)
use_carried_libraries() {
  local build links=$2 folder library
  build=$(cd "$1" && pwd)  # absolute: the links below point into it from elsewhere
  rm -rf "$links"
  mkdir -p "$links"
  for folder in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    if compgen -G "$folder/libcupti.so*" > /dev/null; then
      ln -s "$folder"/libcupti.so* "$links/"
      break
    fi
  done
  for library in "$build"/lib/carried/*.so*; do
    [[ -e $library ]] || continue
    ldconfig -p | grep -q "^[[:space:]]*$(basename "$library") " || ln -sf "$library" "$links/"
  done
  export LD_LIBRARY_PATH=$build/lib:$links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
