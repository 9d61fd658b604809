#!/usr/bin/env bash
# Builds the shared bench (../shared/bench, read-only, shared by every project) extended with
# this repository's rows of the other client APIs: raw-responses, raw-messages,
# product-responses, product-responses-oai, product-messages, product-messages-oai
# (scripts/bench/apis.patch; docs/development.md, "The bench's rows of the other client APIs").
#
# It copies the shared bench to a temporary directory, applies apis.patch there with
# `git apply`, runs the bench's own tests (`go test -count=1 ./...`) and builds the binary.
# The shared bench itself is never written.
#
# Usage:
#   scripts/bench/build.sh -o /tmp/bench-apis [-s SHARED_BENCH] [-w WORKDIR] [-product-bin GATEWAY]
#   scripts/bench/build.sh -update-patch WORKDIR [-s SHARED_BENCH]
#
#   -o FILE            the bench binary to write
#   -s DIR             the shared bench (default: $BENCH_SRC, else ../shared/bench beside the
#                      repository's main checkout, which is also where a worktree's is)
#   -w DIR             patch and test in DIR (created; kept afterwards) instead of a temporary
#                      directory: edit the bench there, then -update-patch DIR
#   -product-bin FILE  a gateway binary: the bench's TestProductRows then smokes every product
#                      row against it (without it that test skips, saying so)
#   -update-patch DIR  write apis.patch as the difference between the shared bench and DIR
#                      (an edited -w directory), and BASE.sha256 as the shared bench's digest
#
# If the shared bench changed so that the patch no longer applies, the script stops and
# says so, with the hunks git rejected; BASE.sha256 tells whether the shared bench is the
# one the patch was made against.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
patch="$here/apis.patch"

die() { echo "build.sh: $*" >&2; exit 1; }

out="" src="${BENCH_SRC:-}" work="" product="" update=""
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out="${2:?-o needs a file}"; shift 2 ;;
	-s) src="${2:?-s needs a directory}"; shift 2 ;;
	-w) work="${2:?-w needs a directory}"; shift 2 ;;
	-product-bin) product="$(realpath -m "${2:?-product-bin needs a file}")"; shift 2 ;;
	-update-patch) update="${2:?-update-patch needs a directory}"; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see -h)" ;;
	esac
done

if [ -z "$src" ]; then
	# The main checkout: a worktree's common git directory is the main checkout's .git.
	common="$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo "$root/.git")"
	src="$(dirname "$common")/../shared/bench"
fi
[ -f "$src/go.mod" ] && [ -f "$src/main.go" ] || die "no shared bench at $src (pass -s DIR or set BENCH_SRC)"
src="$(cd "$src" && pwd)"

# digest is a digest of the bench's files (names and contents), to name the patch's base.
digest() {
	(cd "$1" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

if [ -n "$update" ]; then
	[ -d "$update" ] || die "$update is not a directory"
	update="$(cd "$update" && pwd)"
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	# git diff --no-index over two trees, with a/ and b/ prefixes relative to each tree.
	cp -R "$src" "$tmp/a" && cp -R "$update" "$tmp/b"
	chmod -R u+w "$tmp"
	rm -rf "$tmp/b/.git"
	find "$tmp/b" -type f \( -name '*.orig' -o -name '*.rej' \) -delete
	for f in "$tmp/b/bench" "$tmp/b/bench.test"; do rm -f "$f"; done
	(cd "$tmp" && git diff --no-index --no-color --full-index a b >"$tmp/apis.patch") && die "no difference between $src and $update"
	[ -s "$tmp/apis.patch" ] || die "git diff failed"
	sed -i -e 's#^diff --git a/[ab]/\(.*\) b/[ab]/\(.*\)$#diff --git a/\1 b/\2#' -e 's#^--- a/a/#--- a/#' -e 's#^+++ b/b/#+++ b/#' "$tmp/apis.patch"
	cp "$tmp/apis.patch" "$patch"
	digest "$src" >"$here/BASE.sha256"
	echo "wrote $patch ($(grep -c '^diff --git' "$patch") files) and $here/BASE.sha256"
	exit 0
fi

[ -n "$out" ] || die "-o FILE is required (see -h)"
[ -z "$product" ] || [ -x "$product" ] || die "-product-bin $product is not an executable file"
[ -f "$patch" ] || die "$patch is missing"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if [ -n "$work" ]; then
	mkdir -p "$work"
	[ -z "$(ls -A "$work")" ] || die "$work is not empty"
	dir="$(cd "$work" && pwd)"
else
	dir="$(mktemp -d)"
	trap 'rm -rf "$dir"' EXIT
fi
cp -R "$src/." "$dir/"
chmod -R u+w "$dir"

base="$(cat "$here/BASE.sha256" 2>/dev/null || echo unknown)"
now="$(digest "$src")"
if ! (cd "$dir" && git apply --whitespace=nowarn --check "$patch" 2>"$dir/.apply.err"); then
	echo "build.sh: scripts/bench/apis.patch NO LONGER APPLIES to the shared bench at $src." >&2
	if [ "$now" != "$base" ]; then
		echo "  The shared bench changed since the patch was made (digest $now, the patch's base $base)." >&2
	fi
	echo "  git apply said:" >&2
	sed 's/^/    /' "$dir/.apply.err" >&2
	echo "  To port it: scripts/bench/build.sh -w DIR fails the same way; instead copy the bench," >&2
	echo "  cp -R $src DIR && chmod -R u+w DIR && (cd DIR && git apply --reject $patch), fix the *.rej hunks," >&2
	echo "  run go test ./... there, then scripts/bench/build.sh -update-patch DIR." >&2
	exit 1
fi
(cd "$dir" && git apply --whitespace=nowarn "$patch") && rm -f "$dir/.apply.err"
if [ "$now" != "$base" ]; then
	echo "build.sh: note: the shared bench changed since the patch was made (digest $now, base $base); it still applies" >&2
fi

echo "build.sh: testing the patched bench in $dir" >&2
(cd "$dir" && BENCH_PRODUCT_BIN="$product" go test -count=1 ./...) || die "the patched bench's tests failed (in $dir)"
(cd "$dir" && go build -o "$out" .) || die "go build failed (in $dir)"
echo "build.sh: wrote $out" >&2
