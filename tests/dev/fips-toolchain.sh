#!/usr/bin/env bash
# What the FIPS variant (`FIPS=1`) needs besides Rust: aws-lc-fips-sys builds AWS-LC's FIPS
# module from source with CMake, Go (its delocate and integrity-hash tools), Perl and a C
# compiler; the static musl build also musl-gcc. Installs Debian's packages for whatever is
# missing (as `make static-binary` does for musl-tools); names what it cannot install.
# Idempotent; quick when all is there.
set -euo pipefail

missing=()
need() { # need COMMAND DEBIAN-PACKAGE
	command -v "$1" >/dev/null || missing+=("$2")
}
need cmake cmake
need perl perl
need cc gcc
need go golang-go
[ "${1:-}" = musl ] && need musl-gcc musl-tools

if [ ${#missing[@]} -gt 0 ]; then
	if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
		echo "installing ${missing[*]} for the FIPS build (Debian packages)"
		apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
			{ apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
	else
		echo "error: the FIPS build needs ${missing[*]} (Debian package names); install them, or Go from go.dev" >&2
		exit 1
	fi
fi

# AWS-LC's FIPS build wants CMake 3.5+ and Go 1.18+ (bookworm has 3.25 and 1.19).
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -z "$go_minor" ] || [ "$go_minor" -lt 18 ]; then
	echo "error: the FIPS build needs Go 1.18 or later; found $(go env GOVERSION)" >&2
	exit 1
fi
cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
case "$cmake_version" in
2.* | 3.[0-4]) echo "error: the FIPS build needs CMake 3.5 or later; found $cmake_version" >&2; exit 1 ;;
esac

# musl-gcc searches musl's headers only, and AWS-LC's entropy source includes the kernel's
# <linux/random.h>. The kernel's UAPI headers (Debian's linux-libc-dev, there with any C
# compiler) are libc-neutral: a directory of links to just them goes after musl's
# (`-idirafter`, Makefile), so no glibc header can shadow a musl one.
if [ "${1:-}" = musl ]; then
	headers=target/musl-kernel-headers
	multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
	for dir in /usr/include/linux /usr/include/asm-generic "/usr/include/$multiarch/asm"; do
		[ -d "$dir" ] || { echo "error: $dir is missing: install Debian's linux-libc-dev" >&2; exit 1; }
	done
	mkdir -p "$headers"
	ln -sfn /usr/include/linux "$headers/linux"
	ln -sfn /usr/include/asm-generic "$headers/asm-generic"
	ln -sfn "/usr/include/$multiarch/asm" "$headers/asm"
fi
