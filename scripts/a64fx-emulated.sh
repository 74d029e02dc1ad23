#!/usr/bin/env bash
# sectormon's aarch64 path on an emulated A64FX. QEMU `-M virt -cpu a64fx -smp 4` (TCG with -icount)
# boots Debian's arm64 kernel with an initramfs made of Debian arm64 packages (busybox, python3,
# linux-perf), the PyPI aarch64 wheels of sectormon's runtime dependencies and this working tree's
# sectormon; scripts/a64fx/guest_checks.py runs sectormon check/events/monitor/sim against the guest's own
# perf and prints a JSON summary on the serial console, which scripts/a64fx/read_console.py reads here.
# Exits 1 naming the failing check, or the package that could not be fetched.
#
# Downloads happen once per machine into the cache (default ~/.cache/sectormon/aarch64, outside the
# repo); later runs rebuild only the small overlay holding sectormon. Meant for a fresh Debian machine
# as root (CI): installs qemu-system-arm and cpio with apt-get and enables the arm64 architecture for
# `apt-get download`. SECTORMON_AARCH64_CACHE and SECTORMON_AARCH64_TIMEOUT override the defaults.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${SECTORMON_AARCH64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sectormon/aarch64}
GUEST_TIMEOUT=${SECTORMON_AARCH64_TIMEOUT:-900}  # seconds from power-on to power-off
SMP=4
MEMORY=3G
# -icount makes INST_RETIRED count and ties the cycle counter to it: each instruction advances the
# virtual clock by 2^shift ns, and QEMU's PMU counts cycles at 1 GHz of that clock.
ICOUNT_SHIFT=1
# Debian packages whose dependency closure forms the guest (busybox-static gives /init its shell).
ROOT_PACKAGES=(busybox-static python3 linux-perf)
# Parts of the closure the guest never runs: package tooling, perl's modules (perf only links libperl),
# data packages.
SKIP_PACKAGES=(dpkg tar install-info perl perl-base perl-modules-5.36 readline-common mailcap mime-support
  media-types tzdata debconf)

DOWNLOADED=0  # set by the fetch steps that had to download

