#!/usr/bin/env bash
# Add Hardware Advisor to the desktop's application menu: the .desktop entry, the AppStream metainfo and
# the icon in every size, under PREFIX/share (default ~/.local, the current user only).
#
#   install-desktop-entry.sh [--prefix DIR] [--exec PROGRAM] [--uninstall]
#
# Works from the repository (packaging/linux/) and from the frozen app (dist/advisor/linux/, where
# build_frozen.sh puts it). PROGRAM defaults to the frozen app's advisor-gui beside this folder, else the
# advisor-gui on PATH (pip install hardware-advisor).
set -euo pipefail

APP_ID=org.hardwareadvisor.HardwareAdvisor
here=$(cd "$(dirname "$0")" && pwd)
prefix=${XDG_DATA_HOME:+${XDG_DATA_HOME%/share}}
prefix=${prefix:-$HOME/.local}
program="" uninstall=0
while (( $# )); do
    case $1 in
        --prefix) prefix=$2; shift ;;
        --exec) program=$2; shift ;;
        --uninstall) uninstall=1 ;;
        *) echo "usage: $0 [--prefix DIR] [--exec PROGRAM] [--uninstall]" >&2; exit 2 ;;
    esac
    shift
done
share=$prefix/share
sizes=(16 24 32 48 64 128 256 512)

if (( uninstall )); then
    rm -f "$share/applications/$APP_ID.desktop" "$share/metainfo/$APP_ID.metainfo.xml" \
          "$share/icons/hicolor/scalable/apps/$APP_ID.svg"
    for s in "${sizes[@]}"; do rm -f "$share/icons/hicolor/${s}x${s}/apps/$APP_ID.png"; done
    echo "removed $APP_ID from $share"
    exit 0
fi

icons=""
for dir in "$here/../../resources/icons" "$here/../_internal/advisor/resources/icons"; do
    [[ -f $dir/advisor.svg ]] && { icons=$(cd "$dir" && pwd); break; }
done
[[ -n $icons ]] || { echo "error: cannot find the icons (advisor.svg) next to $here" >&2; exit 1; }

if [[ -z $program ]]; then
    if [[ -x $here/../advisor-gui ]]; then program=$(cd "$here/.." && pwd)/advisor-gui
    elif command -v advisor-gui >/dev/null; then program=$(command -v advisor-gui)
    else echo "error: advisor-gui not found; pass --exec PROGRAM" >&2; exit 1
    fi
fi

exec_line=$program
[[ $program == *" "* ]] && exec_line="\"$program\""  # the desktop entry spec quotes arguments with spaces

install -d "$share/applications" "$share/metainfo" "$share/icons/hicolor/scalable/apps"
sed -e "s|^Exec=.*|Exec=$exec_line|" -e "s|^TryExec=.*|TryExec=$program|" \
    "$here/$APP_ID.desktop" > "$share/applications/$APP_ID.desktop"
install -m 644 "$here/$APP_ID.metainfo.xml" "$share/metainfo/"
install -m 644 "$icons/advisor.svg" "$share/icons/hicolor/scalable/apps/$APP_ID.svg"
for s in "${sizes[@]}"; do
    install -D -m 644 "$icons/advisor-$s.png" "$share/icons/hicolor/${s}x${s}/apps/$APP_ID.png"
done
command -v update-desktop-database >/dev/null && update-desktop-database -q "$share/applications" || true
command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$share/icons/hicolor" || true
echo "installed $APP_ID into $share (runs $program)"
