# Sourced by scripts/setup.sh and scripts/test_aarch64.sh.
#   apt_install LABEL PACKAGE...
# installs those of the Debian packages that are not installed yet, with
# apt-get as root or through sudo; LABEL starts its message.

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    local label=$1 missing="" p
    shift
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    echo "$label: installing Debian packages:$missing"
    sudo_ apt-get update -q
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}
