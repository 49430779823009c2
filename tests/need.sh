#!/usr/bin/env bash
# What `make test` needs besides a Rust toolchain: Debian packages whose programs the suites run
# (a missing one fails its test rather than skipping it). Run as root, the missing ones are
# installed with apt-get (as `make bench` does); run as anyone else, the command that installs
# them is printed and this fails.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have minisign || need+=(minisign)                  # signatures made by the reference CLI
have go || need+=(golang-go)                       # the Go runtime and example plugins
have cc || need+=(gcc libc6-dev)                   # the C example plugin, static
[ -x /usr/bin/python3 ] || need+=(python3)         # the Python example and script plugins
have jq || need+=(jq)                              # README examples
have mandoc || need+=(mandoc)                      # man page lint
have groff || need+=(groff-base)                   # man page rendering
have strace || need+=(strace)                      # syscall-order tests (durable intent, reap)
have make || need+=(make)
for p in setsid unshare prlimit setpriv mount umount; do   # util-linux and mount
  have "$p" || { need+=(util-linux mount); break; }
done
have dpkg-deb || need+=(dpkg)                      # the .deb round trip
have lintian || need+=(lintian)                    # make deb's check
have strip || need+=(binutils)                     # make deb strips the executables
have objcopy || need+=(binutils)                   # make install removes their .comment section
have objdump || need+=(binutils)                   # the install tests read their section headers

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
  echo "make test needs: ${need[*]}" >&2
  echo "install them with: sudo apt-get install --no-install-recommends ${need[*]}" >&2
  exit 1
fi
echo "make test: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
