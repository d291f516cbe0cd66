#!/usr/bin/env bash
# Build the frozen one-folder app with PyInstaller into dist/advisor/, then smoke-test it.
#
#   packaging/build_frozen.sh            build, then run tests/packaging/test_frozen.py against the build
#   packaging/build_frozen.sh --clean    rebuild from scratch (drops PyInstaller's analysis cache)
#   packaging/build_frozen.sh --no-test  build only
#   packaging/build_frozen.sh --archive  also pack dist/hardware-advisor-<version>-linux-<arch>.tar.gz to ship
#
# Needs PyInstaller in the Python environment:  .venv/bin/pip install -e '.[freeze]'
# PYTHON picks the interpreter (default .venv/bin/python); ADVISOR_FREEZE_TORCH=1 bundles torch.
# The result runs on machines with the same or a newer glibc than the build machine.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
clean=() run_tests=1 archive=0
for arg in "$@"; do
    case $arg in
        --clean) clean=(--clean) ;;
        --no-test) run_tests=0 ;;
        --archive) archive=1 ;;
        *) echo "usage: $0 [--clean] [--no-test] [--archive]" >&2; exit 2 ;;
    esac
done

if ! "$PYTHON" -c "import PyInstaller" 2>/dev/null; then
    echo "PyInstaller is not installed for $PYTHON: run  $PYTHON -m pip install -e '.[freeze]'" >&2
    exit 2
fi

# Qt's X11 platform plugin needs a few xcb libraries that minimal systems lack; PyInstaller can only bundle
# what it finds here, so without them the app would open no window on desktops that miss them too.
qt=$("$PYTHON" -c "import PySide6, pathlib; print(pathlib.Path(PySide6.__file__).parent / 'Qt')")
if ldd "$qt/plugins/platforms/libqxcb.so" 2>/dev/null | grep -q 'not found'; then
    echo "warning: Qt's xcb plugin misses libraries here, so the build will not bundle them:" >&2
    ldd "$qt/plugins/platforms/libqxcb.so" | grep 'not found' >&2
    echo "  on Debian/Ubuntu: apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0" >&2
fi

start=$(date +%s)
"$PYTHON" -m PyInstaller --noconfirm "${clean[@]}" --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/advisor.spec
app=dist/advisor/advisor
echo "built $app in $(( $(date +%s) - start )) s; folder size $(du -sh dist/advisor | cut -f1)"
"$app" --version

if [[ $run_tests == 1 ]]; then
    ADVISOR_FROZEN_APP="$PWD/$app" "$PYTHON" -m pytest -q -p no:cacheprovider -rs tests/packaging/test_frozen.py
fi

if [[ $archive == 1 ]]; then
    version=$("$app" --version | cut -d' ' -f2)
    tarball=dist/hardware-advisor-$version-$(uname -s | tr A-Z a-z)-$(uname -m).tar.gz
    tar -C dist -czf "$tarball" advisor
    echo "packed $tarball ($(du -h "$tarball" | cut -f1))"
fi
