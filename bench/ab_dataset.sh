#!/bin/bash
# `report DS` and `analyze DS --format csv` of a batch dataset, base tree vs this one, in fresh processes that
# alternate (GNU time: wall, user, system, peak RSS), then the outputs compared byte for byte (the CSVs, every PNG,
# report.html). Run it with PYTHONDONTWRITEBYTECODE unset so that both trees' bytecode is cached after round 1.
# usage: [KEEP=1] bench/ab_dataset.sh DATASET BASE_SRC [ROUNDS]   (e.g. a dataset kept by bench_dataset.py --keep;
# KEEP=1 leaves the outputs in the folder it prints, else they are removed: ~2 GB a run filled /tmp once)
DS=${1:?dataset folder}; BASE=${2:?src folder of the base tree}; N=${3:-3}
THIS=$(cd "$(dirname "$0")/.." && pwd)/src
PY=${PY:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
out=$(mktemp -d)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq $N); do
  for t in base this; do
    src=$BASE; [ $t = this ] && src=$THIS
    PYTHONPATH=$src /usr/bin/time -o $out/tr -f '%e %U %S %MkB' $PY -m roofline report $DS -o $out/rep-$t >/dev/null 2>&1
    PYTHONPATH=$src /usr/bin/time -o $out/ta -f '%e %U %S %MkB' $PY -m roofline analyze $DS --format csv >$out/ana-$t.csv 2>/dev/null
    r=$(tail -1 $out/tr); a=$(tail -1 $out/ta)
    echo "round $i $t report(wall user sys) $r | analyze-csv $a | load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
cmp $out/ana-base.csv $out/ana-this.csv && echo "analyze csv: identical"
for f in $out/rep-base/*.png; do cmp -s $f $out/rep-this/$(basename $f) || echo "DIFF $(basename $f)"; done
echo "pngs compared: $(ls $out/rep-base/*.png | wc -l) vs $(ls $out/rep-this/*.png | wc -l)"
diff <(sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.+-]+//g' $out/rep-base/report.html) <(sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.+-]+//g' $out/rep-this/report.html) >/dev/null && echo "report.html: identical (timestamps aside)" || echo "report.html DIFFERS"
if [ -n "$KEEP" ]; then echo "out: $out"; else rm -rf "$out"; echo "outputs removed (~2 GB a run for 500 inputs; KEEP=1 keeps them)"; fi
