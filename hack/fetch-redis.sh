#!/usr/bin/env bash
# Usage: hack/fetch-redis.sh VERSION DIR
#
# Puts Debian's redis-server into DIR (the Makefile's bin/redis-VERSION) without installing
# Debian's redis-server package, whose install also enables a system Redis service on port
# 6379: the redis-tools package, which holds the binary, is downloaded and unpacked, not
# installed, and redis-server is the symlink to it that Debian's redis-server package ships.
# Only the shared libraries redis-tools depends on are installed with apt-get when missing
# (libraries, no service: on Debian 12 libjemalloc2 and liblzf1 are the ones a stock
# machine lacks).
#
# VERSION is the upstream version the Makefile pins (7.0.15 on Debian 12); the machine's
# Debian must offer it. The binary is unpacked next to DIR and renamed into place, so a
# half-unpacked directory never carries the versioned name that marks it done.
set -euo pipefail

version=${1:?usage: $0 VERSION DIR} dir=${2:?usage: $0 VERSION DIR}
dir=${dir%/}

candidate() { apt-cache policy redis-tools 2>/dev/null | awk '/Candidate:/ {print $2}'; }
debian_version=$(candidate)
if [ -z "$debian_version" ] || [ "$debian_version" = "(none)" ]; then
	apt-get update -qq
	debian_version=$(candidate)
fi
# 5:7.0.15-1~deb12u10 -> 7.0.15
upstream=${debian_version#*:}
upstream=${upstream%%-*}
if [ "$upstream" != "$version" ]; then
	echo "fetch-redis: this machine's Debian offers redis-tools ${debian_version:-none}, not redis $version; run make with REDIS_VERSION=$upstream" >&2
	exit 1
fi

mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$(dirname "$dir")/.build-redis.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching Debian's redis-tools $debian_version into $dir"
# apt-get download warns that it runs unsandboxed as root when _apt cannot write here.
(cd "$tmp" && apt-get download -qq "redis-tools=$debian_version" 2> >(grep -v 'unsandboxed' >&2))
deb=$(echo "$tmp"/redis-tools_*.deb)

# The libraries of the package's Depends (first of each alternative, versions dropped).
missing=()
for lib in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/[[:space:]]//g' | grep '^lib'); do
	if [ "$(dpkg-query -W -f='${db:Status-Status}' "$lib" 2>/dev/null)" != installed ]; then
		missing+=("$lib")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing the shared libraries redis-server needs: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

dpkg-deb -x "$deb" "$tmp/root"
mkdir "$tmp/redis"
mv "$tmp/root/usr/bin/redis-check-rdb" "$tmp/redis/"
# One binary for both: it runs as the server unless called redis-check-rdb.
ln -s redis-check-rdb "$tmp/redis/redis-server"
"$tmp/redis/redis-server" --version >/dev/null

if ! mv -T "$tmp/redis" "$dir" 2>/dev/null && [ ! -x "$dir/redis-server" ]; then
	echo "fetch-redis: cannot move the binary to $dir" >&2
	exit 1
fi
