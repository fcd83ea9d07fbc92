#!/bin/sh
# Fetch and configure the source of the fio on PATH, for building the engine
# against the headers of the fio that will load it.
#
#   fetch-fio-src.sh DEST_DIR [FIO]    # prints the configured tree's path
#
# The source comes from `apt-get source fio=<installed version>` (Debian and
# Ubuntu: needs a deb-src line and dpkg-dev). The tree is configured with
# fio's ./configure so config-host.h exists. A tree already there is reused.
set -eu
dest=$1
fio=${2:-fio}
command -v "$fio" >/dev/null 2>&1 || {
  echo "fetch-fio-src.sh: no '$fio' on PATH: install fio, or pass FIO_SRC=<configured fio source tree>" >&2
  exit 1
}
ver=$("$fio" --version | sed 's/^fio-//')
tree=$dest/fio-$ver
if [ ! -f "$tree/config-host.h" ]; then
  deb=$(dpkg-query -W -f '${Version}' fio 2>/dev/null || true)
  if [ -z "$deb" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "fetch-fio-src.sh: fio $ver is not a Debian package here; fetch fio $ver's source (https://github.com/axboe/fio, tag fio-$ver), run ./configure in it, and pass FIO_SRC=<that tree>" >&2
    exit 1
  fi
  case $deb in "$ver"*) ;; *)
    echo "fetch-fio-src.sh: '$fio' says fio-$ver but the fio package is $deb: pass FIO_SRC=<the source of the fio you run>" >&2
    exit 1 ;;
  esac
  mkdir -p "$dest"
  work=$(mktemp -d "$dest/.fetch.XXXXXX")
  if ! (cd "$work" && apt-get source -qq "fio=$deb" >/dev/null 2>"$work/apt.log"); then
    cat "$work/apt.log" >&2
    echo "fetch-fio-src.sh: apt-get source fio=$deb failed: add a deb-src line (e.g. /etc/apt/sources.list.d/debian-src.sources with 'Types: deb-src'), run apt-get update, install dpkg-dev; or pass FIO_SRC=<fio source tree>" >&2
    rm -rf "$work"
    exit 1
  fi
  rm -rf "$tree"
  mv "$work/fio-$ver" "$tree"
  rm -rf "$work"
  (cd "$tree" && ./configure --disable-native >configure.log 2>&1) || {
    cat "$tree/configure.log" >&2
    echo "fetch-fio-src.sh: fio's ./configure failed in $tree" >&2
    exit 1
  }
fi
echo "$tree"
