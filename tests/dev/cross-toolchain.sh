#!/usr/bin/env bash
# What `make static-binary ARCH=...` needs besides the pinned Rust: the target's standard library
# (rustup adds no target by itself) and, from Debian, the C compiler and linker for it (musl-gcc
# for amd64, the cross gcc for the others) and qemu-user-static to run a foreign binary here.
# Idempotent; quick when all is there.
#   tests/dev/cross-toolchain.sh ARCH TRIPLE
set -euo pipefail
arch=$1 triple=$2

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$triple"; then
	rustup target add "$triple"
fi

case $arch in
amd64) need=(musl-gcc:musl-tools) ;;
arm64) need=(aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu qemu-aarch64-static:qemu-user-static) ;;
s390x) need=(s390x-linux-gnu-gcc:gcc-s390x-linux-gnu qemu-s390x-static:qemu-user-static) ;;
ppc64le) need=(powerpc64le-linux-gnu-gcc:gcc-powerpc64le-linux-gnu qemu-ppc64le-static:qemu-user-static) ;;
*) echo "unknown ARCH $arch" >&2; exit 1 ;;
esac
missing=()
for n in "${need[@]}"; do
	command -v "${n%%:*}" >/dev/null || missing+=("${n#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]} (Debian packages)"
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
	{ apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
