#!/bin/sh
# busybox-image.sh OUT.tar — builds the skiff test image: a one-layer OCI image
# layout tarball holding Debian's busybox-static (/bin/busybox plus one symlink
# per applet in /bin), named docker.io/library/busybox:1.35 when imported into
# containerd. The output is byte-for-byte reproducible: fixed mtimes, sorted
# entries, numeric owners, gzip without name or timestamp.
set -eu
umask 022

out=${1:?usage: busybox-image.sh OUT.tar}
busybox=${BUSYBOX:-/bin/busybox}
name=docker.io/library/busybox:1.35
tag=1.35

[ -x "$busybox" ] || { echo "busybox-image.sh: $busybox missing (apt-get install busybox-static)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
layout=$work/layout
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/proc" "$root/sys" "$root/dev" \
	"$layout/blobs/sha256"
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"

cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

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

printf '%s' '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:'"$diff_id"'"]}}' >"$work/config.json"
config=$(blob "$work/config.json")

printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config"'","size":'"$(size "$config")"'},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:'"$layer"'","size":'"$(size "$layer")"'}]}' >"$work/manifest.json"
manifest=$(blob "$work/manifest.json")

printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:'"$manifest"'","size":'"$(size "$manifest")"',"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"'"$name"'","org.opencontainers.image.ref.name":"'"$tag"'"}}]}' >"$layout/index.json"
printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

mkdir -p "$(dirname "$out")"
reproducible_tar "$layout" "$work/image.tar"
mv "$work/image.tar" "$out"
