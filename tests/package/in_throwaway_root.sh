#!/usr/bin/env bash
# Runs a command as root in a throwaway copy of this machine: an overlay whose lower layer
# is / and whose upper layer is a tmpfs, chrooted into. Run it inside `unshare --mount`, so
# that the mounts, and with them every change, vanish with the namespace.
# The CUDA libraries are taken out of the copy (the toolkit folder and its loader
# configuration), so that the copy is a machine with no CUDA; the command checks that no
# cuBLAS, cuDNN or CUDA runtime is left on the loader's path.
# The folders in SHARED (colon-separated: the sources, the packages) are bound into the copy
# read-only, in case they live on another file system than /, which the overlay would not show.
# usage: in_throwaway_root.sh MOUNT_DIR SHARED COMMAND [ARGS...]
set -euo pipefail
dir=$1 shared=$2
shift 2
mkdir -p "$dir"
mount -t tmpfs -o size=4g mantissa-throwaway "$dir"
mkdir "$dir/upper" "$dir/work" "$dir/root"
if ! mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/work" "$dir/root" 2>"$dir/mount.err"; then
  echo "SKIPPED: this kernel cannot mount an overlay of / ($(cat "$dir/mount.err"))"
  exit 77
fi
root=$dir/root
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
IFS=: read -ra binds <<<"$shared"
for d in "${binds[@]}"; do
  mkdir -p "$root$d"
  mount --bind "$d" "$root$d"
  mount -o remount,bind,ro "$root$d"
done
# No CUDA in the copy: an empty tmpfs over each toolkit folder, and the loader configuration
# that points into them deleted (in the overlay, which only hides it from the copy).
for cuda in "$root"/usr/local/cuda*; do
  if [[ -d $cuda && ! -L $cuda ]]; then mount -t tmpfs -o size=1m,mode=755 no-cuda "$cuda"; fi
done
rm -f "$root"/etc/ld.so.conf.d/*cuda*
chroot "$root" ldconfig
exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
