#!/bin/sh
# Generates the manual pages of batchpilot and batchpilot-bench from their
# own --help and --version (help2man), so the pages cannot drift from the
# programs. Run by the build (cmake/packaging.cmake, target
# batchpilot_manpages):
#
#   make-manpages.sh OUTDIR INCLUDEDIR PROGRAM...
#
# For each PROGRAM: OUTDIR/NAME.1 and OUTDIR/NAME.1.gz (gzip -9n, as Debian
# wants). INCLUDEDIR/NAME.h2m adds the hand-written sections (description,
# files, examples, see also). The commands (batchpilot) and stages
# (batchpilot-bench) listed in the --help output get a section each when
# `PROGRAM WORD --help` prints their own usage and options.
set -eu

out=$1
inc=$2
shift 2
mkdir -p "$out"

# Prints the words under the heading of `$1 --help` that starts with $2 (any
# case) and ends in ':'. The same rule as packaging/completion/batchpilot.
section_words() {
    LC_ALL=C timeout 60 "$1" --help 2>/dev/null | awk -v h="$2" '
        tolower($0) ~ "^" h ".*:[[:space:]]*$" { on = 1; next }
        on && /^  [a-z][a-z0-9-]*([[:space:]]|$)/ { print $1; next }
        on && /^[^[:space:]]/ { on = 0 }'
}

# Turns one command's --help ("Usage: PROG WORD ...", summary, paragraphs,
# "Options:" with "  --opt VALUE   text" lines) into roff for a help2man
# include file; stops at a "Common options:" heading (the page lists those
# once, under OPTIONS).
command_roff() {
    awk '
        function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
        function safe(s) { return (s ~ /^[.'"'"']/ ? "\\&" : "") s } # a leading . or '"'"' would be a request
        function flush() { if (opt != "") { print ".TP"; print opt; print safe(esc(text)); opt = ""; text = "" } }
        NR == 1 { sub(/^Usage: */, ""); print ".SS \"" esc($0) "\""; next }
        /^[Cc]ommon options:/ { flush(); exit }
        /^[A-Za-z][A-Za-z ]*:[[:space:]]*$/ { flush(); inopts = 1; next }
        /^[[:space:]]*$/ { flush(); if (!inopts) print ".PP"; next }
        inopts && /^  +-/ {
            flush()
            line = $0; sub(/^ +/, "", line)
            split(line, parts, /  +/)
            head = parts[1]; text = substr(line, length(head) + 1); sub(/^ +/, "", text)
            n = split(head, w, " ")
            opt = "\\fB" esc(w[1]) "\\fR"
            for (i = 2; i <= n; i++) opt = opt " \\fI" esc(w[i]) "\\fR"
            next
        }
        inopts && opt != "" { t = $0; sub(/^ +/, "", t); text = text (text == "" ? "" : " ") t; next }
        { t = $0; sub(/^ +/, "", t); if (t ~ /^[.'"'"']/) t = "\\&" t; print esc(t) }
        END { flush() }'
}

for prog in "$@"; do
    name=$(basename "$prog")
    case $name in
    batchpilot)
        desc="live batching console for transformer inference"
        heading=commands
        title="COMMANDS IN DETAIL"
        ;;
    batchpilot-bench)
        desc="benchmarks of the BatchPilot engine"
        heading=stages
        title="STAGES IN DETAIL"
        ;;
    *)
        echo "make-manpages.sh: unknown program $prog" >&2
        exit 2
        ;;
    esac
    top=$(LC_ALL=C timeout 60 "$prog" --help 2>&1)
    details="$out/$name.details.h2m"
    : >"$details"
    first=1
    for word in $(section_words "$prog" "$heading"); do
        help=$(LC_ALL=C timeout 60 "$prog" "$word" --help 2>/dev/null) || continue
        [ "$help" != "$top" ] || continue # no help of its own (yet): nothing to add
        case $help in "Usage: $name $word"*) ;; *) continue ;; esac
        if [ $first = 1 ]; then
            printf '[%s]\n' "$title" >>"$details"
            first=0
        fi
        printf '%s\n' "$help" | command_roff >>"$details"
    done
    set -- --include="$inc/$name.h2m"
    [ ! -s "$details" ] || set -- "$@" --include="$details"
    LC_ALL=C help2man --no-info --no-discard-stderr --section=1 --source="BatchPilot" \
        --manual="BatchPilot manual" --name="$desc" "$@" --output="$out/$name.1" "$prog"
    gzip -9n -c "$out/$name.1" >"$out/$name.1.gz"
done
