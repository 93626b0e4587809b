# Helpers shared by benches/instructions.sh and tests/benches/code_mode_instructions.sh: sourced,
# not run.

# count_instructions BIN ROW_VAR ROW COUNT_VAR COUNT: the instructions of one run of BIN, with
# ROW_VAR=ROW and COUNT_VAR=COUNT in its environment, counted by valgrind (cachegrind without
# cache simulation, every thread).
count_instructions() {
    local bin=$1 row_var=$2 row=$3 count_var=$4 count=$5 log
    log=$(mktemp)
    if ! env "$row_var=$row" "$count_var=$count" valgrind --tool=cachegrind --cache-sim=no \
        --cachegrind-out-file=/dev/null "$bin" >/dev/null 2>"$log"; then
        echo "row $row failed under valgrind:" >&2
        cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    sed -n 's/^==[0-9]*== I *refs: *//p' "$log" | tr -d ,
    rm -f "$log"
}

# bench_executable NAME: the executable of the bench target NAME, from the JSON messages of a
# `cargo bench --no-run --message-format=json` on standard input.
bench_executable() {
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") == "compiler-artifact" and message.get("executable") \
            and message["target"]["name"] == sys.argv[1]:
        print(message["executable"])
' "$1"
}
