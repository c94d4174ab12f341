#!/usr/bin/env bash
# Builds the yamor image where no registry is reachable: no base image, no
# download at build time. The release binary is built here, and the image
# is FROM scratch with exactly that binary, the shared libraries it links
# (as ldd lists them) and a passwd entry for its non-root user.
#
#   docker/build.sh [TAG]        # default yamor:latest
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-yamor:latest}

cargo build --release -p yamor
binary=target/release/yamor

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
root="$context/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc" "$context/data"
# Debug info stays on the host; the image carries the stripped binary.
strip -o "$root/usr/local/bin/yamor" "$binary"
# Every library the binary links, and the dynamic loader, at their paths.
for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
echo "yamor:x:10001:10001:yamor:/data:/nonexistent" > "$root/etc/passwd"
echo "yamor:x:10001:" > "$root/etc/group"

cat > "$context/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
COPY --chown=10001:10001 data/ /data/
USER 10001:10001
WORKDIR /data
ENV HOME=/data
ENTRYPOINT ["/usr/local/bin/yamor"]
DOCKERFILE

docker build --quiet --tag "$tag" "$context" >/dev/null
bytes=$(docker image inspect "$tag" --format '{{.Size}}')
echo "built $tag: $((bytes / 1024 / 1024)) MiB"
