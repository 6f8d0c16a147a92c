#!/usr/bin/env bash
# The subcommands of batchpilot and the stages of batchpilot-bench are named
# the same by: the programs' --help (the source of truth: the commands
# registry), the manual pages generated from it (the roff source in MANDIR),
# the bash completion (run as bash runs it), and the documentation (each
# `batchpilot NAME` usage in docs/*.md and README.md). Also one version
# everywhere: --version, the Debian changelog, the AppStream release.
#
#   check_cli_names.sh BATCHPILOT BATCHPILOT_BENCH MANDIR SOURCE_DIR VERSION
set -uo pipefail

bp=$1
bench=$2
mandir=$3
src=$4
version=$5
failures=0

# Words listed under the heading of `PROGRAM --help` that starts with WORD
# (any case) and ends in ':' -- the rule the completion and the man page
# generator use.
help_section() {
    LC_ALL=C "$1" --help 2>/dev/null | awk -v h="$2" '
        tolower($0) ~ "^" h ".*:[[:space:]]*$" { on = 1; next }
        on && /^  [a-z][a-z0-9-]*([[:space:]]|$)/ { print $1; next }
        on && /^[^[:space:]]/ { on = 0 }' | sort -u
}

# The .TP entries of the man page section (.SH/.SS) whose title is WORD,
# optionally followed by "(...)" or ":" -- the list help2man made of it.
man_section() {
    awk -v h="$2" '
        /^\.S[HS] / { t = tolower($0); sub(/^\.s[hs] +"?/, "", t); on = (t ~ "^" h "[[:space:]]*(\\(|:|\"|$)"); next }
        on && prev == ".TP" { n = $0; gsub(/\\-/, "-", n); gsub(/\\f[BIRP]/, "", n); split(n, w, " "); print w[1] }
        { prev = $0 }' "$1" | sort -u
}

# The names of the per-command sections ("batchpilot NAME ...") the man page
# generator adds when the commands print their own --help.
man_details() {
    awk -v p="$2" '
        /^\.SH / { on = ($0 ~ /IN DETAIL/); next }
        on && /^\.SS / { t = $0; gsub(/\\-/, "-", t); sub(/^\.SS +"?/, "", t); split(t, w, " "); if (w[1] == p) print w[2] }' \
        "$1" | sort -u
}

# What bash offers for "PROGRAM WORDS..." (the last word is the one being
# completed; none: "PROGRAM ") with the completion script, as bash runs it.
# completion_words PROGRAM FUNCTION [WORDS...]
completion_words() {
    local dir
    dir=$(cd "$(dirname "$1")" && pwd)
    PATH="$dir:$PATH" bash -c '
        source /usr/share/bash-completion/bash_completion
        source "$1/packaging/completion/batchpilot"
        fn=$2; shift 2
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        "$fn"
        printf "%s\n" "${COMPREPLY[@]}"' _ "$src" "$2" "$(basename "$1")" "${@:3}" | sort -u
}

# The --options `PROGRAM [WORD] --help` prints.
help_options() {
    LC_ALL=C "$@" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

docs_names() {
    grep -ohE "(^|\\$ |\`)$1 [a-z][a-z0-9-]*" "$src"/docs/*.md "$src"/README.md | sed -E "s/.*$1 //" | sort -u
}

same() { # LABEL EXPECTED ACTUAL
    if [[ "$2" == "$3" ]]; then
        echo "ok: $1: $(echo $3)"
    else
        echo "FAILED: $1"
        diff <(echo "$2") <(echo "$3") | sed 's/^/    /'
        failures=$((failures + 1))
    fi
}

check_program() { # PROGRAM HEADING COMPLETION_FUNCTION MANPAGE
    local prog=$1 heading=$2 fn=$3 page=$4 name
    name=$(basename "$prog")
    local truth
    truth=$(help_section "$prog" "$heading")
    if [[ -z "$truth" ]]; then
        echo "FAILED: $name --help lists no $heading"
        failures=$((failures + 1))
        return
    fi
    echo "$name --help lists these $heading: $(echo $truth)"
    same "$name.1 ($heading section)" "$truth" "$(man_section "$page" "$heading")"
    local details
    details=$(man_details "$page" "$name")
    [[ -z "$details" ]] || same "$name.1 (a section per ${heading%s})" "$truth" "$details"
    same "bash completion of '$name '" "$truth" "$(completion_words "$prog" "$fn" "")"
    # Options: what --help prints, for the program and for its first command.
    local first=${truth%%$'\n'*}
    same "bash completion of '$name --'" "$(help_options "$prog")" "$(completion_words "$prog" "$fn" --)"
    same "bash completion of '$name $first --'" "$(help_options "$prog" "$first")" \
        "$(completion_words "$prog" "$fn" "$first" --)"
    same "docs/*.md and README.md ($name NAME)" "$truth" "$(docs_names "$name")"
}

[[ -f /usr/share/bash-completion/bash_completion ]] || { echo "FAILED: bash-completion is not installed"; exit 1; }
check_program "$bp" commands _batchpilot "$mandir/batchpilot.1"
check_program "$bench" stages _batchpilot_bench "$mandir/batchpilot-bench.1"

# One version.
same "batchpilot --version" "batchpilot $version" "$("$bp" --version)"
same "batchpilot-bench --version" "batchpilot-bench $version" "$("$bench" --version)"
same "packaging/debian/changelog" "$version" "$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)"
same "AppStream release" "$version" \
    "$(grep -oE '<release version="[^"]+"' "$src/packaging/io.batchpilot.BatchPilot.metainfo.xml" | head -1 | cut -d'"' -f2)"

if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all names agree"
