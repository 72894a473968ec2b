#!/bin/sh
# Builds one libFuzzer target with Debian's clang (ASan + UBSan) and runs it for a bounded time,
# seeded with the real captured output under tests/fixtures. Usage: run.sh TARGET [SECONDS]
# (FUZZ_DIR: where binaries and the working corpus go; default a folder under /tmp).
# A crash, a sanitizer report or an uncaught exception fails the test; libFuzzer leaves the
# input that did it (crash-*) in FUZZ_DIR.
set -eu
target=$1
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${FUZZ_DIR:-/tmp/autodriver-fuzz-$(id -u)}
mkdir -p "$out"
CXX=${FUZZ_CXX:-}
[ -n "$CXX" ] || for c in clang++ clang++-16 clang++-15 clang++-14; do command -v "$c" > /dev/null 2>&1 && { CXX=$c; break; }; done
[ -n "$CXX" ] || { echo "run.sh: no clang++ (./setup.sh installs clang)" >&2; exit 1; }

case "$target" in
  build_output) sources="src/autodriver/gate/gcc_parser.cpp src/autodriver/core/diagnostic.cpp src/autodriver/util/strings.cpp"
                seeds="tests/fixtures/gcc tests/fixtures/modpost tests/fixtures/sparse" ;;
  console)      sources="src/autodriver/gate/console_parser.cpp src/autodriver/util/strings.cpp"
                seeds="tests/fixtures/console" ;;
  csrc)         sources="src/autodriver/csrc/tokens.cpp src/autodriver/csrc/scan.cpp"
                seeds="tests/fixtures/drivers examples" ;;
  crash)        sources="src/autodriver/crash/report.cpp"
                seeds="tests/fixtures/crash tests/fixtures/console" ;;
  json)         sources="src/autodriver/core/diagnostic.cpp src/autodriver/util/strings.cpp"
                seeds="tests/fixtures/kb" ;;
  llm)          sources="src/autodriver/llm/protocol.cpp src/autodriver/llm/answer_parse.cpp src/autodriver/util/strings.cpp src/autodriver/util/error.cpp"
                seeds="tests/fixtures/llm" ;;
  *) echo "run.sh: unknown target '$target' (build_output, console, csrc, crash, json, llm)" >&2; exit 2 ;;
esac

bin="$out/fuzz_$target"
# Rebuilt when any of its sources is newer than the binary.
stale=1
if [ -x "$bin" ]; then
  stale=0
  for f in "tests/fuzz/fuzz_$target.cpp" $sources; do [ "$src/$f" -nt "$bin" ] && stale=1; done
  for h in "$src"/src/autodriver/*/*.hpp; do [ "$h" -nt "$bin" ] && stale=1; done
fi
if [ $stale = 1 ]; then
  (cd "$src" && "$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
     -Isrc "tests/fuzz/fuzz_$target.cpp" $sources -lfmt -o "$bin.tmp") && mv "$bin.tmp" "$bin"
fi

# Seeds: every regular file under the seed folders, copied flat (libFuzzer reads folders).
corpus="$out/corpus_$target"
rm -rf "$corpus"
mkdir -p "$corpus"
i=0
for d in $seeds; do
  find "$src/$d" -type f -size -256k | while read -r f; do i=$((i + 1)); cp "$f" "$corpus/$(echo "$d" | tr / _)-$i-$(basename "$f")"; done
done
cd "$out"
# Inputs up to 16 KiB: long enough for a whole oops or a file's diagnostics, short enough for the
# regex-driven parsers to run hundreds of inputs in a CI minute.
exec "$bin" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus"
