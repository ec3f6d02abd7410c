#!/usr/bin/env bash
# Runs a command with TMPDIR on a new, empty filesystem, then removes it (needs root):
#   bench/live/on_fresh_fs.sh ext4|ext4-nojournal|tmpfs COMMAND...
# The load generator keeps its data (SQLite, agents' logs) under TMPDIR. Measured on the
# same filesystem run after run, an ext4 without a journal (this project's VM's root) is slower
# each time: allocating an inode, it skips those deleted in the last 5 seconds, or 5 minutes
# while their inode table block is dirty, and every task creates and deletes files
# (docs/results/live.md).
set -euo pipefail
kind=$1
shift
mnt=$(mktemp -d /mnt/gangway-bench.XXXXXX)
img=$(mktemp /var/tmp/gangway-bench.XXXXXX.img)
cleanup() {
  umount "$mnt" 2>/dev/null || true
  rmdir "$mnt"
  rm -f "$img"
}
trap cleanup EXIT
case $kind in
  ext4 | ext4-nojournal)
    truncate -s 4G "$img"
    if [[ $kind == ext4 ]]; then mkfs.ext4 -q -F "$img"; else mkfs.ext4 -q -F -O ^has_journal "$img"; fi
    mount -o loop "$img" "$mnt"
    ;;
  tmpfs) mount -t tmpfs -o size=4G tmpfs "$mnt" ;;
  *)
    echo "unknown filesystem kind '$kind': expected ext4, ext4-nojournal or tmpfs" >&2
    exit 2
    ;;
esac
TMPDIR=$mnt "$@"
