#!/usr/bin/env bash
# The layering of the source tree (docs/architecture.md): each folder may include only the folders
# below it. apps -> include/rexnlu (public API) <- src/engine -> src/uie -> src/models/<family>
# -> src/ops -> src/backends/<device>; src/io, src/text, src/tensor at the bottom.
# Prints every include that goes around the layering and exits 1 if there is one.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0

# folder: the include prefixes ("dir/") its files may use besides "rexnlu/" and their own folder.
check() {
  local folder=$1; shift
  local allowed="rexnlu/ $*"
  while IFS=: read -r file line include; do
    local path=${include#*\"}; path=${path%%\"*}
    [[ $path != */* ]] && continue  # a header next to the file
    local ok=0
    for prefix in $allowed; do [[ $path == $prefix* ]] && ok=1; done
    if (( !ok )); then
      echo "$file:$line: includes \"$path\", which $folder may not use (allowed: $allowed)"
      status=1
    fi
  done < <(grep -rn '^#include "' "$folder" --include=*.h --include=*.cpp --include=*.cu)
}

check apps                server/http_server.h
check src/server          server/
check python/src          # the Python binding: the public API only
# common/json_input.h (the depth-capped JSON parse) sits below everything in src/; apps and
# src/server reach it through rexnlu::parse_json_input (include/rexnlu/json.h).
check src/engine          engine/ uie/ models/registry.h models/family.h models/link_model.h models/pointer_model.h text/ common/
check src/uie             uie/ text/ models/link_model.h models/pointer_model.h common/
check src/models          models/ ops/ backends/backend.h tensor/ io/ text/ common/
check src/ops             ops/ backends/ tensor/
check src/backends        backends/ tensor/
check src/io              io/ tensor/ common/
check src/text            text/ io/regular_file.h common/
check src/tensor          tensor/
check src/common          common/
exit $status
