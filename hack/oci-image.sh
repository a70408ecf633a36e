#!/bin/sh
# oci-image.sh ROOTFS NAMES ENTRYPOINT CMD USER OUT.tar — packs the directory
# ROOTFS as a one-layer amd64 OCI image layout tarball that containerd
# imports under each of NAMES (space-separated registry/repository:tag
# references, all naming the same manifest). ENTRYPOINT and CMD are JSON
# arrays or null, USER is "uid:gid" or empty. The tarball is reproducible:
# fixed mtimes, sorted entries, numeric owners, gzip without name or time.
set -eu
umask 022

[ $# -eq 6 ] || { echo "usage: oci-image.sh ROOTFS NAMES ENTRYPOINT CMD USER OUT.tar" >&2; exit 2; }
root=$1 names=$2 entrypoint=$3 cmd=$4 user=$5 out=$6

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layout=$work/layout
mkdir -p "$layout/blobs/sha256"

# reproducible_tar DIR OUT: tar DIR's content with fixed metadata.
reproducible_tar() {
	tar --create --file="$2" --directory="$1" --format=gnu --sort=name \
		--mtime=@0 --owner=0 --group=0 --numeric-owner .
}

# blob FILE: moves FILE into the layout's blobs, prints its digest.
blob() {
	sum=$(sha256sum "$1" | cut -d' ' -f1)
	mv "$1" "$layout/blobs/sha256/$sum"
	echo "$sum"
}

size() { wc -c <"$layout/blobs/sha256/$1" | tr -d ' '; }

reproducible_tar "$root" "$work/layer.tar"
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
gzip -n -6 "$work/layer.tar"
layer=$(blob "$work/layer.tar.gz")

printf '%s' '{"architecture":"amd64","os":"linux","config":{"User":"'"$user"'","Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":'"$entrypoint"',"Cmd":'"$cmd"'},"rootfs":{"type":"layers","diff_ids":["sha256:'"$diff_id"'"]}}' >"$work/config.json"
config=$(blob "$work/config.json")

printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config"'","size":'"$(size "$config")"'},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:'"$layer"'","size":'"$(size "$layer")"'}]}' >"$work/manifest.json"
manifest=$(blob "$work/manifest.json")

entries=
for name in $names; do
	entries="$entries${entries:+,}"'{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:'"$manifest"'","size":'"$(size "$manifest")"',"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"'"$name"'","org.opencontainers.image.ref.name":"'"${name##*:}"'"}}'
done
printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":['"$entries"']}' >"$layout/index.json"
printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

mkdir -p "$(dirname "$out")"
reproducible_tar "$layout" "$work/image.tar"
mv "$work/image.tar" "$out"
