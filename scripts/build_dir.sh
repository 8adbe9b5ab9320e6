# Sourced by test.sh and fuzz.sh: build-directory housekeeping shared by both.

# reset_foreign_build_dir DIR: remove DIR when its CMakeCache.txt was written for another source tree (a copy of
# a checkout keeps its gitignored build folders, and CMake refuses to reuse them), so the next configure starts
# clean. A directory configured from this tree is kept, so rebuilds stay incremental.
reset_foreign_build_dir() {
  local dir="$1" cache="$1/CMakeCache.txt"
  if [[ -L "$dir" && ! -e "$dir" ]]; then rm -f "$dir"; return; fi
  if [[ -f "$cache" ]] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" "$cache"; then
    echo "note: $dir was configured from another source tree; configuring it afresh"
    rm -rf "$dir"
  fi
}
