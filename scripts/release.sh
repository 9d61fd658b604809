#!/usr/bin/env bash
# Builds Agate's release artifacts into an output directory:
#   agate_<version>_<os>_<arch>[.exe]  static binaries (CGO_ENABLED=0, -trimpath, profile-guided with
#                                      cmd/gateway/gateway.pgo), one per target,
#                                      stamped with the version and commit (gateway -version)
#   SHA256SUMS                         their checksums (sha256sum -c SHA256SUMS verifies them)
#   agate_<version>.sbom.json          a CycloneDX SBOM of the module (cyclonedx-gomod) when it can
#                                      be fetched from the Go module proxy, else
#   agate_<version>.buildinfo.txt      `go version -m` of every binary: modules and versions
#
# Usage: scripts/release.sh [-v version] [-o outdir] [-t "os/arch os/arch ..."] [-n]
# -n skips the CycloneDX SBOM (whose first run builds cyclonedx-gomod: minutes) and writes
# the build information instead.
# Defaults: version from `git describe --tags --always`, outdir dist/, targets
# linux/amd64 linux/arm64 darwin/amd64 darwin/arm64.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
out="dist"
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
sbom=1
while getopts "v:o:t:n" opt; do
  case "$opt" in
    v) version="$OPTARG" ;;
    o) out="$OPTARG" ;;
    t) targets="$OPTARG" ;;
    n) sbom=0 ;;
    *) echo "usage: $0 [-v version] [-o outdir] [-t \"os/arch ...\"] [-n]" >&2; exit 2 ;;
  esac
done
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
mkdir -p "$out"

bins=()
for t in $targets; do
  os="${t%/*}"; arch="${t#*/}"
  name="agate_${version}_${os}_${arch}"
  [ "$os" = windows ] && name="$name.exe"
  echo "building $name" >&2
  CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -buildvcs=false -pgo=cmd/gateway/gateway.pgo \
    -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
    -o "$out/$name" ./cmd/gateway
  bins+=("$name")
done

(cd "$out" && sha256sum "${bins[@]}" > SHA256SUMS)

# The SBOM: cyclonedx-gomod from the module proxy (pinned), else the build information.
if [ "$sbom" = 1 ] && go run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0 mod -json -licenses=false \
    -output "$out/agate_${version}.sbom.json" "$root" >/dev/null 2>&1; then
  echo "SBOM: $out/agate_${version}.sbom.json" >&2
else
  rm -f "$out/agate_${version}.sbom.json"
  (cd "$out" && go version -m "${bins[@]}") > "$out/agate_${version}.buildinfo.txt"
  echo "SBOM: cyclonedx-gomod skipped or unavailable; build information in $out/agate_${version}.buildinfo.txt" >&2
fi
echo "release $version ($commit) in $out:" >&2
ls -l "$out" >&2
