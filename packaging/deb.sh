#!/usr/bin/env bash
# make deb: turns the tree `make install PREFIX=/usr DESTDIR=STAGE` left in STAGE into a Debian
# package OUT (dpkg-deb, root-owned files), then checks it with lintian. The overrides the package
# ships are in packaging/lintian-overrides, each with the reason it is right for dot.
#
#   packaging/deb.sh STAGE OUT VERSION ARCH
set -euo pipefail
stage=$1 out=$2 version=$3 arch=$4
here=$(cd "$(dirname "$0")" && pwd)

doc=$stage/usr/share/doc/dot
install -d "$doc" "$stage/usr/share/lintian/overrides" "$stage/DEBIAN"
install -m 0644 "$here/copyright" "$doc/copyright"
# A native package (no Debian revision): its changelog is changelog.gz.
sed "s/@VERSION@/$version/" "$here/changelog" | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
find "$stage/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +
install -m 0644 "$here/lintian-overrides" "$stage/usr/share/lintian/overrides/dot"
# Static executables carry no debugging symbols into the package, nor the linkers' and compilers'
# version strings (`.comment`, which lintian notes; `make install` removes it too).
find "$stage/usr/bin" "$stage/usr/libexec/dot" -type f -exec strip --strip-unneeded --remove-section=.comment {} +
installed_size=$(du -k -s --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$installed_size/" \
  "$here/control" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
lintian --fail-on error,warning --tag-display-limit 0 "$out"
echo "$out"