say() { echo "a64fx-emulated: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

need_root_for() {
  [ "$(id -u)" = 0 ] || die "$1 needs root (apt-get); run as root or do it by hand: $2"
}

host_tools() {
  local missing=()
  command -v qemu-system-aarch64 >/dev/null 2>&1 || missing+=(qemu-system-arm)
  command -v cpio >/dev/null 2>&1 || missing+=(cpio)
  command -v dpkg-deb >/dev/null 2>&1 || missing+=(dpkg)
  if [ ${#missing[@]} -gt 0 ]; then
    need_root_for "installing ${missing[*]}" "apt-get install ${missing[*]}"
    say "installing host tools: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "cannot install Debian package(s) ${missing[*]}"
  fi
}

host_python() {
  if [ -x "$REPO/.venv/bin/python" ]; then
    echo "$REPO/.venv/bin/python"
  else
    [ -x "$CACHE/host-venv/bin/python" ] || python3 -m venv "$CACHE/host-venv" >/dev/null \
      || die "cannot create a Python venv for pip (apt-get install python3-venv)"
    echo "$CACHE/host-venv/bin/python"
  fi
}

enable_arm64() {
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    need_root_for "adding the arm64 architecture" "dpkg --add-architecture arm64 && apt-get update"
    say "enabling the arm64 architecture for apt-get download"
    dpkg --add-architecture arm64
  fi
  if ! apt-cache policy python3.11:arm64 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    need_root_for "apt-get update" "apt-get update"
    apt-get update -qq || die "apt-get update failed (arm64 package lists)"
  fi
}

# The arm64 package names of the dependency closure of $@, minus SKIP_PACKAGES, one per line.
closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "${@/%/:arm64}" 2>/dev/null \
    | sed -n 's/^<\{0,1\}\([a-z0-9][a-z0-9.+-]*\):arm64>\{0,1\}$/\1/p' \
    | sort -u | grep -vxF -f <(printf '%s\n' "${SKIP_PACKAGES[@]}")
}

kernel_package() {
  apt-cache depends linux-image-arm64:arm64 2>/dev/null \
    | sed -n 's/^ *Depends: \(linux-image-[0-9][a-z0-9.-]*-arm64\)\(:arm64\)\{0,1\}$/\1/p' | head -n1
}

fetch_debs() {
  local dir=$CACHE/debs
  [ -f "$dir/.complete" ] && return 0
  enable_arm64
  local kernel
  kernel=$(kernel_package)
  [ -n "$kernel" ] || die "cannot fetch Debian package linux-image-arm64:arm64 (no arm64 candidate)"
  local packages
  mapfile -t packages < <(closure "${ROOT_PACKAGES[@]}")
  [ ${#packages[@]} -gt 0 ] || die "cannot resolve the dependencies of ${ROOT_PACKAGES[*]} for arm64"
  rm -rf "$dir" && mkdir -p "$dir"
  DOWNLOADED=1
  say "downloading ${#packages[@]} Debian arm64 packages and $kernel into $dir"
  local pkg specs=() native
  # Architecture-independent packages have no :arm64 record and are fetched as :all.
  native=$(apt-cache show --no-all-versions "${packages[@]/%/:arm64}" 2>/dev/null | sed -n 's/^Package: //p')
  for pkg in "${packages[@]}"; do
    if grep -qxF "$pkg" <<< "$native"; then specs+=("$pkg:arm64"); else specs+=("$pkg:all"); fi
  done
  specs+=("$kernel:arm64")
  if ! (cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root "${specs[@]}" >/dev/null 2>&1); then
    for pkg in "${specs[@]}"; do  # name the package that failed
      (cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root "$pkg" >/dev/null 2>&1) \
        || die "cannot fetch Debian package $pkg (apt-get download $pkg)"
    done
  fi
  printf '%s\n' "$kernel" > "$dir/KERNEL"
  printf '%s\n' "${packages[@]}" > "$dir/PACKAGES"
  touch "$dir/.complete"
}

# Runtime dependencies of sectormon as pyproject.toml states them, one requirement per line.
runtime_requirements() {
  "$HOST_PY" - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
EOF
}

fetch_wheels() {
  local dir=$CACHE/wheels
  local wanted
  wanted=$(runtime_requirements)
  [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$wanted" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  DOWNLOADED=1
  say "downloading cp311 aarch64 wheels of $(echo "$wanted" | tr '\n' ' ')into $dir"
  local req
  while IFS= read -r req; do
    "$HOST_PY" -m pip download -q --disable-pip-version-check --only-binary=:all: \
      --platform manylinux2014_aarch64 --python-version 3.11 --implementation cp -d "$dir" "$req" \
      >"$dir/pip.log" 2>&1 || { cat "$dir/pip.log" >&2; die "cannot fetch the aarch64 wheel of $req (PyPI)"; }
  done <<< "$wanted"
  rm -f "$dir/pip.log"
  echo "$wanted" > "$dir/.complete"
}

# A directory tree as a gzip'ed newc cpio: the format the kernel unpacks as its initramfs.
pack() {
  (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$2"
}

# The unpacked guest root without sectormon, as a gzip'ed newc cpio; rebuilt when the downloads change.
build_base() {
  local stamp=$CACHE/base.stamp
  local want
  want=$(cat "$CACHE/debs/KERNEL" "$CACHE/debs/PACKAGES" "$CACHE/wheels/.complete")
  [ -f "$CACHE/base.cpio.gz" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  say "building the guest root from the cached packages"
  local root=$CACHE/root
  rm -rf "$root" "$CACHE/kernel" && mkdir -p "$root" "$CACHE/kernel"
  local deb
  for deb in "$CACHE"/debs/*.deb; do
    case $(basename "$deb") in
      linux-image-*) dpkg-deb -x "$deb" "$CACHE/kernel" ;;
      *) dpkg-deb -x "$deb" "$root" ;;
    esac
  done
  cp "$CACHE"/kernel/boot/vmlinuz-* "$CACHE/vmlinuz"
  rm -rf "$CACHE/kernel"
  rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bug,bash-completion,zsh,perl5} \
    "$root"/usr/lib/python3.11/{test,idlelib,tkinter,ensurepip,lib2to3,turtledemo}
  local site=$root/usr/local/lib/python3.11/dist-packages
  mkdir -p "$site"
  "$HOST_PY" - "$site" "$CACHE"/wheels/*.whl <<'EOF'
import sys, zipfile
for wheel in sys.argv[2:]:
    zipfile.ZipFile(wheel).extractall(sys.argv[1])
EOF
  pack "$root" "$CACHE/base.cpio.gz"
  rm -rf "$root"
  echo "$want" > "$stamp"
}

# This working tree's sectormon, the guest checks and /init, appended to the base as a second cpio.
build_overlay() {
  local out=$1 over
  over=$(mktemp -d)
  mkdir -p "$over/usr/local/lib/python3.11/dist-packages" "$over/usr/local/bin" "$over/opt/a64fx"
  (cd "$REPO" && tar --exclude=__pycache__ --exclude='*.pyc' --exclude='*.so' -cf - sectormon) \
    | tar -xf - -C "$over/usr/local/lib/python3.11/dist-packages"
  printf '#!/usr/bin/python3\nimport sys\nfrom sectormon.cli import main\nsys.exit(main())\n' \
    > "$over/usr/local/bin/sectormon"
  chmod 755 "$over/usr/local/bin/sectormon"
  install -m 755 "$REPO/scripts/a64fx/init" "$over/init"
  install -m 644 "$REPO/scripts/a64fx/guest_checks.py" "$over/opt/a64fx/guest_checks.py"
  # What the host's simulator (its compiled core) gives for the guest's sim check to reproduce.
  if [ -x "$REPO/.venv/bin/sectormon" ]; then
    "$REPO/.venv/bin/python" "$REPO/scripts/a64fx/guest_checks.py" --sim-reference \
      > "$over/opt/a64fx/sim_reference.json" || die "the host's sectormon sim failed (see above)"
  fi
  pack "$over" "$out"
  rm -rf "$over"
}

boot() {
  local initrd=$1 log=$2
  say "booting QEMU -cpu a64fx -smp $SMP -icount shift=$ICOUNT_SHIFT (at most ${GUEST_TIMEOUT} s)"
  # gic-version=3: the A64FX model advertises the GICv3 system registers, which the kernel then uses.
  local qemu=0
  timeout --kill-after=10 "$GUEST_TIMEOUT" qemu-system-aarch64 \
    -M virt,gic-version=3 -cpu a64fx -smp "$SMP" -m "$MEMORY" -icount "shift=$ICOUNT_SHIFT" \
    -display none -monitor none -serial stdio -nic none -no-reboot \
    -kernel "$CACHE/vmlinuz" -initrd "$initrd" \
    -append "console=ttyAMA0 panic=-1 loglevel=4 rdinit=/init sectormon.icount_shift=$ICOUNT_SHIFT" \
    </dev/null 2>&1 | tee "$log" | sed -u -n 's/^@@ /  guest: /p' >&2 || qemu=${PIPESTATUS[0]}
  case $qemu in
    0) ;;
    124 | 137) die "the guest did not power off within ${GUEST_TIMEOUT} s (console: $log)" ;;
    *) say "qemu-system-aarch64 exited with status $qemu" ;;
  esac
}

main() {
  local start=$SECONDS
  host_tools
  mkdir -p "$CACHE"
  # One run at a time per cache: a second one waits instead of rebuilding files the first is using
  # (and QEMU needs a whole core).
  exec 9>"$CACHE/.lock"
  flock 9
  HOST_PY=$(host_python)
  [ -f "$CACHE/debs/.complete" ] \
    || say "first run on this machine: downloading the guest's packages into $CACHE (once)"
  fetch_debs
  fetch_wheels
  [ "$DOWNLOADED" = 1 ] || say "using the cached Debian packages and wheels in $CACHE (no download)"
  build_base
  local run=$CACHE/run
  mkdir -p "$run"
  build_overlay "$run/overlay.cpio.gz"
  cat "$CACHE/base.cpio.gz" "$run/overlay.cpio.gz" > "$run/initrd.cpio.gz"
  local boot_start=$SECONDS
  boot "$run/initrd.cpio.gz" "$run/console.log"
  say "the guest ran for $((SECONDS - boot_start)) s, $((SECONDS - start)) s in all"
  say "console: $run/console.log"
  "$HOST_PY" "$REPO/scripts/a64fx/read_console.py" "$run/console.log"
}

main "$@"
