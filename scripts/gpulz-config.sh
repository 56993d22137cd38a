#!/usr/bin/env bash
# A GPULZ config on stdout: dual-quant Lorenzo -> GPULZ on the u16 codes (configs/gpulz.json's
# graph) with the stage's parameters given, for the scripts that benchmark its settings.
#   bash scripts/gpulz-config.sh CHUNK WINDOW SYMBOL [OFFSET_BITS]   (SYMBOL: 1, 2, 4 or auto)
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: gpulz-config.sh CHUNK WINDOW SYMBOL [OFFSET_BITS]" >&2; exit 2; }
symbol=$3
[[ $symbol =~ ^[0-9]+$ ]] || symbol="\"$symbol\""
offset_bits=
[ $# -lt 4 ] || offset_bits=", \"offset_bits\": $4"
cat <<JSON
{ "name": "gpulz-$1-$2-$3${4:+-$4}",
  "stages": [ { "id": "predict", "type": "lorenzo", "inputs": { "field": "input" } },
              { "id": "lz", "type": "gpulz", "inputs": { "in": "predict.codes" },
                "params": { "chunk": $1, "window": $2, "symbol": $symbol$offset_bits } } ],
  "store": [ "lz.out", "predict.outliers" ] }
JSON
