#!/usr/bin/env bash
# Builds the taot-planner image (deploy/docker/Dockerfile) with podman from Debian's packages
# alone, no image registry: a Debian 12 root file system made by debootstrap (cached between
# runs) is imported as the base of both stages (as is, and slimmed for the runtime stage), the
# build stage installs its packages with apt-get, and the host's ccache is mounted into it. Then
# prints the image's size and its layers.
#   ./scripts/image.sh [TAG]        (default taot-planner:local; TAOT_IMAGE_CACHE: the cache folder)
# Needs root (rootful podman) and podman, debootstrap and runc (./scripts/setup.sh installs them).
# podman reads deploy/docker/containers.conf (settings for machines that are containers themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-taot-planner:local}"
cache="${TAOT_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taot-image}"
export CONTAINERS_CONF="$PWD/deploy/docker/containers.conf"
for tool in podman debootstrap runc; do
  command -v "$tool" > /dev/null || { echo "image.sh: $tool is missing: run ./scripts/setup.sh" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "image.sh: needs root (rootful podman and debootstrap)" >&2; exit 2; }

# The host's Debian mirror, so that the image's packages are the host's versions (and the
# compiler the same, for ccache hits).
mirror=$(sed -n 's/^URIs: *\(\S*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror="${mirror:-http://deb.debian.org/debian}"

base_images() {
  mkdir -p "$cache"
  if [ ! -f "$cache/bookworm.tar" ] || [ ! -f "$cache/bookworm-slim.tar" ]; then
    local rootfs="$cache/rootfs"
    rm -rf "$rootfs"
    echo "image.sh: debootstrap --variant=minbase bookworm from $mirror (once; cached in $cache)"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$cache/debootstrap.log" 2>&1 \
      || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
      rm -f "$rootfs/etc/apt/sources.list"
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$cache/bookworm.tar.part" . && mv "$cache/bookworm.tar.part" "$cache/bookworm.tar"
    # Slimmed as debian:12-slim is: no manuals, info pages, translations or docs but copyrights.
    find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
    rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
    tar -C "$rootfs" -cf "$cache/bookworm-slim.tar.part" . && mv "$cache/bookworm-slim.tar.part" "$cache/bookworm-slim.tar"
    rm -rf "$rootfs"
    podman rmi -f localhost/taot-debian:12 localhost/taot-debian:12-slim > /dev/null 2>&1 || true
  fi
  for variant in 12 12-slim; do
    local file="$cache/bookworm.tar"
    [ "$variant" = 12-slim ] && file="$cache/bookworm-slim.tar"
    podman image exists "localhost/taot-debian:$variant" \
      || podman import --quiet --change 'CMD ["/bin/bash"]' "$file" "localhost/taot-debian:$variant" > /dev/null
  done
}

base_images
ccache_dir=$(ccache --get-config cache_dir 2>/dev/null || echo "$cache/ccache")
mkdir -p "$ccache_dir"
start=$(date +%s)
podman build --network host --layers \
  --build-arg BASE=localhost/taot-debian:12 --build-arg RUNTIME_BASE=localhost/taot-debian:12-slim \
  --build-arg CCACHE_DIR=/host-ccache --volume "$ccache_dir:/host-ccache" \
  -f deploy/docker/Dockerfile -t "$tag" .
bytes=$(podman image inspect --format '{{.Size}}' "$tag")
echo "image.sh: built $tag in $(($(date +%s) - start)) s: $((bytes / 1000000)) MB"
podman history --format '{{.Size}}\t{{.CreatedBy}}' "$tag" | cut -c1-140
